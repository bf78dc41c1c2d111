#!/usr/bin/env bash
# make quickstart: the main job. On Fashion-MNIST (Debian dataset-fashion-mnist):
#   1. import the IDX files into sharded TFRecords of tf.train.Example (the data stratum);
#   2. train the small CNN (conv32-pool-conv64-pool-dense128-dropout0.25-dense10, Adam 1e-3, batch 64) for 3 epochs
#      (a fresh run each time: --overwrite replaces the checkpoints of an earlier quickstart),
#      evaluating on the test set after each epoch;
#   3. evaluate the saved weights;
#   4. export <out>/models/<model>/1/model.onnx with a serving signature (raw 0..255 pixels, /255 inside);
#   5. predict test images through the exported model and print its test accuracy.
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

IMAGES=()
for split in train t10k; do
  for kind in images labels; do
    f="$DATA/$split-$kind-idx$([ $kind = images ] && echo 3 || echo 1)-ubyte"
    [ -e "$f.gz" ] && f="$f.gz"
    IMAGES+=("$f")
  done
done

echo "== 1/5 strata data import-idx: Fashion-MNIST -> TFRecords of tf.train.Example"
"$STRATA" data import-idx --images "${IMAGES[0]}" --labels "${IMAGES[1]}" --out "$OUT/data/train" --shards 2 \
  --encoding raw
"$STRATA" data import-idx --images "${IMAGES[2]}" --labels "${IMAGES[3]}" --out "$OUT/data/test" --encoding raw

TRAIN_FLAGS=(--tfrecord_pattern "$OUT/data/train-*" --validation_pattern "$OUT/data/test-*" --model_name "$MODEL")

echo "== 2/5 strata train $MODEL ($EPOCHS epochs, evaluating on the test records after each)"
"$STRATA" train "${TRAIN_FLAGS[@]}" --epochs "$EPOCHS" --batch_size 64 --learning_rate 1e-3 --optimizer adam \
  --seed 0 --checkpoint_dir "$OUT/ckpt-$MODEL" --log_dir "$OUT/logs-$MODEL" --verbose 2 --overwrite

echo "== 3/5 strata eval (saved weights)"
"$STRATA" eval "${TRAIN_FLAGS[@]}" --checkpoint_dir "$OUT/ckpt-$MODEL"

echo "== 4/5 strata export"
"$STRATA" export --model_name "$MODEL" --checkpoint_dir "$OUT/ckpt-$MODEL" --export_base_dir "$OUT/models" \
  --version 1 --labels "${LABELS[@]}"

echo "== 5/5 predict test images through the exported model"
"$STRATA" eval --validation_pattern "$OUT/data/test-*" --model "$OUT/models/$MODEL/1/model.onnx" --show 5

echo "TensorBoard logs (scalars, weight histograms, graph): tensorboard --logdir $OUT/logs-$MODEL"
