#!/usr/bin/env bash
# The issue-12 transfer experiment, with the strata CLI only (docs/training.md "Transfer learning"):
#   1. pretrain cnn_small_same on Fashion-MNIST classes 0-4 (all 30000 training images, 2 epochs);
#   2. on classes 5-9 with the first 100 training images per class (500), test on the 5000 test images of 5-9:
#      scratch     the same model from scratch, 20 epochs, Adam 1e-3
#      frozen      --weights + --new_head + --freeze_base: only the new Dense(5) head trains, 20 epochs, Adam 1e-2
#      conv_frozen --weights + --new_head + --fine_tune_at dense: the conv backbone frozen, Dense(128) (pretrained)
#                  and the new head train, 20 epochs, Adam 1e-3
#      two_phase   --freeze_base --head_epochs 10 (Adam 1e-2), then --fine_tune_at conv2d --fine_tune_epochs 10 at
#                  1e-4 (everything trains)
# Prints one line per run: name and test accuracy. usage: transfer_fashion.sh STRATA [DATA_DIR] [SEED]
set -euo pipefail
S=$1
D=${2:-${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}}
SEED=${3:-1}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_WAIT_POLICY=passive
"$S" train --data_dir "$D" --model_name cnn_small_same --classes 0,1,2,3,4 --num_classes 5 --epochs 2 \
  --batch_size 64 --seed 0 --verbose 0 --checkpoint_dir "$OUT/pre" --keep_checkpoints 1 > "$OUT/pre.log" 2>&1
echo "pretrain (classes 0-4, test on 0-4): $(grep '^test accuracy' "$OUT/pre.log" | awk '{print $3}')"
PRE=$(ls -d "$OUT"/pre/ckpt-*)
COMMON=(--data_dir "$D" --model_name cnn_small_same --classes 5,6,7,8,9 --examples_per_class 100 --num_classes 5
        --batch_size 32 --seed "$SEED" --verbose 0)
run() {
  local name=$1; shift
  "$S" train "${COMMON[@]}" "$@" > "$OUT/$name.log" 2>&1 || { cat "$OUT/$name.log"; exit 1; }
  echo "$name: $(grep '^test accuracy' "$OUT/$name.log" | awk '{print $3}')"
}
run scratch --epochs 20 --learning_rate 1e-3
run frozen --weights "$PRE" --new_head --freeze_base --epochs 20 --learning_rate 1e-2
run conv_frozen --weights "$PRE" --new_head --fine_tune_at dense --fine_tune_epochs 20 --fine_tune_learning_rate 1e-3
run two_phase --weights "$PRE" --new_head --freeze_base --head_epochs 10 --learning_rate 1e-2 --fine_tune_at conv2d \
  --fine_tune_epochs 10 --fine_tune_learning_rate 1e-4
