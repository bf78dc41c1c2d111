#!/usr/bin/env bash
# int8 QDQ ResNet-50 (issue 13's Must-show): `strata quantize` the torch-exported ResNet-50, then in one run, 2 threads,
# interleaved rounds: strata fp32, strata int8 (the QDQ file) and ONNX Runtime 1.30 on the same QDQ file (and on the
# fp32 file, for reference). Prints median ms per engine and the ratios; also top-1 agreement of strata's int8 with
# strata's fp32 on N random inputs (the exported weights are random, so this measures quantization noise only).
#
#   usage: bench/int8_resnet50.sh [BUILD_DIR] [ROUNDS] [BATCH]
#   env:   MODELS_DIR (default /tmp/strata-peer-models, see bench/compare_peers.sh), WORK (default /tmp/strata-int8),
#          STRATA_PEERS_VENV (default ~/.cache/strata/peers-venv), METHOD (minmax), NCALIB (32), NAGREE (64), ITERS (20)
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
BATCH=${3:-1}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS_DIR=${MODELS_DIR:-/tmp/strata-peer-models}
WORK=${WORK:-/tmp/strata-int8}
PY=${STRATA_PEERS_VENV:-$HOME/.cache/strata/peers-venv}/bin/python
PEERS=${PEERS:-$(cd "$HERE/../.." && pwd)/shared/peers}
[ -d "$PEERS/ort" ] || PEERS=/work/shared/peers
STRATA=$(cd "$BUILD" && pwd)/strata
FP32=$MODELS_DIR/resnet50/model.onnx
INT8=$WORK/resnet50.int8.onnx
ITERS=${ITERS:-20}
[ -f "$FP32" ] || { echo "error: $FP32 missing: export it with bench/compare_peers.sh first" >&2; exit 2; }
mkdir -p "$WORK"

# Calibration and test inputs: uniform [0, 1) images like the export's input (torch.rand), fixed seeds.
"$PY" - "$WORK" "${NCALIB:-32}" "${NAGREE:-64}" "$BATCH" <<'EOF'
import sys, numpy as np
work, ncal, nagree, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
np.save(f'{work}/calib.npy', np.random.default_rng(1).random((ncal, 3, 224, 224), dtype=np.float32))
np.save(f'{work}/agree.npy', np.random.default_rng(2).random((nagree, 3, 224, 224), dtype=np.float32))
np.random.default_rng(3).random((batch, 3, 224, 224), dtype=np.float32).tofile(f'{work}/bench_input.bin')
EOF
if [ ! -f "$INT8" ] || [ "$FP32" -nt "$INT8" ] || [ "$STRATA" -nt "$INT8" ]; then
  "$STRATA" quantize "$FP32" --calibration "$WORK/calib.npy" --out "$INT8" --method "${METHOD:-minmax}" --threads 2
fi

strata_ms() { "$STRATA" bench "$1" --batch "$BATCH" --threads 2 --iters "$ITERS" --json | sed 's/.*"median_ms": \([0-9.]*\).*/\1/'; }
ort_ms() {
  "$PY" "$PEERS/ort/run_model.py" "$1" "$WORK/bench_input.bin" "$BATCH,3,224,224" "$WORK/ort_out.bin" --threads 2 \
    --iters "$ITERS" | sed 's/.*"median_ms": \([0-9.]*\).*/\1/'
}
echo "round strata_fp32_ms strata_int8_ms ort_int8_ms ort_fp32_ms"
for r in $(seq "$ROUNDS"); do
  echo "$r $(strata_ms "$FP32") $(strata_ms "$INT8") $(ort_ms "$INT8") $(ort_ms "$FP32")"
done | tee "$WORK/rounds.txt"
"$PY" - "$WORK/rounds.txt" <<'EOF'
import sys, statistics as st
rows = [list(map(float, l.split()[1:])) for l in open(sys.argv[1])]
s32, s8, o8, o32 = (st.median(c) for c in zip(*rows))
print(f'median of round medians (ms): strata fp32 {s32:.2f}, strata int8 {s8:.2f}, ORT int8 {o8:.2f}, ORT fp32 {o32:.2f}')
print(f'strata int8 speed-up over strata fp32: {s32 / s8:.2f}x (target >= 2.5x)')
print(f'strata int8 latency / ORT int8 latency (same QDQ file): {s8 / o8:.2f} (target <= 1.0)')
EOF

# Top-1 agreement, strata int8 vs strata fp32.
rm -rf "$WORK/out32" "$WORK/out8"
"$STRATA" run "$FP32" --input "input=$WORK/agree.npy" --output-dir "$WORK/out32" --threads 2 >/dev/null
"$STRATA" run "$INT8" --input "input=$WORK/agree.npy" --output-dir "$WORK/out8" --threads 2 >/dev/null
"$PY" - "$WORK" <<'EOF'
import sys, numpy as np
w = sys.argv[1]
a, b = np.load(f'{w}/out32/output.npy'), np.load(f'{w}/out8/output.npy')
print(f'top-1 agreement strata int8 vs fp32 on {len(a)} random inputs: {np.mean(a.argmax(1) == b.argmax(1)):.3f}; '
      f'max |diff| {np.abs(a - b).max():.3f} against a logit range of {a.max() - a.min():.3f}')
EOF
