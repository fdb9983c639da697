#!/usr/bin/env bash
# Create memo's two virtual environments from nothing; a second run reuses them.
#   .venv/        memo, Keras 3 (TensorFlow, JAX, torch backends), tf2onnx, ONNX Runtime, onnx2torch...
#   .venv-mxnet/  MXNet 1.9.1, which needs numpy 1.23.5 and so cannot share .venv
#   .venv-next/   the newest code: keras-nightly, tf-nightly-cpu, onnx-weekly and the newest releases elsewhere
#                 (requirements-next.txt); triage reruns a bug there before calling it ready (docs/recheck.md)
# Each environment is rebuilt only when its requirements change (a hash stamp inside it); the development builds in
# .venv-next are refreshed once a day. Everything comes from the package index pip is configured with.
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

# The newest-code environment. The releases' distributions (keras, onnx) that other packages pull in as dependencies
# share an import package with the development builds (keras-nightly, onnx-weekly): the builds must win.
DEV_BUILDS=(keras:keras-nightly onnx:onnx-weekly tensorflow-cpu:tf-nightly-cpu tensorflow:tf-nightly-cpu)
builds_win() {
  local pair release build
  for pair in "${DEV_BUILDS[@]}"; do
    release="${pair%%:*}"; build="${pair##*:}"
    if .venv-next/bin/python -m pip show --quiet "$release" >/dev/null 2>&1; then
      .venv-next/bin/python -m pip uninstall --quiet -y "$release"
      .venv-next/bin/python -m pip install --quiet --no-deps --force-reinstall \
        "$(grep -E "^$build([<>=]|$)" requirements-next.txt | head -1)"
    fi
  done
}
next_stamp="$(stamp_of requirements-next.txt)"
if [[ "${MEMO_NO_NEXT:-}" == 1 ]]; then
  echo "setup: .venv-next skipped (MEMO_NO_NEXT=1): bugs are not rechecked on the newest code"
elif [[ ! -f .venv-next/.memo-stamp || "$(cut -d' ' -f1 .venv-next/.memo-stamp)" != "$next_stamp" ]]; then
  # the same torch pin as .venv: link its 5 GB (torch, torchvision, triton, CUDA libraries) instead of unpacking them
  [[ -x .venv-next/bin/python ]] || "$PYTHON" -m venv .venv-next
  if grep -q "^torch==$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("torch"))')\$" \
      requirements-next.txt; then
    linked="$(.venv/bin/python scripts/link_dists.py .venv/lib/python3.11/site-packages \
      .venv-next/lib/python3.11/site-packages torch torchvision triton nvidia_ cuda_)"
    echo "setup: .venv-next shares .venv's torch build ($linked distributions linked)"
  fi
  make_env .venv-next "$next_stamp" -r requirements-next.txt
  builds_win
  echo "$next_stamp $(date -u +%F)" > .venv-next/.memo-stamp
elif [[ "$(cut -d' ' -f2 .venv-next/.memo-stamp)" != "$(date -u +%F)" ]]; then
  echo "setup: refreshing the development builds in .venv-next (once a day)"
  # only the builds themselves: their dependencies stay unless a new build needs newer ones
  if .venv-next/bin/python -m pip install --quiet --upgrade \
      $(grep -E "^(keras-nightly|tf-nightly-cpu|onnx-weekly)" requirements-next.txt | cut -d' ' -f1); then
    builds_win
    echo "$next_stamp $(date -u +%F)" > .venv-next/.memo-stamp
  else
    echo "setup: warning: the development builds could not be refreshed; .venv-next keeps yesterday's" >&2
  fi
else
  echo "setup: .venv-next is up to date (development builds refreshed today)"
fi
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
  # the pins are pyproject.toml's; the builds come from the index pip is configured with (PyPI's torch wheels for
  # Linux are CUDA builds; a machine whose index serves CPU builds gets no CUDA torch, and says so)
  pin_of() { grep -oE "\"$1(\[[a-z0-9]+\])?==[^\"]+\"" pyproject.toml | head -1 | tr -d '"' | sed -E 's/^[^=]+==//'; }
  if ! .venv/bin/python -c 'import sys, torch; sys.exit(torch.version.cuda is None)' 2>/dev/null; then
    .venv/bin/python -m pip uninstall --quiet -y torch torchvision
    .venv/bin/python -m pip install --quiet "torch==$(pin_of torch)" "torchvision==$(pin_of torchvision)" \
      || echo "setup: warning: no CUDA build of torch $(pin_of torch) could be installed: torch's GPU backends will not run" >&2
  fi
  .venv/bin/python -m pip install --quiet "jax[cuda13]==$(pin_of jax)" \
    || echo "setup: warning: JAX's CUDA plugin could not be installed: keras-jax-cuda will not run" >&2
  .venv/bin/python -m pip install --quiet "onnxruntime-gpu==$(pin_of onnxruntime)" \
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
echo "setup: done (.venv, .venv-mxnet, .venv-next)"
