#!/usr/bin/env bash
# torchvision's ResNet-18, exported to ONNX by Debian's PyTorch (random weights, 32x32 input), fine-tuned through
# `strata train --onnx_model --head_at` with a new 3-class head on a tiny 3-channel dataset: the loss must go down,
# the test accuracy must beat chance clearly, the backbone's initializers must have trained, and the result exports.
# Skipped (77) without python3-torch / python3-torchvision / python3-onnx. usage: cli_onnx_finetune.sh STRATA SRC_DIR
set -euo pipefail
STRATA=$1 SRC=$2
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_WAIT_POLICY=passive
fail() { echo "FAIL: $*"; exit 1; }
if ! /usr/bin/python3 -c 'import torch, torchvision, onnx, numpy' 2>/dev/null; then
  echo "SKIP: needs Debian's python3-torch, python3-torchvision, python3-onnx, python3-numpy"; exit 77
fi
HEAD_AT=$(/usr/bin/python3 "$SRC/tests/train/export_torchvision_resnet18.py" "$OUT" 32 2>/dev/null | tail -1)
[ -n "$HEAD_AT" ] || fail "the export printed no head tensor"
"$STRATA" train --onnx_model "$OUT/resnet18.onnx" --head_at "$HEAD_AT" --model_name resnet18_ft \
  --data_dir "$OUT/data" --input_shape 32 32 3 --num_classes 3 --batch_size 32 --epochs 3 --learning_rate 3e-4 \
  --seed 0 --verbose 2 --checkpoint_dir "$OUT/ckpt" --keep_checkpoints 1 --export_dir "$OUT/export" \
  > "$OUT/log" 2>&1 || { cat "$OUT/log"; fail "strata train --onnx_model"; }
grep -v '^ .*(' "$OUT/log" || true
/usr/bin/python3 - "$OUT/log" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
losses = [float(x) for x in re.findall(r' - loss: ([0-9.eE+-]+)', text)]
acc = float(re.search(r'^test accuracy: ([0-9.]+)', text, re.M).group(1))
print('epoch losses', losses, 'test accuracy', acc)
assert len(losses) == 3 and losses[-1] < 0.7 * losses[0], 'the loss did not go down'
assert acc > 0.6, 'test accuracy %.3f is not clearly above chance (1/3)' % acc
PY
# The backbone trained: its first conv's weights differ from the ONNX file's initializer.
/usr/bin/python3 - "$OUT/resnet18.onnx" "$(ls -d "$OUT"/ckpt/ckpt-*)/model.safetensors" <<'PY'
import json, struct, sys
import numpy as np, onnx
from onnx import numpy_helper
m = onnx.load(sys.argv[1])
inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
b = open(sys.argv[2], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
conv = [x for x in m.graph.node if x.op_type == 'Conv'][0].input[1]
meta = h['onnx_graph/' + conv]
lo, hi = meta['data_offsets']
w = np.frombuffer(b[8 + n + lo:8 + n + hi], '<f4').reshape(meta['shape'])
assert w.shape == inits[conv].shape
diff = float(np.abs(w - inits[conv]).max())
print('first conv', conv, 'max change', diff)
assert diff > 1e-5, 'the backbone did not train'
PY
ls "$OUT"/export/resnet18_ft/1/model.onnx > /dev/null || fail "no export"
echo "cli_onnx_finetune: passed"
