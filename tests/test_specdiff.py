"""spec diff: every hand-written pair and every known v1 variant classified for clients and for
servers; the working contract checked against the frozen v1 (CI fails on a silent break)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.suite.specdiff import (
    DiffReport,
    diff_documents,
    diff_paths,
    load_acceptances,
    protocol_version_of,
)

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "schema"
FROZEN = SCHEMA / "frozen" / "v1"
V1 = json.loads((FROZEN / "rl-workers.v1.schema.json").read_text("utf-8"))
FRONTEND = json.loads((FROZEN / "openapi" / "rl-frontend.openapi.json").read_text("utf-8"))

A, B = "additive", "breaking"


def _worker(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["$defs"]["worker"]


def _rename_routes(doc: dict[str, Any]) -> None:
    w = _worker(doc)
    w["properties"]["system_routes"] = w["properties"].pop("routes")
    for part in w["allOf"]:
        if part.get("required") == ["routes"]:
            part["required"] = ["system_routes"]


def _null_world_size(doc: dict[str, Any]) -> None:
    _worker(doc)["properties"]["world_size"] = {
        "anyOf": [{"type": "null"}, {"$ref": "#/$defs/worldSize"}]
    }


def _fork(doc: dict[str, Any]) -> None:
    props = _worker(doc)["properties"]
    props.pop("admin_base_url")
    props["weight_transfer_backend"] = {"type": "string", "minLength": 1}


def _smg(doc: dict[str, Any]) -> None:
    doc["required"] = ["protocol_version", "workers", "total"]
    doc["properties"].pop("namespace")
    doc["properties"]["total"] = {"type": "integer", "minimum": 0}
    doc["$defs"]["worker"] = {
        "type": "object",
        "required": ["id", "url", "engine"],
        "properties": {
            "id": {"type": "string"},
            "url": {"type": "string"},
            "engine": {"type": "string"},
            "tp_size": {"type": ["integer", "null"]},
        },
    }


# (name, edit, expected (kind, location, clients, servers) for every change)
CASES: list[tuple[str, Callable[[dict[str, Any]], None], set[tuple[str, str, str, str]]]] = [
    (
        "variant system-routes",
        _rename_routes,
        {("member renamed", "/workers/*/routes", B, B)},
    ),
    (
        "variant null-optionals (world_size: null)",
        _null_world_size,
        {("constraint loosened", "/workers/*/world_size", B, A)},
    ),
    (
        "variant weight-transfer-backend",
        _fork,
        {
            ("member removed", "/workers/*/admin_base_url", B, A),
            ("optional member added", "/workers/*/weight_transfer_backend", A, A),
        },
    ),
    (
        "new optional worker field",
        lambda d: _worker(d)["properties"].update(x_new={"type": "string"}),
        {("optional member added", "/workers/*/x_new", A, A)},
    ),
    (
        "new required top-level field",
        lambda d: (
            d["required"].append("total"),
            d["properties"].update(total={"type": "integer"}),
        ),
        {("required member added", "/total", A, B)},
    ),
    (
        "tightened: model maxLength 512",
        lambda d: d["$defs"]["model"].update(maxLength=512),
        {("constraint tightened", "/workers/*/model", A, B)},
    ),
    (
        "loosened: world_size minimum 0",
        lambda d: d["$defs"]["worldSize"].update(minimum=0),
        {("constraint loosened", "/workers/*/world_size", B, A)},
    ),
    (
        "changed type: instance_id a string",
        lambda d: d["$defs"]["instanceId"].update(type="string"),
        {("constraint changed", "/workers/*/instance_id", B, B)},
    ),
    (
        "changed enum: protocol_version 2",
        lambda d: d["properties"]["protocol_version"].update(const=2),
        {("constraint changed", "/protocol_version", B, B)},
    ),
    (
        "relaxed WORKER-10 (admin_base_url without world_size)",
        lambda d: d["$defs"]["probedWorker"]["then"].update(required=[]),
        {("constraint loosened", "/workers/*", B, A)},
    ),
    (
        "a new transport kind (WORKER-3 is closed)",
        lambda d: (
            d["$defs"]["transport"]["properties"].update(grpc={"$ref": "#/$defs/transportAddress"}),
            d["$defs"]["transport"]["oneOf"].append({"required": ["grpc"]}),
        ),
        {
            ("optional member added", "/workers/*/transport/grpc", A, A),
            ("constraint loosened", "/workers/*/transport", B, A),
        },
    ),
    (
        "required member made optional (routes)",
        lambda d: next(p for p in _worker(d)["allOf"] if p.get("required") == ["routes"]).update(
            required=[]
        ),
        {("member made optional", "/workers/*/routes", B, A)},
    ),
    (
        "routes no longer unique",
        lambda d: d["$defs"]["routes"].pop("uniqueItems"),
        {("constraint loosened", "/workers/*/routes", B, A)},
    ),
    ("only descriptions change", lambda d: _worker(d).update(description="changed"), set()),
]


@pytest.mark.parametrize(("name", "edit", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_pair_is_classified_for_clients_and_servers(
    name: str, edit: Callable[[dict[str, Any]], None], expected: set[tuple[str, str, str, str]]
) -> None:
    new = copy.deepcopy(V1)
    edit(new)
    found = {(c.kind, c.location, c.clients, c.servers) for c in diff_documents("x", V1, new)}
    assert found == expected
    report = DiffReport(1, protocol_version_of(new), diff_documents("x", V1, new))
    assert report.version_must_change == any(B in e[2:] for e in expected)


def test_smg_shape_is_breaking_for_both_parties() -> None:
    new = copy.deepcopy(V1)
    _smg(new)
    changes = diff_documents("x", V1, new)
    kinds = {(c.kind, c.location) for c in changes}
    assert ("member removed", "/namespace") in kinds
    assert ("required member added", "/total") in kinds
    assert ("member removed", "/workers/*/request_plane_url") in kinds
    assert any(c.clients == B for c in changes) and any(c.servers == B for c in changes)


ACCEPTED = FROZEN.parent / "v1-accepted.json"


def test_the_working_contract_keeps_the_frozen_v1() -> None:
    """CI gate: a breaking change to a v1 document without a new protocol_version fails here,
    unless the project accepted it, with its reason, in schema/frozen/v1-accepted.json."""
    report = diff_paths(FROZEN, SCHEMA)
    report.accept(load_acceptances(ACCEPTED))
    assert report.ok, "\n".join(str(c) for c in report.breaking) + str(report.unused_acceptances)
    assert report.old_version == 1


def test_the_gate_bites_without_the_acceptances_and_names_the_tightened_url_rule() -> None:
    report = diff_paths(FROZEN, SCHEMA)
    assert not report.ok
    tightened = [c for c in report.breaking if c.location == "/workers/*/admin_base_url"]
    assert tightened and tightened[0].kind == "constraint tightened"
    assert (tightened[0].clients, tightened[0].servers) == (A, B)
    assert "http://h:abc/" in tightened[0].detail


def test_an_acceptance_matching_nothing_fails_the_gate(tmp_path: Path) -> None:
    stale = tmp_path / "accepted.json"
    entry = {"document": "rl-workers.v1.schema.json", "location": "/nope", "kind": "member removed"}
    stale.write_text(json.dumps({"accepted": [{**entry, "reason": "old"}]}))
    report = diff_paths(FROZEN, SCHEMA)
    report.accept(load_acceptances(ACCEPTED) + load_acceptances(stale))
    assert not report.ok and report.unused_acceptances and "match no change" in report.verdict()
    with pytest.raises(ValueError, match="expected"):
        stale.write_text('{"accepted": [{"document": 1}]}')
        load_acceptances(stale)


def test_frozen_v1_is_the_full_contract() -> None:
    names = {p.name for p in FROZEN.glob("*.json")} | {
        p.name for p in (FROZEN / "openapi").glob("*")
    }
    assert {
        "rl-workers.v1.schema.json",
        "rl-workers-error.v1.schema.json",
        "rl-worker-routes.v1.schema.json",
        "rl-frontend.openapi.json",
        "worker-system.openapi.json",
        "admin.openapi.json",
    } <= names


def test_openapi_operations_parameters_and_statuses() -> None:
    new = copy.deepcopy(FRONTEND)
    op = new["paths"]["/v1/rl/workers"]["get"]
    op.setdefault("parameters", []).append(
        {"name": "wait", "in": "query", "required": False, "schema": {"type": "number"}}
    )
    op["responses"]["304"] = {"description": "not modified"}
    op["responses"]["429"] = {"description": "slow down"}
    new["components"]["schemas"]["RlWorkers.model"]["maxLength"] = 10
    found = {(c.kind, c.clients, c.servers) for c in diff_documents("fe", FRONTEND, new)}
    assert found == {
        ("optional parameter added", A, A),
        ("conditional response added", A, A),
        ("response status added", B, A),
        ("constraint tightened", A, B),
    }
    gone = copy.deepcopy(FRONTEND)
    del gone["paths"]["/v1/rl/workers"]["get"]
    assert [(c.kind, c.clients) for c in diff_documents("fe", FRONTEND, gone)] == [
        ("operation removed", B)
    ]


def _write_contract(root: Path, edit: Callable[[dict[str, Any]], None] | None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    doc = copy.deepcopy(V1)
    if edit is not None:
        edit(doc)
    (root / "rl-workers.v1.schema.json").write_text(json.dumps(doc), "utf-8")
    return root


def test_cli_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _write_contract(tmp_path / "old", None)
    same = _write_contract(tmp_path / "same", lambda d: _worker(d).update(description="x"))
    broken = _write_contract(tmp_path / "broken", _rename_routes)
    bumped = _write_contract(
        tmp_path / "bumped",
        lambda d: (_rename_routes(d), d["properties"]["protocol_version"].update(const=2)),
    )
    assert main(["spec", "diff", str(old), str(same)]) == 0
    assert "no differences" in capsys.readouterr().out
    assert main(["spec", "diff", str(old), str(broken)]) == 1
    out = capsys.readouterr().out
    assert "renamed to 'system_routes'" in out and "it must change (VERSION-1)" in out
    assert main(["spec", "diff", str(old), str(bumped), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["version_must_change"] and data["ok"] and data["new_version"] == 2
    assert main(["spec", "diff", str(old), str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_request_bodies_swap_the_parties() -> None:
    """A request body is written by the client: a new required member breaks old clients."""
    old = json.loads((FROZEN / "openapi" / "admin.openapi.json").read_text("utf-8"))
    tightened = copy.deepcopy(old)
    body = tightened["components"]["schemas"]["UpdateWeights"]
    body["required"].append("version")
    body["properties"]["version"] = {"type": "string"}
    found = {(c.kind, c.clients, c.servers) for c in diff_documents("admin", old, tightened)}
    assert found == {("required member added", B, A)}
    loosened = copy.deepcopy(old)
    loosened["components"]["schemas"]["UpdateWeights"]["properties"]["weight_dir"].pop("minLength")
    found = {(c.kind, c.clients, c.servers) for c in diff_documents("admin", old, loosened)}
    assert found == {("constraint loosened", A, B)}


def test_the_cli_gate_as_make_lint_runs_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "diff", str(FROZEN), str(SCHEMA)]) == 1
    assert "constraint tightened" in capsys.readouterr().out
    assert main(["spec", "diff", str(FROZEN), str(SCHEMA), "--accept", str(ACCEPTED)]) == 0
    out = capsys.readouterr().out
    accepted = json.loads(ACCEPTED.read_text(encoding="utf-8"))["accepted"]
    assert out.count("accepted  ") == len(accepted) and "accepted breaking change(s)" in out


def test_a_tightened_url_rule_says_which_keyword_changed_and_how() -> None:
    """A stricter URL rule (what hardening for hostile input may bring) names the keyword inside
    its conditional wrapper, with the old and the new value, even when no witness decides it."""
    new = copy.deepcopy(V1)
    new["$defs"]["systemUrl"]["pattern"] = V1["$defs"]["systemUrl"]["pattern"].replace(
        "[^/?#:", "[^/?#@:"
    )
    (change,) = diff_documents("x", V1, new)
    assert change.location == "/workers/*/system_url"
    assert "pattern" in change.detail, change.detail
    assert "[^/?#:" in change.detail and "[^/?#@:" in change.detail, change.detail
    assert change.breaking


def test_a_length_cap_on_a_url_is_classified_as_tightened() -> None:
    new = copy.deepcopy(V1)
    new["$defs"]["adminBaseUrl"]["maxLength"] = 2048
    found = {(c.kind, c.location, c.clients, c.servers) for c in diff_documents("x", V1, new)}
    assert found == {("constraint tightened", "/workers/*/admin_base_url", A, B)}
    (change,) = diff_documents("x", V1, new)
    assert "maxLength" in change.detail and "now refuses" in change.detail, change.detail
