#!/usr/bin/env bash
# The GPU check (issue 34): on a machine with an NVIDIA GPU, torch and JAX (CUDA builds) and no TensorFlow,
# run memo's GPU backends next to their CPU twins and write what happened to $OUT (default ./gpu-check-out).
#   bash scripts/gpu_check.sh [MINUTES]
# Packages the machine lacks (keras and its small dependencies, onnx2torch) are installed from ./.whl when that
# folder holds wheels (a machine without a package index); otherwise they must be installed already.
set -u
MINUTES=${1:-5}
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu_check: installing the wheels of .whl failed"; exit 1; }
  export PYTHONPATH="/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
else
  export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
fi
{
  nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  $PY -V
  $PY -c "import torch, jax; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available()); print('jax', jax.__version__, jax.devices())"
  $PY -m pip list 2>/dev/null | grep -i -E "^(keras|jax|torch|onnx|onnxruntime|onnx2torch|numpy) "
} 2>&1 | tee "$OUT/environment.txt"
$PY -m memo backends --json > "$OUT/backends.json" 2> "$OUT/backends.err" || cat "$OUT/backends.err"
$PY - "$OUT/backends.json" <<'EOF'
import json, sys
for row in json.load(open(sys.argv[1]))["backends"]:
    print(f"{row['name']:24} {row['device']:5} {'yes' if row['available'] else 'no: ' + str(row['why_not'])}")
EOF
GPU_SET=keras-torch,keras-jax,onnx2torch,keras-torch-cuda,keras-jax-cuda,onnx2torch-cuda,torch-inductor-cuda,onnxruntime-cuda
# the GPU tests: strict agreement with the CPU, TF32 mode visibly TF32 yet within its tolerance
timeout "${TEST_SECONDS:-150}" $PY -m pytest -q -p no:cacheprovider tests/integration/test_gpu_backends.py 2>&1 \
  | tail -15 | tee "$OUT/gpu-tests.txt"
# the campaign: every GPU backend beside its CPU twin, Keras on torch (CPU) as the reference
timeout $(( MINUTES * 60 + 110 )) $PY -m memo fuzz --minutes "$MINUTES" --name gpu-check --reference keras-torch \
  --backends $GPU_SET --jobs 6 --json > "$OUT/events.jsonl" 2> "$OUT/fuzz.err"
echo "memo fuzz: exit $?"; tail -5 "$OUT/fuzz.err"
$PY -m memo report gpu-check --format json -o "$OUT/report.json" || echo "gpu_check: no JSON report"
cp reports/gpu-check.html "$OUT/report.html" 2>/dev/null
tar czf "$OUT/bugs.tgz" --exclude='*.npz' --exclude='*.onnx' --exclude='*.keras' campaigns/gpu-check/bugs 2>/dev/null
$PY scripts/gpu_check_summary.py "$OUT/report.json"
ls -la "$OUT"
