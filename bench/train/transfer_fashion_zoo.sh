#!/usr/bin/env bash
# Issue 12's transfer experiment with a zoo backbone (docs/training.md "Transfer learning"), strata CLI only.
# Fashion-MNIST is written as PNG class folders (python3-pil, python3-numpy), which `strata train --image_dir` decodes
# to 3 channels and resizes to SIZE x SIZE (bilinear); the model's own preprocessing takes it from there.
#   1. pretrain MODEL on classes 0-4 (the 30000 training images), PRE_EPOCHS epochs, Adam 1e-3, batch 64;
#   2. classes 5-9, the first 100 training images per class (500), batch 32, each arm FT_EPOCHS epochs in all:
#      scratch    the same model from scratch, Adam 1e-3 (SCRATCH_EPOCHS epochs, default 2 x FT_EPOCHS, so that its
#                 curve shows whether it has converged and what it had after FT_EPOCHS)
#      frozen     --weights + --new_head + --freeze_base: only the new head trains, Adam 1e-2
#      two_phase  --freeze_base --head_epochs FT/2 (Adam 1e-2), then --fine_tune_at stem_conv (everything trains)
#                 --fine_tune_epochs FT/2 at 1e-4
#   The per-epoch curve is validation accuracy on the first 200 test images of each class (1000); the final figure
#   is `strata eval` of the last checkpoint on all 5000 test images of classes 5-9.
# usage: transfer_fashion_zoo.sh STRATA [DATA_DIR] [SEED]   (env: MODEL, SIZE, PRE_EPOCHS, FT_EPOCHS, SCRATCH_EPOCHS,
#        WORK=DIR to keep the folders and logs, PRE=CHECKPOINT_MANAGER_DIR to reuse a pretraining, ARMS="scratch frozen
#        two_phase" to run some arms only)
set -euo pipefail
S=$1
D=${2:-${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}}
SEED=${3:-1}
MODEL=${MODEL:-EfficientNetV2B0}
SIZE=${SIZE:-32}
PRE_EPOCHS=${PRE_EPOCHS:-2}
FT_EPOCHS=${FT_EPOCHS:-20}
SCRATCH_EPOCHS=${SCRATCH_EPOCHS:-$((2 * FT_EPOCHS))}
if [[ -n "${WORK:-}" ]]; then OUT=$WORK; mkdir -p "$OUT"; else OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
if [[ ! -d "$OUT/data/ft_val" ]]; then
  /usr/bin/python3 - "$D" "$OUT/data" <<'PY'
import gzip, os, sys
import numpy as np
from PIL import Image
src, out = sys.argv[1], sys.argv[2]
def idx(name):
    path = os.path.join(src, name)
    d = gzip.open(path + '.gz').read() if os.path.exists(path + '.gz') else open(path, 'rb').read()
    dims = [int.from_bytes(d[4 + 4 * i:8 + 4 * i], 'big') for i in range(d[3])]
    return np.frombuffer(d, np.uint8, offset=4 + 4 * d[3]).reshape(dims)
xtr, ytr = idx('train-images-idx3-ubyte'), idx('train-labels-idx1-ubyte')
xte, yte = idx('t10k-images-idx3-ubyte'), idx('t10k-labels-idx1-ubyte')
def write(folder, x, y, classes, first=None):
    for c in classes:
        d = os.path.join(out, folder, f'class{c}')
        os.makedirs(d, exist_ok=True)
        for i in np.nonzero(y == c)[0][:first]:  # the first N of the class in file order
            Image.fromarray(x[i]).save(os.path.join(d, f'{i:05d}.png'))
write('pre_train', xtr, ytr, range(5)); write('pre_test', xte, yte, range(5))
write('ft_train', xtr, ytr, range(5, 10), 100); write('ft_test', xte, yte, range(5, 10))
write('ft_val', xte, yte, range(5, 10), 200)
PY
fi
SHAPE=(--input_shape "$SIZE" "$SIZE" 3 --num_classes 5 --model_name "$MODEL")
echo "# $MODEL ${SIZE}x${SIZE}x3, seed $SEED, $(date -u +%FT%TZ)"
if [[ -z "${PRE:-}" ]]; then
  PRE=$OUT/pre
  t0=$SECONDS
  "$S" train --image_dir "$OUT/data/pre_train" --validation_image_dir "$OUT/data/pre_test" "${SHAPE[@]}" \
    --epochs "$PRE_EPOCHS" --batch_size 64 --learning_rate 1e-3 --seed 0 --verbose 2 --checkpoint_dir "$PRE" \
    --keep_checkpoints 1 --overwrite > "$OUT/pre.log" 2>&1 || { tail -20 "$OUT/pre.log"; exit 1; }
  echo "pretrain (classes 0-4, $PRE_EPOCHS epochs, $((SECONDS - t0)) s): test accuracy on 0-4 $(grep '^test accuracy' "$OUT/pre.log" | awk '{print $3}')"
fi
PRE_CKPT=$(ls -d "$PRE"/ckpt-* | sort -t- -k2 -n | tail -1)
curve() { grep -o 'val_accuracy: [0-9.]*' "$1" | awk '{printf "%s%.3f", (NR > 1 ? " " : ""), $2}'; }
run() {
  local name=$1; shift
  local t0=$SECONDS
  rm -rf "$OUT/$name"
  "$S" train --image_dir "$OUT/data/ft_train" --validation_image_dir "$OUT/data/ft_val" "${SHAPE[@]}" --batch_size 32 \
    --seed "$SEED" --verbose 2 --checkpoint_dir "$OUT/$name" --keep_checkpoints 1 "$@" > "$OUT/$name.log" 2>&1 ||
    { tail -20 "$OUT/$name.log"; exit 1; }
  "$S" eval --checkpoint_dir "$OUT/$name" --validation_image_dir "$OUT/data/ft_test" "${SHAPE[@]}" \
    > "$OUT/$name.eval.log" 2>&1 || { tail -20 "$OUT/$name.eval.log"; exit 1; }
  echo "$name: test accuracy (5000 images) $(grep -io 'accuracy[: =]*[0-9.]*' "$OUT/$name.eval.log" | tail -1 | grep -o '[0-9.]*$') ($((SECONDS - t0)) s)"
  echo "  val accuracy per epoch (1000 images): $(curve "$OUT/$name.log")"
}
ARMS=${ARMS:-scratch frozen two_phase}
[[ " $ARMS " == *" scratch "* ]] && run scratch --epochs "$SCRATCH_EPOCHS" --learning_rate 1e-3
[[ " $ARMS " == *" frozen "* ]] &&
  run frozen --weights "$PRE_CKPT" --new_head --freeze_base --epochs "$FT_EPOCHS" --learning_rate 1e-2
[[ " $ARMS " == *" two_phase "* ]] && run two_phase --weights "$PRE_CKPT" --new_head --freeze_base --head_epochs $((FT_EPOCHS / 2)) --learning_rate 1e-2 \
  --fine_tune_at stem_conv --fine_tune_epochs $((FT_EPOCHS - FT_EPOCHS / 2)) --fine_tune_learning_rate 1e-4
true
