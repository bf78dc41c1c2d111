#!/usr/bin/env bash
# Checkpoints and exports carry the model config: `strata eval` and `strata export` rebuild the model from it with no
# --model_name/--input_shape/--num_classes; given flags that disagree are refused naming both values; a checkpoint
# without a config (written before configs) needs the flags, and says so; a damaged config is DATA_LOSS.
# Tiny synthetic IDX data (python3 + numpy), a few seconds. usage: cli_model_config.sh STRATA
set -euo pipefail
STRATA=$1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "$OUT"
fail() { echo "FAIL: $*"; exit 1; }
# expect_fail LOG PATTERN CMD...: CMD exits non-zero and LOG matches PATTERN.
expect_fail() {
  local log=$1 pattern=$2; shift 2
  if "$@" > "$log" 2>&1; then cat "$log"; fail "accepted: $*"; fi
  grep -q -- "$pattern" "$log" || { cat "$log"; fail "no '$pattern' in the error of: $*"; }
}
/usr/bin/python3 - "$OUT/data" <<'PY'
import numpy as np, os, struct, sys
d = sys.argv[1]; os.makedirs(d)
rng = np.random.default_rng(5)
def write(prefix, n):
    y = rng.integers(0, 3, n).astype(np.uint8)
    x = (rng.random((n, 8, 8)) * 60).astype(np.uint8)
    for i, c in enumerate(y):
        x[i, :, c * 2:c * 2 + 2] += 150
    open(f'{d}/{prefix}-images-idx3-ubyte', 'wb').write(b'\0\0\x08\x03' + struct.pack('>3I', n, 8, 8) + x.tobytes())
    open(f'{d}/{prefix}-labels-idx1-ubyte', 'wb').write(b'\0\0\x08\x01' + struct.pack('>I', n) + y.tobytes())
write('train', 128); write('t10k', 64)
PY
export OMP_WAIT_POLICY=passive
MODEL=(--model_name mlp --input_shape 8 8 1 --num_classes 3)
"$STRATA" train --data_dir "$OUT/data" "${MODEL[@]}" --batch_size 16 --epochs 1 --learning_rate 0.01 --seed 3 \
  --verbose 0 --checkpoint_dir "$OUT/ckpt" > "$OUT/train.log" 2>&1 || { cat "$OUT/train.log"; fail "train"; }
CKPT="$OUT/ckpt/ckpt-8"
test -f "$CKPT/model_config.json" || { ls "$CKPT"; fail "the checkpoint has no model_config.json"; }
grep -q '"class_name":"Dense"' "$CKPT/model_config.json" || fail "model_config.json has no Dense layer"

# eval and export with no model flags: the same figures as with them.
"$STRATA" eval --data_dir "$OUT/data" --checkpoint_dir "$OUT/ckpt" > "$OUT/eval.log" 2>&1 \
  || { cat "$OUT/eval.log"; fail "eval without model flags"; }
"$STRATA" eval --data_dir "$OUT/data" "${MODEL[@]}" --checkpoint_dir "$OUT/ckpt" > "$OUT/eval_flags.log" 2>&1 \
  || { cat "$OUT/eval_flags.log"; fail "eval with matching model flags"; }
grep -q accuracy "$OUT/eval.log" || { cat "$OUT/eval.log"; fail "eval printed no accuracy"; }
cmp "$OUT/eval.log" "$OUT/eval_flags.log" || fail "eval without flags differs from eval with them"
"$STRATA" export --checkpoint_dir "$CKPT" --export_base_dir "$OUT/models" > "$OUT/export.log" 2>&1 \
  || { cat "$OUT/export.log"; fail "export without model flags"; }
test -f "$OUT/models/mlp/1/model.onnx" || { cat "$OUT/export.log"; fail "no models/mlp/1/model.onnx"; }
cmp "$OUT/models/mlp/1/model_config.json" "$CKPT/model_config.json" || fail "the export's config differs"
grep -q '\[None,8,8,1\]' "$OUT/export.log" || { cat "$OUT/export.log"; fail "export did not take the input shape"; }
"$STRATA" eval --data_dir "$OUT/data" --model "$OUT/models/mlp/1/model.onnx" > "$OUT/eval_onnx.log" 2>&1 \
  || { cat "$OUT/eval_onnx.log"; fail "eval of the export"; }

# Flags that disagree with the checkpoint's config.
expect_fail "$OUT/e1.log" "--num_classes 4 disagrees with checkpoint .*whose model has 3 classes" \
  "$STRATA" eval --data_dir "$OUT/data" --num_classes 4 --checkpoint_dir "$OUT/ckpt"
expect_fail "$OUT/e2.log" "--model_name cnn_small disagrees with checkpoint .*whose model is 'mlp'" \
  "$STRATA" export --model_name cnn_small --checkpoint_dir "$CKPT" --export_base_dir "$OUT/m2"
expect_fail "$OUT/e3.log" "--input_shape 28 28 1 disagrees with checkpoint .*whose input is 8 8 1" \
  "$STRATA" eval --data_dir "$OUT/data" --input_shape 28 28 1 --checkpoint_dir "$OUT/ckpt"

# A checkpoint as written before configs: the flags still work; without them the error says what to give.
cp -r "$CKPT" "$OUT/old"
rm "$OUT/old/model_config.json"
/usr/bin/python3 - "$OUT/old/state.json" <<'PY'
import json, sys
p = sys.argv[1]; s = json.load(open(p)); del s['model_config']; json.dump(s, open(p, 'w'))
PY
"$STRATA" eval --data_dir "$OUT/data" "${MODEL[@]}" --checkpoint_dir "$OUT/old" > "$OUT/eval_old.log" 2>&1 \
  || { cat "$OUT/eval_old.log"; fail "eval of an old checkpoint with flags"; }
grep -q accuracy "$OUT/eval_old.log" || fail "eval of an old checkpoint printed no accuracy"
expect_fail "$OUT/e4.log" "has no model_config.json.*give --model_name, --input_shape and --num_classes" \
  "$STRATA" eval --data_dir "$OUT/data" --checkpoint_dir "$OUT/old"

# A damaged config: DATA_LOSS naming the file.
cp -r "$CKPT" "$OUT/bad"
sed -i 's/"units":3/"units":4/' "$OUT/bad/model_config.json"
expect_fail "$OUT/e5.log" "model_config.json: fails its CRC32C check" \
  "$STRATA" eval --data_dir "$OUT/data" --checkpoint_dir "$OUT/bad"
echo OK
