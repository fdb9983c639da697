#!/usr/bin/env bash
# A separate virtual environment with another release of a library under test, to recheck memo's bugs on it:
#   scripts/make_recheck_env.sh [DIR] [REQUIREMENT...]
# Defaults: /tmp/venv-ort131 with ONNX Runtime 1.31.1 (memo's .venv has 1.32.0; memo's bugs found on 1.31 reproduce
# there), and the onnx and numpy its bugs' scripts need. Then recheck_folder(folder, python="DIR/bin/python") (memo.bugdb.recheck) or
#   .venv/bin/python benchmarks/bench_recheck.py --python DIR/bin/python --library onnxruntime
# tells which bugs that release shows (docs/recheck.md). Another release:
#   scripts/make_recheck_env.sh /tmp/venv-ort120 onnxruntime==1.20.1 onnx==1.17.0 'numpy<2'
# The newest code (development builds) has its own environment, .venv-next, which scripts/setup.sh builds.
# A second run with the same requirements reuses DIR.
set -euo pipefail
DIR="${1:-/tmp/venv-ort131}"
shift || true
REQUIREMENTS=("$@")
[[ ${#REQUIREMENTS[@]} -gt 0 ]] || REQUIREMENTS=("onnxruntime==1.31.1" "onnx==1.23.2" "numpy==2.2.6")
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
stamp="$(printf '%s\n' "${REQUIREMENTS[@]}" | sha256sum | cut -c1-16)"
if [[ -f "$DIR/.memo-stamp" && "$(cat "$DIR/.memo-stamp")" == "$stamp" ]]; then
  echo "make_recheck_env: $DIR is up to date"; exit 0
fi
[[ -x "$DIR/bin/python" ]] || "$PYTHON" -m venv "$DIR"
"$DIR/bin/python" -m pip install --quiet --upgrade pip
"$DIR/bin/python" -m pip install --quiet "${REQUIREMENTS[@]}"
echo "$stamp" > "$DIR/.memo-stamp"
echo "make_recheck_env: $DIR ready:"
"$DIR/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE "^($(printf '%s|' "${REQUIREMENTS[@]%%[=<>]*}")numpy)==" || true
