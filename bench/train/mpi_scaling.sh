#!/usr/bin/env bash
# Multi-worker weak scaling and communication overlap (BENCHMARKS.md "Multi-worker training"): for each model,
# 1 worker x 1 intra-op thread, then 2 workers x 1 thread with the gradient allreduce after the backward pass
# (--allreduce_overlap=false) and during it (the default), per-worker batch 64 (global 128 for 2 workers). Prints
# images/s, the weak-scaling efficiency (2x1 images/s / 2 / 1x1 images/s) and the share of the training-step time
# spent in communication that no computation overlapped (strata train's own line), one Markdown row per run.
# Meaningful on an idle machine only: two single-thread workers need both cores. A worker waiting for the other polls
# MPI without pause for 50 us, then yields its core between polls for up to 20 ms, then sleeps 100 us between polls
# (docs/training.md "Waiting"); the CPU per step behind the efficiency is broken down in BENCHMARKS.md.
# usage: bench/train/mpi_scaling.sh [BUILD] [ROUNDS] [MODELS]
#   BUILD (default build), ROUNDS (default 3), MODELS (default "cnn_small resnet18"); env DATA_DIR (default
#   /usr/share/datasets/fashion-mnist), CNN_STEPS (default 400), RESNET_STEPS (default 10).
# After each model's rounds: the median efficiencies over the rounds (a single round moves by several points on a
# VM: one worker delayed for a millisecond delays the other at the next allreduce, while the 1x1 run's disturbances
# land on the idle core).
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
MODELS=${3:-cnn_small resnet18}
DATA_DIR=${DATA_DIR:-/usr/share/datasets/fashion-mnist}
STRATA=$BUILD/strata
command -v mpirun > /dev/null || { echo "mpirun not installed (scripts/install-deps.sh: openmpi-bin)"; exit 1; }
[ -x "$STRATA" ] || { echo "no $STRATA: build it first (cmake --build $BUILD --target strata)"; exit 1; }
export OMP_WAIT_POLICY=passive OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
MPIRUN=(mpirun --oversubscribe --bind-to none --mca btl self,vader)
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(git rev-parse --short HEAD 2>/dev/null || echo '?'), load average: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
echo "| model | round | 1x1 images/s | 2x1 images/s, no overlap | 2x1 images/s, overlap | efficiency, no overlap | efficiency, overlap | comm. not overlapped, no overlap | comm. not overlapped, overlap |"
echo "|---|---|---|---|---|---|---|---|---|"
ips() { grep -o '[0-9.]* images/s' "$1" | head -1 | cut -d' ' -f1; }
share() { grep -o 'communication not overlapped.*(\([0-9.]*%\))' "$1" | grep -o '[0-9.]*%' | tail -1; }
for model in $MODELS; do
  steps=${CNN_STEPS:-400}
  [ "$model" = resnet18 ] && steps=${RESNET_STEPS:-10}
  FLAGS=(--data_dir "$DATA_DIR" --model_name "$model" --epochs 1 --steps_per_epoch "$steps" --intra_op_threads 1
         --verbose 2 --overwrite)
  effs_f=() effs_t=()
  for r in $(seq 1 "$ROUNDS"); do
    "$STRATA" train "${FLAGS[@]}" --batch_size 64 --checkpoint_dir "$OUT/c1" > "$OUT/1.log" 2>&1 \
      || { tail "$OUT/1.log"; exit 1; }
    for ov in false true; do
      "${MPIRUN[@]}" -np 2 "$STRATA" train "${FLAGS[@]}" --batch_size 128 --distribution_strategy multi_worker_mirrored \
        --allreduce_overlap=$ov --checkpoint_dir "$OUT/c2" > "$OUT/2$ov.log" 2>&1 || { tail "$OUT/2$ov.log"; exit 1; }
    done
    one=$(ips "$OUT/1.log") nf=$(ips "$OUT/2false.log") nt=$(ips "$OUT/2true.log")
    eff() { awk -v a="$1" -v b="$one" 'BEGIN { printf "%.2f", a / 2 / b }'; }
    echo "| $model | $r | $one | $nf | $nt | $(eff "$nf") | $(eff "$nt") | $(share "$OUT/2false.log") | $(share "$OUT/2true.log") |"
    grep -h '^gradient buckets:' "$OUT/2true.log" | sed 's/^/    overlap: /' >&2
    effs_f+=("$(eff "$nf")") effs_t+=("$(eff "$nt")")
  done
  median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  echo "| $model | median of $ROUNDS | | | | $(median "${effs_f[@]}") | $(median "${effs_t[@]}") | | |"
done
