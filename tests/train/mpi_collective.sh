#!/usr/bin/env bash
# tests/train/mpi_collective_test.cc under mpirun with 2 and 4 ranks (shared memory): MpiCollective's overlapped reduction
# (exact means, bitwise equal to the non-overlapped one, aligned views of reused bucket buffers), and the allreduce
# algorithm Open MPI runs (ring by default, the user's when set).
# usage: mpi_collective.sh path/to/mpi_collective_test
set -euo pipefail
# Under `make test-asan`: Open MPI keeps allocations until exit that LeakSanitizer reports (in its own libraries and
# components); leak checking is off for the workers, the other ASan and UBSan checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
command -v mpirun > /dev/null || { echo "SKIP: mpirun not installed (scripts/install-deps.sh: openmpi-bin)"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader
timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$1"
timeout 120 mpirun --oversubscribe --bind-to none -np 4 "$1"
# A user's choice of Open MPI's non-blocking allreduce algorithm wins over strata's default (ring).
OMPI_MCA_coll_libnbc_iallreduce_algorithm=recursive_doubling STRATA_EXPECT_IALLREDUCE=recursive_doubling \
  timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$1"
