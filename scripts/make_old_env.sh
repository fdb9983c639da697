#!/usr/bin/env bash
# A separate virtual environment with another release of one library under test, to recheck memo's bugs on it:
#   scripts/make_old_env.sh [DIR] [REQUIREMENT...]
# Defaults: /tmp/venv-old with onnxruntime 1.20.1 (and the onnx and numpy its scripts need). Then
#   memo bugs recheck --python DIR/bin/python   or   recheck_folder(folder, python="DIR/bin/python")
# tells which bugs that release shows (docs/bugs.md, "Rechecking on another release"). A second run reuses DIR.
set -euo pipefail
DIR="${1:-/tmp/venv-old}"
shift || true
REQUIREMENTS=("$@")
[[ ${#REQUIREMENTS[@]} -gt 0 ]] || REQUIREMENTS=("onnxruntime==1.20.1" "onnx==1.17.0" "numpy<2")
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
stamp="$(printf '%s\n' "${REQUIREMENTS[@]}" | sha256sum | cut -c1-16)"
if [[ -f "$DIR/.memo-stamp" && "$(cat "$DIR/.memo-stamp")" == "$stamp" ]]; then
  echo "make_old_env: $DIR is up to date"; exit 0
fi
[[ -x "$DIR/bin/python" ]] || "$PYTHON" -m venv "$DIR"
"$DIR/bin/python" -m pip install --quiet --upgrade pip
"$DIR/bin/python" -m pip install --quiet "${REQUIREMENTS[@]}"
echo "$stamp" > "$DIR/.memo-stamp"
"$DIR/bin/python" -m pip list --format=freeze 2>/dev/null | grep -iE "^($(printf '%s|' "${REQUIREMENTS[@]%%[=<>]*}")numpy)==" || true
