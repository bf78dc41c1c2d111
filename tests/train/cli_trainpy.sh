#!/usr/bin/env bash
# strata train takes a production train.py's command line: --data_dir D --tfrecord_pattern 'train-*.tfrecord' (the
# pattern under D) with --model_name --num_classes --batch_size --learning_rate --lr_schedule --num_gpus
# --distributed_strategy (or TF's --distribution_strategy) --mixed_precision --enable_xla --checkpoint_dir --log_dir.
# (--mixed_precision bf16|fp16 train since issue 13.) Flags whose feature is not built are refused with a message and a non-zero exit, never ignored; dashes are accepted
# for underscores (--learning-rate); an unknown flag or config key names the closest valid one; a config value of the wrong type names the key and the type expected.
# usage: cli_trainpy.sh STRATA
set -uo pipefail
STRATA=$1
DATA=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
failures=0 passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }

"$STRATA" data import-idx --images "$DATA/t10k-images-idx3-ubyte.gz" --labels "$DATA/t10k-labels-idx1-ubyte.gz" \
  --out "$OUT/data/train" --shards 2 > /dev/null || { echo "import-idx failed"; exit 1; }
"$STRATA" data import-idx --images "$DATA/t10k-images-idx3-ubyte.gz" --labels "$DATA/t10k-labels-idx1-ubyte.gz" \
  --out "$OUT/data/validation" --shards 1 > /dev/null || { echo "import-idx failed"; exit 1; }
base=(--data_dir "$OUT/data" --tfrecord_pattern 'train-*.tfrecord' --model_name mlp --epochs 1 --steps_per_epoch 3
      --batch_size 32 --verbose 0)

# The guide's command line, every flag given with a value strata supports.
if "$STRATA" train --data_dir "$OUT/data" --tfrecord_pattern 'train-*.tfrecord' --model_name mlp --num_classes 10 \
     --batch_size 32 --learning_rate 0.001 --lr_schedule cosine --num_gpus 0 --distributed_strategy mirrored \
     --mixed_precision none --enable_xla --checkpoint_dir "$OUT/ckpt" --log_dir "$OUT/logs" --epochs 1 \
     --steps_per_epoch 3 --validation_pattern 'validation-*.tfrecord' --verbose 0 > "$OUT/guide.log" 2>&1; then
  # Trained from the TFRecords under --data_dir (there are no IDX files there), validated, checkpointed, logged.
  grep -q "training without validation" "$OUT/guide.log" && fail "the guide's run did not validate"
  [ -f "$OUT/ckpt/checkpoint" ] || fail "no checkpoint state file in --checkpoint_dir"
  head -1 "$OUT/logs/training.csv" | grep -q val_loss || fail "training.csv has no val_loss: $(head -1 "$OUT/logs/training.csv")"
  pass
else
  fail "the guide's command line: $(tail -3 "$OUT/guide.log")"
fi
# TF's spelling of the strategy flag, and mirrored/one_device/default in one process; no validation pattern: said.
if "$STRATA" train "${base[@]}" --distribution_strategy one_device > "$OUT/tf.log" 2>&1; then
  grep -q "training without validation" "$OUT/tf.log" && pass || fail "no word that it trains without validation"
else
  fail "--distribution_strategy one_device: $(tail -2 "$OUT/tf.log")"
fi

# expect_error DESCRIPTION EXPECTED_TEXT ARGS...: a non-zero exit whose message holds EXPECTED_TEXT.
expect_error() {
  local what=$1 want=$2
  shift 2
  local out
  if out=$("$STRATA" train "$@" 2>&1); then
    fail "$what: exit 0 (want an error saying '$want')"
  elif ! grep -qF -- "$want" <<< "$out"; then
    fail "$what: message '$(tail -1 <<< "$out")' does not say '$want'"
  else
    pass
  fi
}
expect_error "--num_gpus 2" "no GPU support" "${base[@]}" --num_gpus 2
# multi_worker_mirrored is built (tests/train/mpi_train.sh runs it under mpirun); its flags are checked here.
expect_error "multi-worker strategy, bad timeout" "--collective_timeout_s (0) must be > 0" "${base[@]}" \
  --distribution_strategy multi_worker_mirrored --collective_timeout_s 0
