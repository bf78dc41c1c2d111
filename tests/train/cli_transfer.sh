#!/usr/bin/env bash
# `strata train` transfer learning from the CLI, on tiny synthetic IDX data (python3 + numpy), well under a minute:
#  - --weights from a checkpoint with another --num_classes re-initialises the head and says so; --freeze_base keeps
#    every base weight bitwise (read back from the checkpoint with python3), --fine_tune_at unfreezes and recompiles;
#  - --classes / --examples_per_class select the data;
#  - bad input changes nothing and names the problem: weights of another architecture, a truncated .h5, a freeze
#    index past the last layer, an unknown layer name.
# usage: cli_transfer.sh STRATA
set -euo pipefail
STRATA=$1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_WAIT_POLICY=passive
fail() { echo "FAIL: $*"; exit 1; }
expect_fail() {
  local log=$1; shift
  if "$@" > "$log" 2>&1; then cat "$log"; fail "expected a failure: $*"; fi
}
expect_in() { grep -qF -- "$2" "$1" || { cat "$1"; fail "'$2' not in $1"; }; }

/usr/bin/python3 - "$OUT/data" <<'PY'
import numpy as np, os, struct, sys
rng = np.random.default_rng(4)
def write(d, prefix, n):
    os.makedirs(d, exist_ok=True)
    y = rng.integers(0, 4, n).astype(np.uint8)
    x = (rng.random((n, 8, 8)) * 60).astype(np.uint8)
    for i, c in enumerate(y):
        x[i, :, c * 2:c * 2 + 2] += 150  # a class-dependent bar
    open(f'{d}/{prefix}-images-idx3-ubyte', 'wb').write(b'\0\0\x08\x03' + struct.pack('>3I', n, 8, 8) + x.tobytes())
    open(f'{d}/{prefix}-labels-idx1-ubyte', 'wb').write(b'\0\0\x08\x01' + struct.pack('>I', n) + y.tobytes())
write(sys.argv[1], 'train', 160); write(sys.argv[1], 't10k', 64)
PY
BASE=(--data_dir "$OUT/data" --input_shape 8 8 1 --batch_size 16 --seed 3 --verbose 0)
COMMON=("${BASE[@]}" --model_name cnn_small_same)

# Pretrain on classes 0 and 1 (2 classes).
"$STRATA" train "${COMMON[@]}" --classes 0,1 --num_classes 2 --epochs 2 --checkpoint_dir "$OUT/pre" \
  --keep_checkpoints 1 > "$OUT/pre.log" 2>&1 || { cat "$OUT/pre.log"; fail "pretraining"; }
PRE=$(ls -d "$OUT"/pre/ckpt-*)

# Frozen base, new 2-class head on classes 2 and 3 (5 per class), then fine-tuning from conv2d_1.
"$STRATA" train "${COMMON[@]}" --classes 2,3 --examples_per_class 5 --num_classes 2 --weights "$PRE" --new_head \
  --freeze_base --head_epochs 2 --checkpoint_dir "$OUT/head" --keep_checkpoints 1 > "$OUT/head.log" 2>&1 \
  || { cat "$OUT/head.log"; fail "head training"; }
expect_in "$OUT/head.log" "new head: layer 'dense_1' (Dense) keeps its fresh initialisation (--new_head)"
expect_in "$OUT/head.log" "training on 10 examples of 2 classes"
expect_in "$OUT/head.log" "phase 1 (2 epochs): base frozen, training the head 'dense_1'"
/usr/bin/python3 - "$PRE/model.safetensors" "$(ls -d "$OUT"/head/ckpt-*)/model.safetensors" <<'PY'
import json, struct, sys
def read(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
    return {k: b[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]] for k, v in h.items() if k != '__metadata__'}
a, b = read(sys.argv[1]), read(sys.argv[2])
for k in a:
    same = a[k] == b[k]
    if k.startswith('dense_1/kernel'):
        assert not same, 'the head did not change: ' + k
    elif not k.startswith('dense_1/'):
        assert same, 'a frozen weight changed: ' + k
print('frozen base bitwise unchanged over', len(a) - 2, 'weights; head trained')
PY

