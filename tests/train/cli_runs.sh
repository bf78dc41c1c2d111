#!/usr/bin/env bash
# `strata train` on hostile inputs, run as a user would:
#  - run ids: a fresh run in another run's --checkpoint_dir is refused (nothing written) unless --overwrite, which
#    says what it deletes; --resume names the run it continues and keeps its run id; checkpoints written before run
#    ids (no run_id in state.json) still resume, with a warning;
#  - GZIP/ZLIB TFRecords written by `strata data import-idx --compression`: GZIP is detected, --compression names
#    either, and plain reading of a compressed file says what to pass;
#  - a label outside [0, num_classes) is reported with the example's file and record index.
# Tiny synthetic IDX data (python3 + numpy), well under a minute. usage: cli_runs.sh STRATA
set -euo pipefail
STRATA=$1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_WAIT_POLICY=passive
fail() { echo "FAIL: $*"; exit 1; }
# expect_fail LOG CMD...: CMD must exit non-zero; its output goes to LOG.
expect_fail() {
  local log=$1; shift
  if "$@" > "$log" 2>&1; then cat "$log"; fail "expected a failure: $*"; fi
}
# expect_in LOG TEXT: the fixed string TEXT is in LOG.
expect_in() { grep -qF -- "$2" "$1" || { cat "$1"; fail "'$2' not in $1"; }; }
run_id() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1/state.json"; }

/usr/bin/python3 - "$OUT/data" "$OUT/bad" <<'PY'
import numpy as np, os, struct, sys
rng = np.random.default_rng(4)
def write(d, prefix, n, bad=None):
    os.makedirs(d, exist_ok=True)
    y = rng.integers(0, 3, n).astype(np.uint8)
    x = (rng.random((n, 8, 8)) * 60).astype(np.uint8)
    for i, c in enumerate(y):
        x[i, :, c * 2:c * 2 + 2] += 150  # a class-dependent bar
    if bad is not None:
        y[bad] = 5  # one label outside [0, 3)
    open(f'{d}/{prefix}-images-idx3-ubyte', 'wb').write(b'\0\0\x08\x03' + struct.pack('>3I', n, 8, 8) + x.tobytes())
    open(f'{d}/{prefix}-labels-idx1-ubyte', 'wb').write(b'\0\0\x08\x01' + struct.pack('>I', n) + y.tobytes())
write(sys.argv[1], 'train', 96); write(sys.argv[1], 't10k', 32)
write(sys.argv[2], 'train', 96, bad=37); write(sys.argv[2], 't10k', 32)
PY
MODEL=(--model_name mlp --input_shape 8 8 1 --num_classes 3 --batch_size 16)
COMMON=("${MODEL[@]}" --learning_rate 0.01 --seed 7 --verbose 0)

# ---- run ids ----
CK=$OUT/ck
"$STRATA" train "${COMMON[@]}" --data_dir "$OUT/data" --epochs 1 --checkpoint_dir "$CK" > "$OUT/a.log" 2>&1 ||
  { cat "$OUT/a.log"; fail "first run"; }
RUN_A=$(run_id "$CK/ckpt-6")
[[ "$RUN_A" =~ ^[0-9a-f]{16}$ ]] || fail "run id '$RUN_A' is not 16 hex digits"
expect_in "$OUT/a.log" "starting run $RUN_A in $CK"
cp -r "$CK" "$OUT/ck_before"
# A second fresh run in the same directory: refused, naming the other run and the way out; nothing is written.
expect_fail "$OUT/b.log" "$STRATA" train "${COMMON[@]}" --data_dir "$OUT/data" --epochs 1 --checkpoint_dir "$CK"
expect_in "$OUT/b.log" "holds the checkpoints of another run (run $RUN_A: 1 checkpoint, step 6; latest '$CK/ckpt-6', which resumes at epoch 2"
expect_in "$OUT/b.log" "Pass --resume to continue that run, --overwrite to delete them"
diff -r "$OUT/ck_before" "$CK" > /dev/null || fail "the refused run changed $CK"
expect_fail "$OUT/ro.log" "$STRATA" train "${COMMON[@]}" --data_dir "$OUT/data" --checkpoint_dir "$CK" --resume --overwrite
expect_in "$OUT/ro.log" "give one"
# --resume continues run A, says so, and its new checkpoints keep A's run id.
"$STRATA" train "${COMMON[@]}" --data_dir "$OUT/data" --epochs 2 --checkpoint_dir "$CK" --resume > "$OUT/c.log" 2>&1 ||
  { cat "$OUT/c.log"; fail "resume"; }
