#!/usr/bin/env bash
# Create memo's two virtual environments from nothing; a second run reuses them.
#   .venv/        memo, Keras 3 (TensorFlow, JAX, torch backends), tf2onnx, ONNX Runtime, onnx2torch...
#   .venv-mxnet/  MXNet 1.9.1, which needs numpy 1.23.5 and so cannot share .venv
# Each environment is rebuilt only when its requirements change (a hash stamp inside it).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
  || { echo "setup: memo needs Python 3.11 (found $("$PYTHON" --version 2>&1))" >&2; exit 2; }

stamp_of() { cat "$@" | sha256sum | cut -c1-16; }

make_env() {  # make_env DIR STAMP INSTALL-ARGS...
  local dir="$1" stamp="$2"; shift 2
  if [[ -f "$dir/.memo-stamp" && "$(cat "$dir/.memo-stamp")" == "$stamp" ]]; then
    echo "setup: $dir is up to date"; return
  fi
  echo "setup: installing $dir (first run takes several minutes)"
  [[ -x "$dir/bin/python" ]] || "$PYTHON" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --upgrade pip setuptools wheel
  "$dir/bin/python" -m pip install --quiet "$@"
  echo "$stamp" > "$dir/.memo-stamp"
}

make_env .venv "$(stamp_of pyproject.toml)" -e ".[test]"
make_env .venv-mxnet "$(stamp_of requirements-mxnet.txt)" -r requirements-mxnet.txt
# GPU builds, only where the driver shows an NVIDIA GPU (memo's GPU backends: docs/backends.md). torch's PyPI wheel
# for Linux is a CUDA build; JAX needs its CUDA plugin; ONNX Runtime's CUDA provider is the onnxruntime-gpu package.
gpu_reason() {
  [[ "${CUDA_VISIBLE_DEVICES-unset}" == "" || "${CUDA_VISIBLE_DEVICES-}" == "-1" ]] && { echo "CUDA_VISIBLE_DEVICES hides every GPU"; return; }
  compgen -G "/proc/driver/nvidia/gpus/*" >/dev/null && return
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU && return
  echo "no NVIDIA driver or GPU found"
}
why_not_gpu="$(gpu_reason)"
if [[ -n "$why_not_gpu" ]]; then
  echo "setup: GPU backends off: $why_not_gpu (CPU libraries only)"
elif [[ -f .venv/.memo-gpu-stamp && "$(cat .venv/.memo-gpu-stamp)" == "$(stamp_of pyproject.toml)" ]]; then
  echo "setup: GPU builds are up to date"
else
  echo "setup: NVIDIA GPU found: installing the CUDA builds of torch, JAX and ONNX Runtime into .venv"
  if ! .venv/bin/python -c 'import sys, torch; sys.exit(torch.version.cuda is None)' 2>/dev/null; then
    .venv/bin/python -m pip uninstall --quiet -y torch torchvision
    .venv/bin/python -m pip install --quiet --index-url https://pypi.org/simple "torch==2.14.1" "torchvision==0.29.1" \
      || echo "setup: warning: no CUDA build of torch 2.14.1 could be installed: torch's GPU backends will not run" >&2
  fi
  .venv/bin/python -m pip install --quiet "jax[cuda13]==0.10.*" \
    || echo "setup: warning: JAX's CUDA plugin could not be installed: keras-jax-cuda will not run" >&2
  .venv/bin/python -m pip install --quiet "onnxruntime-gpu==1.31.*" \
    || echo "setup: warning: onnxruntime-gpu could not be installed: onnxruntime-cuda will not run" >&2
  stamp_of pyproject.toml > .venv/.memo-gpu-stamp
fi
# Debian packages: headless Chromium drives the HTML report's browser test; torch.compile's inductor backend
# compiles C++ kernels with g++.
apt_install() {  # apt_install COMMAND PACKAGE WHY
  command -v "$1" >/dev/null 2>&1 && return
  if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
    echo "setup: installing Debian's $2 ($3)"
    { [[ -n "${APT_UPDATED:-}" ]] || apt-get update -qq; } && APT_UPDATED=1 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
  else
    echo "setup: warning: $2 is not installed (needs root and apt-get): $3 will not work" >&2
  fi
}
apt_install chromium chromium "the report's browser test"
apt_install g++ g++ "torch.compile's inductor backend"
echo "setup: done (.venv, .venv-mxnet)"
