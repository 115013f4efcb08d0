"""bench.validation measures the validator side by side with json.loads and a plain pydantic
parser (json.loads, strict protocol_version, a model filter); at 1,024 workers the validator must meet the bar (<= 2.0x json.loads,
cheaper than pydantic)."""

from __future__ import annotations

import json

import pytest

from prime_rl_dynamo.validate import validate_body
from tools.bench import validation


def test_make_body_is_a_valid_dynamo_shaped_body() -> None:
    body = validation.make_body(300, seed=1)
    snapshot = validate_body(body)
    assert len(snapshot.workers) == 300
    assert all(w.instance_id >= 2**53 for w in snapshot.workers)
    assert len({w.admin_base_url for w in snapshot.workers}) == 300
    assert validation.make_body(300, seed=1) == body


def test_pydantic_parser_does_a_plain_clients_job() -> None:
    parse = validation.pydantic_parser()
    body = validation.make_body(10)
    workers = parse(body)
    assert [(w.component, w.instance_id) for w in workers] == sorted(
        (w.component, w.instance_id) for w in workers
    )
    doc = json.loads(body)
    doc["protocol_version"] = True
    with pytest.raises(ValueError):
        parse(json.dumps(doc).encode())
    doc = json.loads(body)
    doc["workers"][1]["admin_base_url"] = doc["workers"][0]["admin_base_url"]
    with pytest.raises(ValueError, match="duplicate admin_base_url"):
        parse(json.dumps(doc).encode())


@pytest.mark.slow
def test_measure_reports_summaries_and_ratios() -> None:
    report = validation.measure([1, 8], repetitions=2)
    (one, eight) = report["sizes"]
    assert one["workers"] == 1 and eight["workers"] == 8
    assert "jsonschema (pure Python)" in one["seconds"]
    for name in ("json.loads", "validate_body", "pydantic (original change)"):
        assert eight["seconds"][name]["n"] == 2 and eight["seconds"][name]["median"] > 0
    assert eight["ratio_vs_json_loads"]["validate_body"]["median"] > 0
    assert report["verdict"] == {"ok": False, "checks": []}  # 1024/8192 not measured here
    assert "validate_body" in validation.format_table(report)
    assert report["clock"] == "wall clock"
    cpu = validation.measure([4], repetitions=1, cpu_time=True)
    assert (
        cpu["clock"] == "thread CPU time" and cpu["sizes"][0]["seconds"]["validate_body"]["n"] == 1
    )


def test_hostile_bodies_are_the_size_of_the_valid_one_and_judged_as_intended() -> None:
    from prime_rl_dynamo.validate import check_body

    valid = validation.make_body(64)
    bodies = validation.hostile_bodies(64)
    assert len(bodies) >= 5
    for name, body in bodies.items():
        assert len(valid) / 2 <= len(body) <= 2 * len(valid), name
    assert {v.requirement for v in check_body(bodies["object routes, repeated"])} == {"WORKER-5"}
    assert {v.requirement for v in check_body(bodies["two defects per worker"])} == {
        "WORKER-9",
        "LIST-4",
    }
    # Hostile but valid: unknown members only cost the parse check, they are not refused.
    for name in ("repeated unknown names", "nesting 128 deep", "one huge integer"):
        assert check_body(bodies[name]) == [], name


def test_measure_hostile_reports_the_worst_next_to_the_valid_body() -> None:
    (entry,) = validation.measure_hostile([8], repetitions=1)
    assert entry["workers"] == 8 and entry["worst"] in entry["bodies"]
    assert entry["worst"] != "valid"
    valid = entry["bodies"]["valid"]
    assert valid["per_byte_over_valid"] == pytest.approx(1.0)
    worst = entry["bodies"][entry["worst"]]
    assert worst["us_per_byte"] == max(
        r["us_per_byte"] for r in entry["bodies"].values() if r is not valid
    )
    assert "worst hostile" in validation.format_hostile([entry])


def test_report_tables_show_the_worst_hostile_row_next_to_the_valid_one() -> None:
    from tools.bench.table import hostile_rows

    section = {"hostile": validation.measure_hostile([8], repetitions=1)}
    header, rows = hostile_rows(section)
    assert header[1] == "body" and rows[0][1] == "valid"
    assert rows[1][1].startswith("worst hostile: ")
    assert hostile_rows({}) == (header, [])


def test_measure_reports_every_goal_with_the_defective_bodies_and_strict_pydantic() -> None:
    report = validation.measure([64], repetitions=1)
    (entry,) = report["sizes"]
    for name in (validation.PYDANTIC_STRICT, validation.ONE_DEFECTIVE, validation.ALL_DEFECTIVE,
                 validation.BAD_ADMIN):  # fmt: skip
        assert entry["seconds"][name]["median"] > 0, name
    goals = {g["goal"]: g for g in entry["goals"]}
    assert set(goals) == {goal for goal, _, _, bars in validation.GOALS if 64 in bars}
    for goal in goals.values():
        assert goal["ok"] == (goal["ratio"]["median"] <= goal["bar"])
    assert "goal one defective worker / valid body" in validation.format_table(report)
    parse = validation.strict_pydantic_parser()
    doc = json.loads(validation.make_body(2))
    doc["workers"][0]["instance_id"] = "1"  # strict: no coercion
    with pytest.raises(ValueError):
        parse(json.dumps(doc).encode())


def test_a_partial_run_replaces_its_section_only_and_says_where_it_came_from() -> None:
    from tools.bench.merge import merge_section

    report = {"command": "full", "validation": {"status": "ok", "points": [1]}, "suite": {"x": 1}}
    partial = {"command": "bench --only validation", "machine": {"cpu_count": 2}, "wall_s": 9.0}
    partial["validation"] = {"status": "ok", "points": [2]}
    merged = merge_section(report, partial, "validation")
    assert merged["suite"] == {"x": 1} and merged["command"] == "full"
    assert merged["validation"]["points"] == [2]
    assert merged["validation"]["run"]["command"] == "bench --only validation"
    with pytest.raises(ValueError):
        merge_section(report, {"validation": {"status": "skipped"}}, "validation")


def test_linearity_compares_each_shapes_cost_per_byte_across_sizes() -> None:
    def entry(workers: int, per_byte: dict[str, float]) -> dict[str, object]:
        return {"workers": workers, "bodies": {k: {"us_per_byte": v} for k, v in per_byte.items()}}

    small = entry(64, {"valid": 1.0, "flat": 2.0, "growing": 2.0})
    large = entry(1024, {"valid": 1.1, "flat": 2.2, "growing": 9.0})
    verdicts = {g["shape"]: g for g in validation.linearity([small, large])}
    assert verdicts["flat"]["ok"] and verdicts["flat"]["per_byte_growth"] == pytest.approx(1.1)
    assert not verdicts["growing"]["ok"]  # the counterpart: a cost per byte that grows fails
    assert validation.linearity([small]) == []
