#!/usr/bin/env bash
# Slow test: train a zoo model on Fashion-MNIST and require a test accuracy (the thresholds: MLP >= 0.87 in
# 5 epochs, small CNN >= 0.91 in 3). usage: fashion_accuracy.sh STRATA MODEL EPOCHS MIN_ACCURACY
set -euo pipefail
STRATA=$1 MODEL=$2 EPOCHS=$3 MIN=$4
DATA=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} "$STRATA" train --data_dir "$DATA" --model_name "$MODEL" --epochs "$EPOCHS" \
  --batch_size 64 --learning_rate 1e-3 --optimizer adam --seed 0 --verbose 2 | tee "$OUT/log"
ACC=$(grep '^test accuracy:' "$OUT/log" | awk '{print $3}')
echo "test accuracy $ACC (required >= $MIN)"
awk -v a="$ACC" -v m="$MIN" 'BEGIN { exit !(a >= m) }'
