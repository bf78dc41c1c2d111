#!/usr/bin/env bash
# Issue 13's bf16 top-1 agreement on 1,000 real images, with trained weights (BENCHMARKS.md, "bfloat16 inference").
# The torchvision ResNet-50 export (../shared/peers/torch/export_models.py: random weights, batch norm folded into
# the convolutions) is cut before its fc and trained by strata itself, every layer, with a new Dense(10) head, on
# Fashion-MNIST training images; then bench/bf16_agreement.py runs the exported model through
# `strata run --precision fp32|bf16` on the first IMAGES Fashion-MNIST test images (never trained on).
#   1. PNG class folders (python3-pil): the first TRAIN_IMAGES training images, the first IMAGES test images, and the
#      next VAL_IMAGES test images (phase A's validation);
#   2. phase A: SIZE_A x SIZE_A x 3 (default 64: about 12x cheaper than 224; the network is fully convolutional with
#      global pooling), EPOCHS_A epochs, Adam LR_A with cosine decay, gradients clipped to global norm 1, batch
#      BATCH_A, --mixed_precision MIXED; validated on test images IMAGES..IMAGES+VAL_IMAGES-1 (not the measured ones);
#   3. phase B: SIZE_B (default 224, the size the agreement is measured at), STEPS_B steps of BATCH_B from phase A's
#      weights (--weights), Adam LR_B, exported with --export_dir (the export takes raw 0..255 NHWC pixels);
#   4. `strata eval --model --show` of the export on the test folder (strata's own image pipeline, fp32), then
#      bf16_agreement.py --pixels raw --layout nhwc; the fp32 predictions and probabilities of the two must agree
#      image by image, which checks that the script feeds the images as strata's pipeline does.
# Both training phases resize the 28x28 grey images bilinearly to 3 channels, as the agreement images are.
# usage: bf16_agreement_trained.sh STRATA [DATA_DIR]
# env: WORK=DIR keeps the folders, logs and models; PHASE_A=DIR reuses a phase A (its --checkpoint_dir or one
#      ckpt-N); ONNX, HEAD_AT, TRAIN_IMAGES, SIZE_A, EPOCHS_A, BATCH_A, LR_A, SIZE_B, STEPS_B, BATCH_B, LR_B, MIXED,
#      IMAGES, VAL_IMAGES, BATCH, SEED, MIN_AGREEMENT (exit 1 below this agreement fraction).
# Exit 77 (skipped) without the ONNX export, the dataset or python3-pil/numpy.
set -euo pipefail
S=$1
D=${2:-${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}}
HERE=$(cd "$(dirname "$0")" && pwd)
ONNX=${ONNX:-/tmp/strata-peer-models/resnet50/model.onnx}
HEAD_AT=${HEAD_AT:-/avgpool/GlobalAveragePool_output_0}
TRAIN_IMAGES=${TRAIN_IMAGES:-10000}
SIZE_A=${SIZE_A:-64} EPOCHS_A=${EPOCHS_A:-2} BATCH_A=${BATCH_A:-32} LR_A=${LR_A:-2e-4}
SIZE_B=${SIZE_B:-224} STEPS_B=${STEPS_B:-450} BATCH_B=${BATCH_B:-8} LR_B=${LR_B:-5e-5}
MIXED=${MIXED:-bf16} IMAGES=${IMAGES:-1000} VAL_IMAGES=${VAL_IMAGES:-1000} BATCH=${BATCH:-40} SEED=${SEED:-0}
MIN_AGREEMENT=${MIN_AGREEMENT:-0}
if [[ ! -f "$ONNX" ]]; then
  echo "SKIP: $ONNX not found (export it: /usr/bin/python3 ../shared/peers/torch/export_models.py)"; exit 77
fi
if [[ ! -f "$D/train-images-idx3-ubyte.gz" && ! -f "$D/train-images-idx3-ubyte" ]]; then
  echo "SKIP: no Fashion-MNIST IDX files in $D"; exit 77
fi
if ! /usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null; then
  echo "SKIP: needs python3-numpy, python3-pil"; exit 77
fi
if [[ -n "${WORK:-}" ]]; then OUT=$WORK; mkdir -p "$OUT"; else OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT; fi
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
if [[ ! -f "$OUT/data/done-$TRAIN_IMAGES-$IMAGES-$VAL_IMAGES" ]]; then
  rm -rf "$OUT/data"
  /usr/bin/python3 - "$D" "$OUT/data" "$TRAIN_IMAGES" "$IMAGES" "$VAL_IMAGES" <<'PY'
import gzip, os, sys
import numpy as np
from PIL import Image
src, out, n_train, n_test, n_val = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def idx(name):
    path = os.path.join(src, name)
    d = gzip.open(path + '.gz').read() if os.path.exists(path + '.gz') else open(path, 'rb').read()
    dims = [int.from_bytes(d[4 + 4 * i:8 + 4 * i], 'big') for i in range(d[3])]
    return np.frombuffer(d, np.uint8, offset=4 + 4 * d[3]).reshape(dims)
def write(folder, x, y, first, count):
    for c in range(10):
        os.makedirs(os.path.join(out, folder, f'class{c}'), exist_ok=True)
    for i in range(first, first + count):
        Image.fromarray(x[i]).save(os.path.join(out, folder, f'class{y[i]}', f'{i:05d}.png'))
write('train', idx('train-images-idx3-ubyte'), idx('train-labels-idx1-ubyte'), 0, n_train)
xte, yte = idx('t10k-images-idx3-ubyte'), idx('t10k-labels-idx1-ubyte')
write('test', xte, yte, 0, n_test)
write('val', xte, yte, n_test, n_val)
open(os.path.join(out, f'done-{n_train}-{n_test}-{n_val}'), 'w').close()
PY
fi
COMMON=(--onnx_model "$ONNX" --head_at "$HEAD_AT" --model_name resnet50_fashion --num_classes 10 --optimizer adam
        --mixed_precision "$MIXED" --seed "$SEED" --verbose 2 --image_dir "$OUT/data/train" --keep_checkpoints 1)