expect_in "$OUT/c.log" "resuming run $RUN_A from $CK/ckpt-6: step 6, epoch 2, batch 0"
[ "$(run_id "$CK/ckpt-12")" = "$RUN_A" ] || fail "the resumed run's checkpoint has another run id"
# --overwrite: a new run B, after saying which checkpoints of run A it deletes.
"$STRATA" train "${COMMON[@]}" --data_dir "$OUT/data" --epochs 1 --checkpoint_dir "$CK" --overwrite > "$OUT/d.log" 2>&1 ||
  { cat "$OUT/d.log"; fail "overwrite"; }
expect_in "$OUT/d.log" "--overwrite: deleting the checkpoints in $CK of run $RUN_A: 2 checkpoints, steps 6..12"
RUN_B=$(run_id "$CK/ckpt-6")
[ "$RUN_B" != "$RUN_A" ] || fail "--overwrite kept run id $RUN_A"
[ ! -e "$CK/ckpt-12" ] || fail "--overwrite left run A's ckpt-12"
grep -q 'model_checkpoint_path: "ckpt-6"' "$CK/checkpoint" || { cat "$CK/checkpoint"; fail "state file"; }

# Checkpoints written before run ids: strip run_id from state.json; refused for a fresh run, resumed with a warning.
/usr/bin/python3 - "$CK/ckpt-6/state.json" <<'PY'
import json, sys
p = sys.argv[1]; st = json.load(open(p)); del st['run_id']; open(p, 'w').write(json.dumps(st, indent=1) + '\n')
PY
expect_fail "$OUT/e.log" "$STRATA" train "${COMMON[@]}" --data_dir "$OUT/data" --epochs 1 --checkpoint_dir "$CK"
expect_in "$OUT/e.log" "run <unknown> (written before run ids): 1 checkpoint, step 6"
"$STRATA" train "${COMMON[@]}" --data_dir "$OUT/data" --epochs 2 --checkpoint_dir "$CK" --resume > "$OUT/f.log" 2>&1 ||
  { cat "$OUT/f.log"; fail "resume of a checkpoint without run id"; }
expect_in "$OUT/f.log" "resuming run <unknown> (written before run ids) from $CK/ckpt-6: step 6, epoch 2"
expect_in "$OUT/f.log" "has no run id (written before run ids): continuing it as an unknown run"
RUN_C=$(run_id "$CK/ckpt-12")
[[ "$RUN_C" =~ ^[0-9a-f]{16}$ ]] || fail "the continued unknown run wrote run id '$RUN_C'"
echo "run ids: OK"

# ---- GZIP and ZLIB TFRecords from import-idx ----
for c in GZIP ZLIB; do
  for split in train t10k; do
    "$STRATA" data import-idx --images "$OUT/data/$split-images-idx3-ubyte" --labels "$OUT/data/$split-labels-idx1-ubyte" \
      --out "$OUT/$c/$split" --shards 2 --encoding raw --compression $c > /dev/null
  done