# --num_classes 3 against a 2-class head: the head is re-initialised because its shape differs.
"$STRATA" train "${COMMON[@]}" --classes 1,2,3 --num_classes 3 --weights "$PRE" --freeze_base --head_epochs 1 \
  --fine_tune_at conv2d_1 --fine_tune_epochs 1 --fine_tune_learning_rate 1e-4 > "$OUT/ft.log" 2>&1 \
  || { cat "$OUT/ft.log"; fail "two-phase fine-tuning"; }
expect_in "$OUT/ft.log" "new head: layer 'dense_1' (Dense) keeps its fresh initialisation (the file's 'dense_1/kernel' is float32[128,2], the model's (--num_classes 3) float32[128,3])"
expect_in "$OUT/ft.log" "phase 2: fine-tuning from layer 'conv2d_1' (index 3) on, lr 1e-04"
expect_in "$OUT/ft.log" "recompiling the training plan"

# --weights_name_map: the same weights under other names (a safetensors file rewritten by python3), mapped back.
/usr/bin/python3 - "$PRE/model.safetensors" "$OUT/renamed.safetensors" "$OUT/map.json" <<'PY'
import json, struct, sys
b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
h2 = {('torch.' + k if k != '__metadata__' else k): v for k, v in h.items()}
hb = json.dumps(h2).encode(); hb += b' ' * (-len(hb) % 8)
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(hb)) + hb + b[8 + n:])
json.dump({'torch.' + k: k for k in h if k != '__metadata__'}, open(sys.argv[3], 'w'))
PY
"$STRATA" train "${COMMON[@]}" --classes 0,1 --num_classes 2 --epochs 1 --weights "$OUT/renamed.safetensors" \
  --weights_name_map "$OUT/map.json" > "$OUT/map.log" 2>&1 || { cat "$OUT/map.log"; fail "--weights_name_map"; }
expect_in "$OUT/map.log" "loaded the weights of model 'cnn_small_same' from '$OUT/renamed.safetensors'"
expect_fail "$OUT/nomap.log" "$STRATA" train "${COMMON[@]}" --num_classes 2 --weights "$OUT/renamed.safetensors"
expect_in "$OUT/nomap.log" "unexpected (not in the model): 'torch.conv2d/bias'"

# Bad input: nothing is trained or written, and the message names the problem.
expect_fail "$OUT/bad1.log" "$STRATA" train "${BASE[@]}" --model_name mlp --num_classes 2 --weights "$PRE" \
  --checkpoint_dir "$OUT/bad1"
expect_in "$OUT/bad1.log" "likely for another architecture"
expect_in "$OUT/bad1.log" "'dense/kernel': the model has float32[64,256], the file float32[256,128]"
[ ! -e "$OUT/bad1" ] || [ -z "$(ls -A "$OUT/bad1")" ] || fail "a failed --weights load wrote checkpoints"
printf '\x89HDF\r\n\x1a\n\0\0' > "$OUT/trunc.weights.h5"
expect_fail "$OUT/bad2.log" "$STRATA" train "${COMMON[@]}" --num_classes 2 --weights "$OUT/trunc.weights.h5"
expect_in "$OUT/bad2.log" "trunc.weights.h5"
expect_in "$OUT/bad2.log" "HDF5"
head -c 100 "$PRE/model.safetensors" > "$OUT/cut.safetensors"
expect_fail "$OUT/bad3.log" "$STRATA" train "${COMMON[@]}" --num_classes 2 --weights "$OUT/cut.safetensors"
expect_in "$OUT/bad3.log" "cut.safetensors"
expect_fail "$OUT/bad4.log" "$STRATA" train "${COMMON[@]}" --num_classes 2 --weights "$PRE" --fine_tune_at 9 \
  --fine_tune_epochs 1
expect_in "$OUT/bad4.log" "layer index 9 is past the last layer of model 'cnn_small_same', which has 9 layers (indices 0..8, the input layer first"
expect_fail "$OUT/bad5.log" "$STRATA" train "${COMMON[@]}" --num_classes 2 --fine_tune_at conv2d_9 --fine_tune_epochs 1
expect_in "$OUT/bad5.log" "has no layer named 'conv2d_9' (did you mean 'conv2d_1'?)"
expect_fail "$OUT/bad6.log" "$STRATA" train "${COMMON[@]}" --num_classes 2 --fine_tune_at 3
expect_in "$OUT/bad6.log" "--fine_tune_at needs --fine_tune_epochs"
echo "cli_transfer: all checks passed"