expect_error "the same, train.py's spelling" "--allreduce_bucket_mb (-1) and" "${base[@]}" \
  --distributed_strategy MultiWorkerMirroredStrategy --allreduce_bucket_mb -1
expect_error "an unknown strategy" "'tpu' is not known" "${base[@]}" --distributed_strategy tpu
# Mixed precision (issue 13): bf16 and fp16 (with loss scaling) train; Keras's policy names are accepted too.
for mp in bf16 fp16 mixed_bfloat16; do
  if "$STRATA" train "${base[@]}" --mixed_precision "$mp" > "$OUT/mp.log" 2>&1; then
    pass
  else
    fail "--mixed_precision $mp: $(tail -2 "$OUT/mp.log")"
  fi
done
expect_error "an unknown precision" "mixed_float16 (fp16), got 'fp8'" "${base[@]}" --mixed_precision fp8
expect_error "an unknown loss scaling" "--loss_scale expects auto" "${base[@]}" --loss_scale fixed
expect_error "a misspelt flag" "unknown flag --batchsize (did you mean --batch_size?)" "${base[@]}" --batchsize 3
# Dashes are accepted as aliases of TensorFlow's underscore spelling.
if "$STRATA" train --data-dir "$OUT/data" --tfrecord-pattern 'train-*.tfrecord' --model-name mlp --epochs 1 \
     --steps-per-epoch 2 --batch-size 16 --learning-rate 0.01 --verbose 0 > "$OUT/dashes.log" 2>&1; then
  pass
else
  fail "dashed flags: $(tail -2 "$OUT/dashes.log")"
fi
expect_error "a misspelt dashed flag" "unknown flag --learning-rat (did you mean" "${base[@]}" --learning-rat 0.1
expect_error "a bad --lr_schedule" "--lr_schedule must be constant, step, cosine or poly" "${base[@]}" \
  --lr_schedule linear
echo '{"batch_sise": 64}' > "$OUT/unknown.json"
expect_error "an unknown config key" "unknown key 'batch_sise' (did you mean 'batch_size'?)" "${base[@]}" \
  --config "$OUT/unknown.json"
echo '{"learning_rate": "0.1"}' > "$OUT/type.json"
expect_error "a config value of the wrong type" "'learning_rate' must be a number" "${base[@]}" --config "$OUT/type.json"
echo '{"enable_xla": 1}' > "$OUT/bool.json"
expect_error "a config flag that is not a bool" "'enable_xla' must be true or false" "${base[@]}" \
  --config "$OUT/bool.json"
echo '{"num_gpus": 1}' > "$OUT/gpus.json"
expect_error "--num_gpus from a config file" "no GPU support" "${base[@]}" --config "$OUT/gpus.json"
expect_error "a pattern that matches nothing under --data_dir" "nothing-*.tfrecord" --data_dir "$OUT/data" \
  --tfrecord_pattern 'nothing-*.tfrecord' --model_name mlp --epochs 1 --verbose 0

# A run that diverges (SGD at lr 1e8) stops at the first NaN loss, naming the step; --check_numerics names the op;
# --terminate_on_nan=false trains on.
diverge=(--data_dir "$OUT/data" --tfrecord_pattern 'train-*.tfrecord' --model_name mlp --epochs 1 --steps_per_epoch 20
         --batch_size 32 --verbose 0 --optimizer sgd --learning_rate 1e8)
expect_error "a NaN loss" "TerminateOnNaN: the loss is nan after training step" "${diverge[@]}"
expect_error "--check_numerics" "check_numerics: node '" "${diverge[@]}" --check_numerics
if "$STRATA" train "${diverge[@]}" --terminate_on_nan=false > "$OUT/nan.log" 2>&1; then
  pass
else
  fail "--terminate_on_nan=false did not train on: $(tail -1 "$OUT/nan.log")"
fi

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
