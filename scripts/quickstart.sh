#!/usr/bin/env bash
# make quickstart: the main job. On Fashion-MNIST (Debian dataset-fashion-mnist):
#   1. train the small CNN (conv32-pool-conv64-pool-dense128-dropout0.25-dense10, Adam 1e-3, batch 64) for 3 epochs,
#      evaluating on the test set after each epoch;
#   2. evaluate the saved weights;
#   3. export <out>/models/<model>/1/model.onnx with a serving signature (raw 0..255 pixels, /255 inside);
#   4. predict test images through the exported model and print its test accuracy.
# QUICKSTART_MODEL=mlp QUICKSTART_EPOCHS=5 selects the MLP run.
set -euo pipefail
BUILD=${1:-build}
STRATA="$BUILD/strata"
DATA=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
OUT=${QUICKSTART_OUT:-out/quickstart}
MODEL=${QUICKSTART_MODEL:-cnn_small}
EPOCHS=${QUICKSTART_EPOCHS:-3}
LABELS=(T-shirt/top Trouser Pullover Dress Coat Sandal Shirt Sneaker Bag "Ankle boot")
mkdir -p "$OUT"

if [ ! -e "$DATA/train-images-idx3-ubyte.gz" ] && [ ! -e "$DATA/train-images-idx3-ubyte" ]; then
  echo "Fashion-MNIST not found in $DATA (apt-get install dataset-fashion-mnist, or set FASHION_MNIST_DIR)" >&2
  exit 1
fi

run_train() {
  "$STRATA" train --data_dir "$DATA" --model_name "$1" --epochs "$2" --batch_size 64 --learning_rate 1e-3 \
    --optimizer adam --seed 0 --checkpoint_dir "$OUT/ckpt-$1" --log_dir "$OUT/logs-$1" --verbose 2
}

echo "== 1/4 strata train $MODEL on Fashion-MNIST ($EPOCHS epochs)"
if ! run_train "$MODEL" "$EPOCHS" 2> "$OUT/train-$MODEL.err"; then
  cat "$OUT/train-$MODEL.err" >&2
  if grep -q "no gradient is defined" "$OUT/train-$MODEL.err" && [ "$MODEL" != mlp ]; then
    # The conv/pool gradients come with the gradients work; until they land, show the pipeline on the MLP.
    echo "!! $MODEL cannot train on this build yet (a gradient is missing, above); running the MLP instead" >&2
    MODEL=mlp
    EPOCHS=5
    run_train "$MODEL" "$EPOCHS"
  else
    exit 1
  fi
fi

echo "== 2/4 strata eval (saved weights)"
"$STRATA" eval --data_dir "$DATA" --model_name "$MODEL" --checkpoint_dir "$OUT/ckpt-$MODEL"

echo "== 3/4 strata export"
"$STRATA" export --model_name "$MODEL" --checkpoint_dir "$OUT/ckpt-$MODEL" --export_base_dir "$OUT/models" \
  --version 1 --labels "${LABELS[@]}"

echo "== 4/4 predict test images through the exported model"
"$STRATA" eval --data_dir "$DATA" --model "$OUT/models/$MODEL/1/model.onnx" --show 5

echo "TensorBoard logs (scalars, weight histograms, graph): tensorboard --logdir $OUT/logs-$MODEL"
