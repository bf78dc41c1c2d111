#!/usr/bin/env bash
# The strata CLI's default for libgomp's idle polling (src/cli/omp_env.cc): with neither GOMP_SPINCOUNT nor
# OMP_WAIT_POLICY set, libgomp reads GOMP_SPINCOUNT as 3000 (its own default is 300000); whatever the user sets wins,
# and other variables read as before. libgomp prints what it read under OMP_DISPLAY_ENV=verbose.
# usage: cli_omp_spincount.sh STRATA
set -euo pipefail
STRATA=$1
fail() { echo "FAIL: $*"; exit 1; }
spin() {  # the GOMP_SPINCOUNT libgomp reports, under the environment given as arguments
  env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY "$@" OMP_DISPLAY_ENV=verbose "$STRATA" version 2>&1 |
    sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'.*/\1/p"
}
[ "$(spin)" = 3000 ] || fail "default: libgomp read GOMP_SPINCOUNT '$(spin)', expected 3000"
[ "$(spin GOMP_SPINCOUNT=777)" = 777 ] || fail "GOMP_SPINCOUNT=777 read as '$(spin GOMP_SPINCOUNT=777)'"
[ "$(spin GOMP_SPINCOUNT=0)" = 0 ] || fail "GOMP_SPINCOUNT=0 read as '$(spin GOMP_SPINCOUNT=0)'"
# OMP_WAIT_POLICY alone keeps libgomp's own spin counts for it (passive: 0, active: 30 billion).
[ "$(spin OMP_WAIT_POLICY=passive)" = 0 ] || fail "OMP_WAIT_POLICY=passive gave '$(spin OMP_WAIT_POLICY=passive)'"
[ "$(spin OMP_WAIT_POLICY=active)" = 30000000000 ] ||
  fail "OMP_WAIT_POLICY=active gave '$(spin OMP_WAIT_POLICY=active)'"
# A variable whose name merely starts with GOMP_SPINCOUNT is not it.
[ "$(spin GOMP_SPINCOUNT_X=5)" = 3000 ] || fail "GOMP_SPINCOUNT_X=5 changed the default: '$(spin GOMP_SPINCOUNT_X=5)'"
# Other variables read through the same getenv still work: STRATA_VERBOSE turns on the dispatch log.
out=$(env -u GOMP_SPINCOUNT STRATA_VERBOSE=dispatch "$STRATA" train-bench --model_name mlp --batch_size 4 \
  --intra_op_threads 1 --steps 1 --warmup_steps 1 2>&1) || fail "train-bench: $out"
echo "$out" | grep -q "dispatch:" || fail "STRATA_VERBOSE=dispatch was not seen: $out"
echo PASS
