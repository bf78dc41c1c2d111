#!/usr/bin/env bash
# Runs a peer test with the peers venv's python, or skips it (exit 77, ctest's SKIP_RETURN_CODE) with a message saying
# how to install the venv. usage: run_peer.sh VENV_PYTHON SCRIPT [ARGS...]
set -u
py=$1
shift
if [ ! -x "$py" ]; then
  echo "SKIPPED: the peers venv is not installed ($py missing); run scripts/install-deps.sh --peers"
  exit 77
fi
# TensorFlow's start-up chatter (CUDA probing, oneDNN notices) is not the test's output.
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2} OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
exec "$py" "$@"
