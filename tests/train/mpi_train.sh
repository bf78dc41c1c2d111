#!/usr/bin/env bash
# `mpirun -np N strata train --distribution_strategy multi_worker_mirrored` (issue 14), on tiny synthetic IDX data,
# 1 intra-op thread per rank:
#   - 2 and 4 workers with --deterministic end with bitwise-identical weights on every rank (their printed hashes),
#     and within a stated tolerance of 1 worker with the same global batch (numpy reads the checkpoints);
#   - a global batch that does not split evenly, a TF_CONFIG that disagrees with MPI, workers with different flags
#     and mpirun without the strategy are refused with errors that say so (and name the rank);
#   - one worker SIGKILLed mid-epoch: the job exits (no hang) within 60 s naming the rank, and --resume reaches
#     checkpoint files byte-identical to an uninterrupted 2-worker run.
# usage: mpi_train.sh STRATA
set -euo pipefail
# Under `make test-asan`: Open MPI keeps allocations until exit that LeakSanitizer reports (in its own libraries and
# components); leak checking is off for the workers, the other ASan and UBSan checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
STRATA=$1
command -v mpirun > /dev/null || { echo "SKIP: mpirun not installed (scripts/install-deps.sh: openmpi-bin)"; exit 77; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export OMP_WAIT_POLICY=passive OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
MPIRUN=(timeout 120 mpirun --oversubscribe --bind-to none)
# Under AddressSanitizer (make test-asan sets ASAN_OPTIONS): LeakSanitizer reports Open MPI's own allocations that
# MPI_Finalize keeps (ompi_op_base_op_select, hwloc bitmaps, its plugins' buffers: stacks inside libmpi/hwloc only),
# so leak checking is off for the MPI processes here; ASan's memory-error checks stay on. strata's own leaks are
# checked by every other test of the ASan suite.
if [[ -n "${ASAN_OPTIONS:-}" ]]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi
/usr/bin/python3 - "$OUT/data" <<'PY'
import numpy as np, os, struct, sys
d = sys.argv[1]; os.makedirs(d)
rng = np.random.default_rng(5)
def write(prefix, n):
    y = rng.integers(0, 3, n).astype(np.uint8)
    x = (rng.random((n, 8, 8)) * 200).astype(np.uint8)
    for i, c in enumerate(y):
        x[i, :, c * 2:c * 2 + 2] //= 2  # a faint class-dependent bar: the loss stays well above 0
    open(f'{d}/{prefix}-images-idx3-ubyte', 'wb').write(b'\0\0\x08\x03' + struct.pack('>3I', n, 8, 8) + x.tobytes())
    open(f'{d}/{prefix}-labels-idx1-ubyte', 'wb').write(b'\0\0\x08\x01' + struct.pack('>I', n) + y.tobytes())
write('train', 320); write('t10k', 64)
PY
COMMON=(--data_dir "$OUT/data" --model_name mlp --input_shape 8 8 1 --num_classes 3
        --learning_rate 0.003 --seed 7 --deterministic --intra_op_threads 1 --verbose 2 --keep_checkpoints 1)
FLAGS=("${COMMON[@]}" --batch_size 16 --epochs 3)
MW=(--distribution_strategy multi_worker_mirrored --collective_timeout_s 30)
fail() { echo "FAIL: $*"; exit 1; }

# 1 worker (no MPI at all) is the reference: 320 examples / 16 = 20 steps per epoch.
"$STRATA" train "${FLAGS[@]}" --checkpoint_dir "$OUT/w1" > "$OUT/w1.log" 2>&1 || { cat "$OUT/w1.log"; fail "1 worker"; }
for n in 2 4; do
  "${MPIRUN[@]}" -np $n "$STRATA" train "${FLAGS[@]}" "${MW[@]}" --checkpoint_dir "$OUT/w$n" --log_dir "$OUT/logs$n" \
    --export_dir "$OUT/export$n" > "$OUT/w$n.log" 2>&1 || { cat "$OUT/w$n.log"; fail "$n workers"; }
  # Only the chief writes logs and exports: one TensorBoard file per run, one CSV, one model.
  [ "$(ls "$OUT/logs$n/train" | grep -c tfevents)" = 1 ] || { ls -R "$OUT/logs$n"; fail "$n workers: not one event file"; }
  [ "$(grep -c '^[0-9]' "$OUT/logs$n/training.csv")" = 3 ] || fail "$n workers: training.csv is not 3 epochs once"
  test -f "$OUT/export$n/mlp/1/model.onnx" || fail "$n workers: no export"
  grep -q 'model_checkpoint_path: "ckpt-60"' "$OUT/w$n/checkpoint" || fail "$n workers: no ckpt-60"
  hashes=$(grep -o 'weights fnv1a64 [0-9a-f]*' "$OUT/w$n.log" | sort | uniq -c)
  [ "$(grep -c 'weights fnv1a64' "$OUT/w$n.log")" = $n ] || fail "$n workers: not every rank printed its hash"
  [ "$(wc -l <<< "$hashes")" = 1 ] || fail "$n workers: ranks hold different weights: $hashes"
  grep -q "global batch 16 = $n x $((16 / n))" "$OUT/w$n.log" || fail "$n workers: no global batch line"
  [ "$(grep -c '^Epoch 1/3' "$OUT/w$n.log")" = 1 ] || fail "$n workers: the progress is printed by more than rank 0"
  echo "PASS: $n workers, identical weights on every rank ($hashes)"
done
# N workers with global batch B against 1 worker with batch B: the same examples in every step, only the order of
# the float sums differs (per-worker means averaged vs one mean). Stated tolerance: every weight within 2e-5 absolute
# + 1e-4 relative after 60 Adam steps; the run-to-run difference of the 1-worker run itself is 0 (cli_resume.sh).
cat > "$OUT/st.py" <<'PY'
import json, struct
import numpy as np
def load(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    header = json.loads(raw[8:8 + n]); base = 8 + n
    return {k: np.frombuffer(raw[base + v['data_offsets'][0]:base + v['data_offsets'][1]], np.float32)
            for k, v in header.items() if k != '__metadata__'}
PY
/usr/bin/python3 - "$OUT" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from st import load
import numpy as np
out = sys.argv[1]
ref = load(f'{out}/w1/ckpt-60/model.safetensors')
for n in (2, 4):
    got = load(f'{out}/w{n}/ckpt-60/model.safetensors')
    assert got.keys() == ref.keys(), (got.keys(), ref.keys())
    worst = max(float(np.max(np.abs(got[k] - ref[k]) / (2e-5 + 1e-4 * np.abs(ref[k])))) for k in ref)
    diff = max(float(np.max(np.abs(got[k] - ref[k]))) for k in ref)
    moved = max(float(np.max(np.abs(ref[k]))) for k in ref)
    print(f'{n} workers vs 1: max |diff| {diff:.2e}, worst |diff| / (2e-5 + 1e-4 |w|) = {worst:.3f} (max |w| {moved:.3f})')
    assert worst <= 1.0, f'{n} workers differ from 1 worker beyond the tolerance'
PY
for n in 1 2 4; do echo "$n worker(s), epoch 3: $(grep '^20/20' "$OUT/w$n.log" | tail -1 | grep -o 'loss: [0-9.e-]*' | head -1)"; done

expect_error() {  # what, wanted text, command...
  local what=$1 want=$2; shift 2
  local out
  if out=$("$@" 2>&1); then fail "$what: exit 0 (want an error saying '$want')"; fi
  grep -qF -- "$want" <<< "$out" || { echo "$out" | tail -5; fail "$what: no '$want'"; }
  echo "PASS: $what"
}
expect_error "global batch not divisible" "--batch_size 18 is the global batch: it must split evenly across the 4" \
  "${MPIRUN[@]}" -np 4 "$STRATA" train "${COMMON[@]}" "${MW[@]}" --batch_size 18 --epochs 3
expect_error "TF_CONFIG disagrees with MPI" "but MPI started this process as rank" \
  "${MPIRUN[@]}" -np 2 -x TF_CONFIG='{"cluster": {"worker": ["a:1", "b:1", "c:1"]}, "task": {"type": "worker", "index": 0}}' \
  "$STRATA" train "${FLAGS[@]}" "${MW[@]}"
expect_error "workers with different flags" "the model config and training flags of rank 1 differs from rank 0's" \
  "${MPIRUN[@]}" -np 1 "$STRATA" train "${FLAGS[@]}" "${MW[@]}" : -np 1 "$STRATA" train "${FLAGS[@]}" "${MW[@]}" --optimizer sgd
expect_error "mpirun without the strategy" "pass --distribution_strategy multi_worker_mirrored" \
  "${MPIRUN[@]}" -np 2 "$STRATA" train "${FLAGS[@]}"
# TF_CONFIG that agrees with MPI's view is accepted (each rank gets its own index through a wrapper).
cat > "$OUT/tfconfig.sh" <<EOF
#!/bin/sh
export TF_CONFIG="{\"cluster\": {\"worker\": [\"h0:2222\", \"h1:2222\"]}, \"task\": {\"type\": \"worker\", \"index\": \$OMPI_COMM_WORLD_RANK}}"
exec "\$@"
EOF
chmod +x "$OUT/tfconfig.sh"
"${MPIRUN[@]}" -np 2 "$OUT/tfconfig.sh" "$STRATA" train "${FLAGS[@]}" "${MW[@]}" --steps_per_epoch 2 > "$OUT/tf.log" 2>&1 \
  || { cat "$OUT/tf.log"; fail "TF_CONFIG that agrees with MPI"; }
echo "PASS: TF_CONFIG that agrees with MPI"

# A worker killed mid-epoch: the job ends within 60 s naming the rank; --resume reaches the uninterrupted run.
"${MPIRUN[@]}" -np 2 "$STRATA" train "${FLAGS[@]}" "${MW[@]}" --checkpoint_dir "$OUT/run" --checkpoint_steps 1 \
  > "$OUT/killed.log" 2>&1 &
mpirun_pid=$!
victim=""
for _ in $(seq 1 3000); do  # rank 1's pid: timeout -> mpirun -> the workers
  for launcher in $(pgrep -P $mpirun_pid || true); do
    for p in $(pgrep -P "$launcher" || true); do
      tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
    done
  done
  [ -n "$victim" ] && break
  sleep 0.01
done
for _ in $(seq 1 100000); do  # until rank 0 has written a checkpoint in epoch 2 (bash builtins only: fast polls)
  state=""
  [ -f "$OUT/run/checkpoint" ] && state=$(< "$OUT/run/checkpoint")
  [[ $state =~ model_checkpoint_path:\ \"ckpt-(2[5-9]|3[0-9]) ]] && break
  [ -d /proc/$victim ] || break
done
[ -n "$victim" ] || { cat "$OUT/killed.log"; fail "could not find rank 1 to kill"; }
start=$(date +%s)
kill -9 "$victim"
rc=0
wait $mpirun_pid || rc=$?
took=$(( $(date +%s) - start ))
[ $rc -ne 0 ] || fail "the job with a killed worker exited 0"
[ $took -le 60 ] || fail "the job took ${took}s to end after a worker died"
grep -q "rank 1" "$OUT/killed.log" || { cat "$OUT/killed.log"; fail "the error does not name rank 1"; }
echo "PASS: killed rank 1 at $(grep -o 'ckpt-[0-9]*' "$OUT/run/checkpoint" | head -1): job ended in ${took}s, rc $rc:"
grep -m2 "rank 1" "$OUT/killed.log"
cp -r "$OUT/run" "$OUT/run4"
"${MPIRUN[@]}" -np 2 "$STRATA" train "${FLAGS[@]}" "${MW[@]}" --checkpoint_dir "$OUT/run" --checkpoint_steps 1 \
  --resume > "$OUT/resumed.log" 2>&1 || { cat "$OUT/resumed.log"; fail "resume"; }
grep -q 'resuming run' "$OUT/resumed.log" || fail "the resumed run did not resume"
for f in model.safetensors optimizer.safetensors; do
  cmp "$OUT/w2/ckpt-60/$f" "$OUT/run/ckpt-60/$f" || fail "resumed $f differs from the uninterrupted 2-worker run"
done
echo "PASS: resumed after the kill, byte-identical to the uninterrupted 2-worker run"
# The same checkpoint resumed by 4 workers: the global batches are the same ones (sharding by example), so it ends
# within the 1-worker tolerance of the uninterrupted run.
"${MPIRUN[@]}" -np 4 "$STRATA" train "${FLAGS[@]}" "${MW[@]}" --checkpoint_dir "$OUT/run4" --resume \
  > "$OUT/resumed4.log" 2>&1 || { cat "$OUT/resumed4.log"; fail "resume on 4 workers"; }
/usr/bin/python3 - "$OUT" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from st import load
import numpy as np
out = sys.argv[1]
ref, got = load(f'{out}/w2/ckpt-60/model.safetensors'), load(f'{out}/run4/ckpt-60/model.safetensors')
diff = max(float(np.max(np.abs(got[k] - ref[k]) / (2e-5 + 1e-4 * np.abs(ref[k])))) for k in ref)
print(f'resumed on 4 workers vs uninterrupted 2: worst |diff| / (2e-5 + 1e-4 |w|) = {diff:.3f}')
assert diff <= 1.0
PY
echo "PASS: a 2-worker checkpoint resumed on 4 workers"

# A worker that hangs (SIGSTOP: MPI cannot notice) and one that dies where the launcher keeps the others running
# (--enable-recovery): the others' collective timeout ends the job, naming the rank.
hang_test() {  # what, signal, extra mpirun flags...
  local what=$1 sig=$2; shift 2
  "${MPIRUN[@]}" "$@" -np 2 "$STRATA" train "${COMMON[@]}" --batch_size 16 --distribution_strategy multi_worker_mirrored \
    --collective_timeout_s 5 --epochs 50 > "$OUT/hang.log" 2>&1 &
  local pid=$! victim="" p launcher
  for _ in $(seq 1 3000); do
    for launcher in $(pgrep -P $pid || true); do
      for p in $(pgrep -P "$launcher" || true); do
        tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
      done
    done
    [ -n "$victim" ] && grep -q '^Epoch 2/' "$OUT/hang.log" && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$victim" ] || { cat "$OUT/hang.log"; kill $pid; fail "$what: no rank 1"; }
  local start=$(date +%s) rc=0
  kill -$sig "$victim"
  wait $pid || rc=$?
  local took=$(( $(date +%s) - start ))
  # (mpirun --enable-recovery itself exits 0 after MPI_Abort: only the time and the error are checked there.)
  [[ $rc -ne 0 || $* == *--enable-recovery* ]] && [ $took -le 60 ] || { tail "$OUT/hang.log"; fail "$what: rc $rc after ${took}s"; }
  # (the wait that times out is the gradients' or the metrics' averaging, whichever the stopped worker missed)
  grep -q "rank 0 of 2: .*did not complete within 5 s (--collective_timeout_s): rank 1 (pid $victim" \
    "$OUT/hang.log" || { tail "$OUT/hang.log"; fail "$what: rank 0's error does not name rank 1"; }
  echo "PASS: $what: the job ended in ${took}s: $(grep -o 'rank 0 of 2:.*' "$OUT/hang.log" | head -1)"
}
hang_test "a stopped worker" STOP
hang_test "a dead worker under --enable-recovery" KILL --enable-recovery