done
"$STRATA" data inspect "$OUT/GZIP/train-00000-of-00002.tfrecord" > /dev/null  # data inspect reads it (auto)
TF_GZIP=(--tfrecord_pattern "$OUT/GZIP/train-*.tfrecord" --validation_pattern "$OUT/GZIP/t10k-*.tfrecord")
TF_ZLIB=(--tfrecord_pattern "$OUT/ZLIB/train-*.tfrecord" --validation_pattern "$OUT/ZLIB/t10k-*.tfrecord")
# GZIP detected by its magic bytes, and named.
"$STRATA" train "${COMMON[@]}" "${TF_GZIP[@]}" --epochs 1 > "$OUT/g1.log" 2>&1 || { cat "$OUT/g1.log"; fail "GZIP (auto)"; }
expect_in "$OUT/g1.log" "test accuracy:"
"$STRATA" train "${COMMON[@]}" "${TF_GZIP[@]}" --epochs 1 --compression GZIP > "$OUT/g2.log" 2>&1 ||
  { cat "$OUT/g2.log"; fail "--compression GZIP"; }
# With a checkpoint directory too (the dataset manifest reads the compressed files).
"$STRATA" train "${COMMON[@]}" "${TF_GZIP[@]}" --epochs 1 --checkpoint_dir "$OUT/ckg" > "$OUT/g3.log" 2>&1 ||
  { cat "$OUT/g3.log"; fail "GZIP with --checkpoint_dir"; }
# Read as plain records: the error says what to pass.
expect_fail "$OUT/g4.log" "$STRATA" train "${COMMON[@]}" "${TF_GZIP[@]}" --epochs 1 --compression NONE
expect_in "$OUT/g4.log" "this looks like a GZIP file; pass --compression GZIP"
# ZLIB is not guessed (a plain file can start like a zlib header), but the error names it; --compression reads it.
expect_fail "$OUT/z1.log" "$STRATA" train "${COMMON[@]}" "${TF_ZLIB[@]}" --epochs 1
expect_in "$OUT/z1.log" "this looks like a ZLIB file; pass --compression ZLIB"
"$STRATA" train "${COMMON[@]}" "${TF_ZLIB[@]}" --epochs 1 --compression ZLIB > "$OUT/z2.log" 2>&1 ||
  { cat "$OUT/z2.log"; fail "--compression ZLIB"; }
# eval reads them the same way.
"$STRATA" eval "${MODEL[@]}" --validation_pattern "$OUT/GZIP/t10k-*.tfrecord" --checkpoint_dir "$OUT/ckg" \
  > "$OUT/g5.log" 2>&1 || { cat "$OUT/g5.log"; fail "eval of GZIP records"; }
expect_in "$OUT/g5.log" "accuracy"
expect_fail "$OUT/z3.log" "$STRATA" eval "${MODEL[@]}" --validation_pattern "$OUT/GZIP/t10k-*.tfrecord" \
  --checkpoint_dir "$OUT/ckg" --compression ZLIB
expect_in "$OUT/z3.log" "this looks like a GZIP file; pass --compression GZIP"
echo "compressed TFRecords: OK"

# ---- a label outside [0, num_classes): the example's file and record index ----
expect_fail "$OUT/l1.log" "$STRATA" train "${COMMON[@]}" --data_dir "$OUT/bad" --epochs 1
expect_in "$OUT/l1.log" "label 5 of example record 37 of '$OUT/bad/train-images-idx3-ubyte' is outside the valid range [0, 3)"
"$STRATA" data import-idx --images "$OUT/bad/train-images-idx3-ubyte" --labels "$OUT/bad/train-labels-idx1-ubyte" \
  --out "$OUT/badrec/train" --shards 2 --encoding png > /dev/null
expect_fail "$OUT/l2.log" "$STRATA" train "${COMMON[@]}" --tfrecord_pattern "$OUT/badrec/train-*.tfrecord" --epochs 1
# 96 records in 2 shards: record 37 is record 37 of the first file.
expect_in "$OUT/l2.log" "label 5 of example record 37"
expect_in "$OUT/l2.log" "of '$OUT/badrec/train-00000-of-00002.tfrecord' is outside the valid range [0, 3)"
echo "label range: OK"
echo OK
