"""Usage errors of the CLI: each subcommand's own short error, a "did you mean", no abbreviations,
and a bad value in two lines instead of the whole usage (exit 2 each)."""

from __future__ import annotations

import argparse

import pytest

from prime_rl_dynamo.cli import SUBCOMMANDS, build_parser, main


def _usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        main(list(argv))
    assert stopped.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


@pytest.mark.parametrize(
    ("argv", "first_line"),
    [
        (
            ["conformance", "--strcit"],
            "prime-rl-dynamo conformance: error: unrecognized arguments: --strcit; "
            "did you mean --strict?",
        ),
        (
            ["conformance", "--junitxml", "r.xml"],
            "prime-rl-dynamo conformance: error: unrecognized arguments: --junitxml; "
            "did you mean --junit-xml?",
        ),
        (
            ["conformance", "--junitxml=r.xml"],
            "prime-rl-dynamo conformance: error: unrecognized arguments: --junitxml=r.xml; "
            "did you mean --junit-xml?",
        ),
        (
            ["conformance", "--seed", "abc"],
            "prime-rl-dynamo conformance: error: argument --seed: invalid int value: 'abc'",
        ),
        (
            ["plan", "-", "-W", "4", "--jsno"],
            "prime-rl-dynamo plan: error: unrecognized arguments: --jsno; did you mean --json?",
        ),
        (
            ["conformanc"],
            "prime-rl-dynamo: error: argument COMMAND: invalid choice: 'conformanc' (choose from "
            f"{', '.join(repr(c) for c in SUBCOMMANDS)}); did you mean conformance?",
        ),
    ],
)
def test_a_typo_gets_the_subcommands_short_error_and_a_suggestion(
    capsys: pytest.CaptureFixture[str], argv: list[str], first_line: str
) -> None:
    err = _usage_error(capsys, *argv)
    lines = err.splitlines()
    assert lines[0] == first_line
    command = first_line.split(": error:")[0]
    assert lines[1:] == [f"  (see {command} --help)"]  # two lines, not a 20-line usage


def test_abbreviations_are_refused_not_guessed(capsys: pytest.CaptureFixture[str]) -> None:
    # --junit used to be taken for --junit-xml without a word
    err = _usage_error(capsys, "conformance", "--junit", "r.xml")
    assert "unrecognized arguments: --junit; did you mean --junit-xml?" in err


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                found += _parsers(sub)
    return found


def test_no_parser_of_the_cli_allows_abbreviations() -> None:
    every = _parsers(build_parser())
    assert len(every) > 10
    assert [p.prog for p in every if p.allow_abbrev] == []


def test_markdown_without_list_is_a_usage_error_not_a_full_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # it used to be ignored, and a whole all-profile run against real Dynamo started
    assert main(["conformance", "--markdown"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "prime-rl-dynamo conformance: --markdown only applies to --list "
        "(conformance --list --markdown prints docs/conformance-matrix.md)"
    ]
