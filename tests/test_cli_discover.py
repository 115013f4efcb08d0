"""``prime-rl-dynamo discover`` and ``prime-rl-dynamo plan``: tables, JSON, exit codes 0/1/2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from prime_rl_dynamo.cli import main
from prime_rl_dynamo.suite.reference import start_reference_fleet
from prime_rl_dynamo.topology import default_topology

SAMPLES = Path(__file__).parent / "data" / "samples"
PD = str(SAMPLES / "dynamo-1.6.1-pd-fleet.json")
MIXED = str(SAMPLES / "dynamo-1.6.1-mixed-fleet.json")


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- plan ---------------------------------------------------------------------------------------


def test_plan_table_from_real_sample(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "plan", PD, "--inference-world-size", "8")
    assert code == 0
    lines = out.splitlines()
    header = ["engine", "admin_base_url", "world_size", "rank_offset", "inference", "ranks"]
    assert lines[0].split() == [*header, "group", "ranks"]
    assert lines[1].startswith("dynamo.decode.rl#") and lines[1].endswith(
        "4           0            [0, 4)           [1, 5)"
    )
    assert lines[2].endswith("[4, 6)           [5, 7)") and lines[3].endswith(
        "[6, 8)           [7, 9)"
    )
    assert "group_world_size 9 (prime-nccl, trainer group rank 0)" in lines[-1]


def test_plan_names_group_and_inference_ranks_for_vllm_native(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # rank_offset 1 beside inference ranks [0, 4) is no off-by-one: the offset is the group rank.
    code, out, _ = cli(
        capsys, "plan", PD, "--inference-world-size", "8", "--convention", "vllm-native-nccl"
    )
    assert code == 0
    first = out.splitlines()[1].split()
    assert first[-5:] == ["1", "[0,", "4)", "[1,", "5)"]


def test_plan_refuses_filesystem_with_the_reason_and_does_not_offer_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as refused:
        main(["plan", PD, "--inference-world-size", "8", "--convention", "filesystem"])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert "'filesystem' weight transfers have no rank plan" in err
    assert "unknown" not in err
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "filesystem" not in capsys.readouterr().out


def test_plan_json_native(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "plan", PD, "-W", "8", "--convention", "vllm-native-nccl", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["group_world_size"] == 9
    assert [e["rank_offset"] for e in data["engines"]] == [1, 5, 7]
    assert [e["ranks"] for e in data["engines"]] == [[0, 4], [4, 6], [6, 8]]
    first = data["engines"][0]
    assert set(first) >= {
        "namespace",
        "component",
        "endpoint",
        "instance_id",
        "admin_base_url",
        "world_size",
    }
    assert first["instance_id"] > 2**53  # kept exact


def test_plan_not_ready_exits_1_with_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "plan", MIXED, "-W", "6")
    assert code == 1 and out == ""
    assert "READY-1: dynamo.broken.rl#9240623910170889651 reports error: engine is dead" in err
    assert "READY-2: dynamo.backend.rl#9240623910170889651 lacks admin_base_url" in err


def test_plan_sum_mismatch_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "plan", PD, "-W", "7")
    assert code == 1
    assert "READY-3: world sizes sum to 8, expected inference_world_size 7" in err


def test_plan_invalid_body_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"protocol_version": 2, "namespace": "dynamo", "workers": []}')
    code, _, err = cli(capsys, "plan", str(bad), "-W", "1")
    assert code == 1 and "BODY-2" in err


def test_plan_native_multi_process_trainer_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(
        capsys,
        "plan",
        PD,
        "-W",
        "8",
        "--convention",
        "vllm-native-nccl",
        "--trainer-world-size",
        "2",
    )
    assert code == 1 and "RANK-4" in err


def test_plan_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "plan", "/nonexistent/body.json", "-W", "8")
    assert code == 2 and "cannot read" in err
    with pytest.raises(SystemExit) as info:
        main(["plan", PD])  # --inference-world-size is required
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["plan", PD, "-W", "8", "--convention", "gloo"])
    assert info.value.code == 2


# --- discover -----------------------------------------------------------------------------------


@pytest.mark.integration
def test_discover_reference_fleet_table_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    model = default_topology().model
    with start_reference_fleet() as fleet:
        args = [
            "discover",
            fleet.frontend_url + "/v1",
            "-W",
            "16",
            "--model",
            model,
            "--poll-interval",
            "0.05",
        ]
        code, out, _ = cli(capsys, *args, "--timeout", "20")
        assert code == 0
        assert out.count("dynamo.prefill.rl#") == 4 and out.count("dynamo.decode.rl#") == 2
        assert "group_world_size 17" in out
        code, out, _ = cli(capsys, *args, "--timeout", "20", "--json", "--convention", "nixl")
        assert code == 0
        data: dict[str, Any] = json.loads(out)
        assert data["url"] == fleet.discovery_url
        assert data["group_world_size"] == 16
        assert [e["rank_offset"] for e in data["engines"]] == [0, 4, 8, 10, 12, 14]
        admin = {e.admin_base_url for e in fleet.engines}
        assert {e["admin_base_url"] for e in data["engines"]} == admin


@pytest.mark.integration
def test_discover_not_ready_by_deadline_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with start_reference_fleet() as fleet:
        code, out, err = cli(
            capsys,
            "discover",
            fleet.frontend_url,
            "-W",
            "17",
            "--timeout",
            "0.5",
            "--poll-interval",
            "0.05",
        )
    assert code == 1 and out == ""
    assert (
        "POLL-5" in err
        and "READY-3: world sizes sum to 16, expected inference_world_size 17" in err
    )


@pytest.mark.integration
def test_discover_fatal_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    with start_reference_fleet(faults=["break=DIALECT-1"]) as fleet:
        code, _, err = cli(capsys, "discover", fleet.frontend_url, "-W", "16", "--timeout", "5")
    assert code == 1 and "refused" in err and "DIALECT-1" in err


def test_discover_bad_url_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "discover", "http://alice:pw@frontend:8001", "-W", "2")
    assert code == 2 and "CRED-1" in err and "pw@" not in err
    code, _, err = cli(capsys, "discover", "frontend:8001", "-W", "2")
    assert code == 2 and "http://" in err
