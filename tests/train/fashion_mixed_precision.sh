#!/usr/bin/env bash
# Slow test (issue 13): the Fashion CNN (cnn_small, the quickstart recipe: 3 epochs, batch 64, Adam 1e-3, seed 0)
# trained twice, float32 and --mixed_precision bf16; the bf16 test accuracy must be within MAX_GAP (0.003, i.e. 0.3
# points) of the float32 one. usage: fashion_mixed_precision.sh STRATA [EPOCHS] [MAX_GAP]
set -euo pipefail
STRATA=$1 EPOCHS=${2:-3} MAX_GAP=${3:-0.003}
DATA=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
if ! grep -q avx512_bf16 /proc/cpuinfo; then
  echo "SKIP: this CPU has no avx512_bf16, so --mixed_precision bf16 trains in float32"; exit 77
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
declare -A ACC
for MP in none bf16; do
  OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$STRATA" train --data_dir "$DATA" --model_name cnn_small \
    --epochs "$EPOCHS" --batch_size 64 --learning_rate 1e-3 --optimizer adam --seed 0 --verbose 2 \
    --mixed_precision "$MP" | tee "$OUT/$MP.log"
  ACC[$MP]=$(grep '^test accuracy:' "$OUT/$MP.log" | awk '{print $3}')
done
echo "test accuracy: float32 ${ACC[none]}, mixed_bfloat16 ${ACC[bf16]} (allowed gap $MAX_GAP)"
awk -v a="${ACC[none]}" -v b="${ACC[bf16]}" -v m="$MAX_GAP" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= m) }'
