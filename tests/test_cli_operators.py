"""Commands operators use, given bad input: one line, exit 2, no traceback (issues 12 and 13).

``serve`` and ``dynamo up`` on bad topologies and ports, fault values that would hang the
listener, ``plan``/``validate`` on /dev/zero, ``plan -W 0``, ``--max-body-bytes 0``, ``plan
--convention nccl`` and ``validate URL`` over the client's bounded same-origin GET.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.errors import ConfigError
from prime_rl_dynamo.suite.reference import start_reference_fleet
from prime_rl_dynamo.suite.reference.faults import parse_fault
from prime_rl_dynamo.topology import topology_from_dict

SAMPLES = Path(__file__).parent / "data" / "samples"
PD = str(SAMPLES / "dynamo-1.6.1-pd-fleet.json")


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


# --- serve and dynamo up: the same exit code on the same bad input ------------------------------


@pytest.mark.parametrize("port", ["65536", "-1", "http"])
def test_serve_refuses_an_impossible_port(capsys: pytest.CaptureFixture[str], port: str) -> None:
    code, _, err = cli(capsys, "serve", "--port", port)
    assert code == 2 and "--port" in err and "0 to 65535" in err


BAD_TOPOLOGIES = {
    "unknown-key.yaml": "engines: [{component: a, bogus: 1}]\n",
    "syntax.yaml": "engines:\n  - component: [a\n",
    "latin1.yaml": b"engines: [{component: caf\xe9}]\n",
    "schedule.yaml": (
        "engines: [{component: a}]\nschedule: [{at: 1, action: leave, engine: dynamo.a#3}]\n"
    ),
    "rank7.yaml": "engines: [{component: a, tp: 2, world_size: 3}]\n",
}


@pytest.mark.parametrize("name", sorted(BAD_TOPOLOGIES))
@pytest.mark.parametrize("command", [["serve"], ["dynamo", "up"]])
def test_a_bad_topology_exits_2_from_serve_and_dynamo_up(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, command: list[str]
) -> None:
    path = tmp_path / name
    data = BAD_TOPOLOGIES[name]
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    code, out, err = cli(capsys, *command, "--topology", str(path))
    assert code == 2
    assert str(path) in err and "<unicode string>" not in err
    assert out == ""


def test_serve_refuses_a_missing_topology_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "serve", "--topology", "/nonexistent/t.yaml")
    assert code == 2 and "cannot read topology file" in one_line(err)


# --- faults that would hang the listener or send a bad header ------------------------------------


@pytest.mark.parametrize(
    "fault", ["latency=inf", "latency=1e308", "latency=nan", "rate-limit=inf", "slow=inf"]
)
def test_fault_values_that_would_hang_are_refused(
    capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    with pytest.raises(ConfigError, match=r"at most|finite"):
        parse_fault(fault)
    code, _, err = cli(capsys, "serve", "--port", "0", "--fault", fault)
    assert code == 2 and fault in one_line(err)


@pytest.mark.integration
@pytest.mark.parametrize(("value", "header"), [("0.5", "1"), ("2", "2"), ("0", "0"), ("2.1", "3")])
def test_rate_limit_sends_a_valid_retry_after(value: str, header: str) -> None:
    with start_reference_fleet(faults=[f"rate-limit={value}"]) as fleet:
        answer = httpx.get(fleet.discovery_url, timeout=10)
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == header


# --- the reference fleet refuses groups it would never list --------------------------------------


def test_a_group_outside_the_namespace_scope_is_refused() -> None:
    topology = topology_from_dict(
        {"namespace": "team", "engines": [{"component": "a"}, {"component": "b", "namespace": "x"}]}
    )
    with pytest.raises(ConfigError) as info:
        start_reference_fleet(topology)
    assert "x.b" in str(info.value) and "'team'" in str(info.value)


@pytest.mark.integration
def test_printed_w_is_what_the_listing_holds(capsys: pytest.CaptureFixture[str]) -> None:
    topology = topology_from_dict(
        {
            "namespace": "team",
            "engines": [
                {"component": "a"},
                {"component": "b", "namespace": "team-x", "world_size": 2},
            ],
        }
    )
    with start_reference_fleet(topology) as fleet:
        listed = fleet.listing()["workers"]
        assert fleet.inference_world_size == sum(w["world_size"] for w in listed) == 3


# --- plan and validate on hostile input ----------------------------------------------------------


@pytest.mark.parametrize("command", [["validate"], ["plan", "-W", "8"]])
def test_dev_zero_is_refused_not_read_forever(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    argv = [*command[:1], "/dev/zero", *command[1:]]
    code, _, err = cli(capsys, *argv)
    assert code == 2 and "larger than" in one_line(err)


@pytest.mark.parametrize("world", ["0", "-3"])
def test_plan_with_a_world_size_below_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], world: str
) -> None:
    code, _, err = cli(capsys, "plan", PD, "-W", world)
    assert code == 2 and "-W" in err


def test_discover_refuses_max_body_bytes_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "discover", "http://127.0.0.1:9", "-W", "8", "--max-body-bytes", "0")
    assert code == 2 and "--max-body-bytes" in err


@pytest.mark.parametrize(
    ("spelling", "canonical"),
    [
        ("nccl", "prime-nccl"),
        ("prime-nccl", "prime-nccl"),
        ("vllm-native-nccl", "vllm-native-nccl"),
    ],
)
def test_plan_accepts_the_config_spellings(
    capsys: pytest.CaptureFixture[str], spelling: str, canonical: str
) -> None:
    code, out, err = cli(capsys, "plan", PD, "-W", "8", "--convention", spelling, "--json")
    assert code == 0, err
    assert json.loads(out)["convention"] == canonical


def test_plan_nccl_is_prime_nccl(capsys: pytest.CaptureFixture[str]) -> None:
    _, a, _ = cli(capsys, "plan", PD, "-W", "8", "--convention", "nccl", "--json")
    _, b, _ = cli(capsys, "plan", PD, "-W", "8", "--convention", "prime-nccl", "--json")
    assert json.loads(a) == json.loads(b)


def test_plan_refuses_filesystem_with_a_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "plan", PD, "-W", "8", "--convention", "filesystem")
    assert code == 2 and "filesystem" in err


# --- validate URL --------------------------------------------------------------------------------


@pytest.mark.integration
def test_validate_fetches_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    with start_reference_fleet() as fleet:
        code, out, err = cli(capsys, "validate", fleet.frontend_url)
        assert code == 0, err
        assert fleet.discovery_url in out and "6 workers" in out
        code, out, _ = cli(capsys, "validate", "--json", fleet.frontend_url + "/v1")
        assert code == 0 and json.loads(out)["file"] == fleet.discovery_url
        fleet.set_faults(["break=WORKER-9"])
        code, out, _ = cli(capsys, "validate", fleet.discovery_url)
        assert code == 1 and "WORKER-9" in out


@pytest.mark.integration
def test_validate_url_refuses_what_the_client_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    with start_reference_fleet(faults=["oversized=20000"]) as fleet:
        code, _, err = cli(capsys, "validate", "--max-body-bytes", "10000", fleet.frontend_url)
        assert code == 2 and "POLL-3" in one_line(err)
    code, _, err = cli(capsys, "validate", "http://127.0.0.1:1")
    assert code == 2 and "http://127.0.0.1:1" in one_line(err)
    code, _, err = cli(capsys, "validate", "http://bob:pw@127.0.0.1:1")
    assert code == 2 and "CRED-1" in one_line(err) and "pw" not in err
