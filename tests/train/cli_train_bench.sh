#!/usr/bin/env bash
# `strata train-bench --steps N --warmup_steps W` times exactly N steps after W untimed ones (the zoo benchmark,
# bench/train/zoo_training.sh, needs few steps of models whose step takes seconds); negative --steps and
# --warmup_steps 0 are refused with the flag named. usage: cli_train_bench.sh STRATA
set -euo pipefail
STRATA=$1
fail() { echo "FAIL: $*"; exit 1; }
export OMP_WAIT_POLICY=passive
out=$("$STRATA" train-bench --model_name mlp --batch_size 8 --intra_op_threads 1 --steps 3 --warmup_steps 2) ||
  fail "train-bench --steps 3 --warmup_steps 2: $out"
echo "$out"
echo "$out" | grep -q '"warmup_steps": 2, "steps": 3,' || fail "expected 2 warm-up and 3 timed steps in: $out"
echo "$out" | grep -Eq '"images_per_s": [0-9]+\.[0-9]' || fail "no images_per_s in: $out"
# Without --steps the count still follows --min_seconds (at least 10: --min_seconds 0 gives 10).
out=$("$STRATA" train-bench --model_name mlp --batch_size 8 --intra_op_threads 1 --min_seconds 0)
echo "$out" | grep -q '"warmup_steps": 4, "steps": 10,' || fail "default: expected 4 warm-up and 10 timed steps in: $out"
if err=$("$STRATA" train-bench --model_name mlp --steps -1 2>&1); then fail "--steps -1 accepted"; fi
echo "$err" | grep -q -- '--steps must be 0 (timed by --min_seconds) or positive, got -1' || fail "unclear error: $err"
if err=$("$STRATA" train-bench --model_name mlp --warmup_steps 0 2>&1); then fail "--warmup_steps 0 accepted"; fi
echo "$err" | grep -q -- '--warmup_steps must be at least 1' || fail "unclear error: $err"
echo PASS
