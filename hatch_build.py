"""The wheel's build hook: compile prime_rl_dynamo/_speedups.c when a C compiler is at hand.

The extension is an accelerator, never a requirement: without a compiler (or with
``PRIME_RL_DYNAMO_PURE_PYTHON=1`` set at build time) the wheel is pure Python and validates the
same bodies with the same verdicts, at the price docs/bench.md measures. An editable install
(``pip install -e .``, what ``make setup`` runs) puts the module next to its source.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("prime_rl_dynamo") / "_speedups.c"


def compile_speedups(root: Path, out: Path) -> str | None:
    """Compile the extension to ``out``; None on success, else why it was not built."""
    if os.environ.get("PRIME_RL_DYNAMO_PURE_PYTHON"):
        return "PRIME_RL_DYNAMO_PURE_PYTHON is set"
    cc = shlex.split(sysconfig.get_config_var("CC") or "cc")
    include = sysconfig.get_paths()["include"]
    command = [*cc, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-std=c11",
               f"-I{include}", str(root / SOURCE), "-o", str(out)]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{command[0]} did not run: {exc}"
    if done.returncode:
        return f"{' '.join(command)} failed:\n{done.stderr.strip()}"
    return None


class SpeedupsBuildHook(BuildHookInterface):
    """Adds the compiled accelerator to the wheel (or the source tree, for an editable install)."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        name = "_speedups" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
        if version == "editable":  # a stale module must not outlive a build that fails
            out = root / "prime_rl_dynamo" / name
            out.unlink(missing_ok=True)
        else:
            out = Path(tempfile.mkdtemp(prefix="prime-rl-dynamo-build-")) / name
        why = compile_speedups(root, out)
        if why is not None:
            print(f"prime-rl-dynamo: building pure Python ({why})", file=sys.stderr)
            return
        if version != "editable":
            build_data["force_include"][str(out)] = f"prime_rl_dynamo/{name}"
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