echo "# ResNet-50 ($ONNX up to $HEAD_AT) + Dense(10), $TRAIN_IMAGES Fashion-MNIST training images, seed $SEED," \
  "$(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -z "${PHASE_A:-}" ]]; then
  PHASE_A=$OUT/phase_a
  VAL=()
  (( VAL_IMAGES > 0 )) && VAL=(--validation_image_dir "$OUT/data/val")
  t0=$SECONDS
  "$S" train "${COMMON[@]}" --input_shape "$SIZE_A" "$SIZE_A" 3 --batch_size "$BATCH_A" --epochs "$EPOCHS_A" \
    --learning_rate "$LR_A" --lr_schedule cosine --global_clipnorm 1.0 "${VAL[@]}" --checkpoint_dir "$PHASE_A" \
    --overwrite > "$OUT/phase_a.log" 2>&1 || { tail -20 "$OUT/phase_a.log"; exit 1; }
  echo "phase A (${SIZE_A}x${SIZE_A}, $EPOCHS_A epochs of batch $BATCH_A, Adam $LR_A cosine, $MIXED," \
    "$((SECONDS - t0)) s):" \
    "$(grep -o 'loss: [0-9.e+-]* - accuracy: [0-9.]*.*' "$OUT/phase_a.log" | tail -1)"
fi
A_CKPT=$PHASE_A
[[ -f "$A_CKPT/model.safetensors" ]] || A_CKPT=$(ls -d "$PHASE_A"/ckpt-* | sort -t- -k2 -n | tail -1)
t0=$SECONDS
rm -rf "$OUT/export"
"$S" train "${COMMON[@]}" --input_shape "$SIZE_B" "$SIZE_B" 3 --batch_size "$BATCH_B" --epochs 1 \
  --steps_per_epoch "$STEPS_B" --learning_rate "$LR_B" --weights "$A_CKPT" --checkpoint_dir "$OUT/phase_b" \
  --overwrite --export_dir "$OUT/export" > "$OUT/phase_b.log" 2>&1 || { tail -20 "$OUT/phase_b.log"; exit 1; }
echo "phase B (${SIZE_B}x${SIZE_B}, $STEPS_B steps of batch $BATCH_B, Adam $LR_B, $MIXED, $((SECONDS - t0)) s):" \
  "$(grep -o 'loss: [0-9.e+-]* - accuracy: [0-9.]*' "$OUT/phase_b.log" | tail -1)"
MODEL=$OUT/export/resnet50_fashion/1/model.onnx
"$S" eval --model "$MODEL" --validation_image_dir "$OUT/data/test" --input_shape "$SIZE_B" "$SIZE_B" 3 \
  --show "$IMAGES" > "$OUT/eval.log" 2>&1 || { tail -20 "$OUT/eval.log"; exit 1; }
EVAL_ACC=$(grep -o 'test accuracy .*: [0-9.]* on [0-9]* examples' "$OUT/eval.log" | sed 's/.*: \([0-9.]*\) on.*/\1/')
echo "strata eval (fp32, strata's image pipeline) on test images 0..$((IMAGES - 1)) at ${SIZE_B}x${SIZE_B}: $EVAL_ACC"
set +e
/usr/bin/python3 "$HERE/bf16_agreement.py" --strata "$S" --model "$MODEL" --input_name input_image \
  --output_name logits --pixels raw --layout nhwc --size "$SIZE_B" --images "$IMAGES" --batch "$BATCH" \
  --data "$(ls "$D"/t10k-images-idx3-ubyte* | head -1)" --min_agreement "$MIN_AGREEMENT" \
  --save_logits "$OUT/logits.npz" | tee "$OUT/agreement.log"
rc=${PIPESTATUS[0]}
set -e
[[ $rc == 0 ]] || exit "$rc"
# strata eval --show printed each test image's fp32 prediction and its probability, in the folder's order (class
# folders, then file names, which are the images' indices): the script's fp32 logits must give the same.
/usr/bin/python3 - "$OUT/eval.log" "$OUT/logits.npz" "$OUT/data/test" <<'PY'
import os, re, sys
import numpy as np
log, npz, folder = sys.argv[1:]
order = [int(f[:-4]) for c in sorted(os.listdir(folder)) if os.path.isdir(os.path.join(folder, c))
         for f in sorted(os.listdir(os.path.join(folder, c)))]
shown = re.findall(r'^example (\d+): predicted (\S+) \(p=([0-9.]+)\)', open(log).read(), re.M)
f32 = np.load(npz)['fp32']
if len(shown) != len(order) or len(order) != len(f32):
    sys.exit(f"FAIL: strata eval showed {len(shown)} predictions, the folder holds {len(order)} images, the script "
             f"ran {len(f32)}")
prob = np.exp(f32 - f32.max(1, keepdims=True))
prob /= prob.sum(1, keepdims=True)
same, worst = 0, 0.0
for (k, pred, p), i in zip(shown, order):
    c = int(pred)
    same += c == int(f32[i].argmax())
    worst = max(worst, abs(float(p) - prob[i, c]))
print(f"strata eval vs bf16_agreement.py (fp32, image by image): the same class for {same} of {len(order)}, "
      f"probabilities within {worst:.2g} (eval prints 3 decimals)")
if same < len(order) - 1 or worst > 2e-3:
    sys.exit("FAIL: bf16_agreement.py does not feed the images as strata's pipeline does")
PY
