#!/usr/bin/env bash
# `strata train --checkpoint_dir --resume`: a run SIGKILLed at random moments and resumed each time ends with
# checkpoint files byte-identical to an uninterrupted run; eval and export read the checkpoints; a corrupted tensor
# is DATA_LOSS naming it. Tiny synthetic IDX data (python3 + numpy), a few seconds. usage: cli_resume.sh STRATA
set -euo pipefail
STRATA=$1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
/usr/bin/python3 - "$OUT/data" <<'PY'
import numpy as np, os, struct, sys
d = sys.argv[1]; os.makedirs(d)
rng = np.random.default_rng(4)
def write(prefix, n):
    y = rng.integers(0, 3, n).astype(np.uint8)
    x = (rng.random((n, 8, 8)) * 60).astype(np.uint8)
    for i, c in enumerate(y):
        x[i, :, c * 2:c * 2 + 2] += 150  # a class-dependent bar
    open(f'{d}/{prefix}-images-idx3-ubyte', 'wb').write(b'\0\0\x08\x03' + struct.pack('>3I', n, 8, 8) + x.tobytes())
    open(f'{d}/{prefix}-labels-idx1-ubyte', 'wb').write(b'\0\0\x08\x01' + struct.pack('>I', n) + y.tobytes())
write('train', 320); write('t10k', 64)
PY
FLAGS=(--data_dir "$OUT/data" --model_name mlp --input_shape 8 8 1 --num_classes 3 --batch_size 16 --epochs 3
       --learning_rate 0.01 --seed 7 --deterministic --verbose 0 --keep_checkpoints 1)
export OMP_WAIT_POLICY=passive
"$STRATA" train "${FLAGS[@]}" --checkpoint_dir "$OUT/ref" > "$OUT/ref.log"
grep -q 'model_checkpoint_path: "ckpt-60"' "$OUT/ref/checkpoint" || { cat "$OUT/ref/checkpoint"; exit 1; }

# Killed at random moments (after its first checkpoint), three times, each run resuming the previous one's.
killed=()
for round in 1 2 3; do
  before=$(cat "$OUT/run/checkpoint" 2>/dev/null || true)
  "$STRATA" train "${FLAGS[@]}" --checkpoint_dir "$OUT/run" --checkpoint_steps 1 --resume > "$OUT/run$round.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 3000); do
    now=$(cat "$OUT/run/checkpoint" 2>/dev/null || true)
    [ -n "$now" ] && [ "$now" != "$before" ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.01
  done
  sleep "0.$(( RANDOM % 300 ))"
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  killed+=("$(grep -o 'model_checkpoint_path: "[^"]*"' "$OUT/run/checkpoint" || echo none)")
done
echo "killed after: ${killed[*]}"
"$STRATA" train "${FLAGS[@]}" --checkpoint_dir "$OUT/run" --checkpoint_steps 1 --resume > "$OUT/final.log" 2>&1
grep -q 'model_checkpoint_path: "ckpt-60"' "$OUT/run/checkpoint"
ls "$OUT/run" | grep -q '^\.' && { echo "temporary directories left behind"; ls -a "$OUT/run"; exit 1; }
for f in model.safetensors optimizer.safetensors; do
  cmp "$OUT/ref/ckpt-60/$f" "$OUT/run/ckpt-60/$f" || { echo "resumed $f differs from the uninterrupted run"; exit 1; }
done
echo "resumed run is byte-identical to the uninterrupted one"

# eval and export read the checkpoint (the manager directory or a checkpoint directory).
"$STRATA" eval --data_dir "$OUT/data" --model_name mlp --input_shape 8 8 1 --num_classes 3 --checkpoint_dir "$OUT/ref" \
  | tee "$OUT/eval.log"
grep -q 'accuracy' "$OUT/eval.log"
"$STRATA" export --model_name mlp --input_shape 8 8 1 --num_classes 3 --checkpoint_dir "$OUT/ref/ckpt-60" \
  --export_base_dir "$OUT/models" > /dev/null
test -f "$OUT/models/mlp/1/model.onnx"
# A model of another shape: the difference is listed.
if "$STRATA" eval --data_dir "$OUT/data" --model_name mlp --input_shape 8 8 1 --num_classes 4 \
     --checkpoint_dir "$OUT/ref" > "$OUT/mismatch.log" 2>&1; then
  echo "eval accepted weights of another model"; exit 1
fi
# (the checkpoint carries its model config, so the flag that disagrees with it is named)
grep -q "num_classes 4 disagrees with checkpoint" "$OUT/mismatch.log" || { cat "$OUT/mismatch.log"; exit 1; }
# Flip one byte at the very end of model.safetensors (the data of its last tensor): DATA_LOSS naming the tensor.
/usr/bin/python3 - "$OUT/ref/ckpt-60/model.safetensors" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[-1] ^= 0x10; open(p, 'wb').write(b)
PY
if "$STRATA" eval --data_dir "$OUT/data" --model_name mlp --input_shape 8 8 1 --num_classes 3 \
     --checkpoint_dir "$OUT/ref" > "$OUT/corrupt.log" 2>&1; then
  echo "eval accepted a corrupted checkpoint"; exit 1
fi
cat "$OUT/corrupt.log"
grep -q "^strata: error: .*model.safetensors: tensor '[^']*' fails its CRC32C" "$OUT/corrupt.log"
echo OK
