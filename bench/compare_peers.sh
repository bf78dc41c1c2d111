#!/usr/bin/env bash
# Inference latency of strata vs ONNX Runtime vs PyTorch, measured in one run on this machine, written as a Markdown
# table (model, batch, median ms each, strata/ORT and strata/PyTorch ratios, geometric means).
#
#   usage: bench/compare_peers.sh [BUILD_DIR] [ROUNDS] [OUT.md]
#   env:   MODELS_DIR   exported models (default /tmp/strata-peer-models; exported once with the torch peer's
#                       export_models.py when missing: <dir>/<name>/{model.onnx,input.bin,output.bin,io.json})
#          PEERS        the peers' scripts (default ../shared/peers next to the repository)
#          STRATA_PEERS_VENV  the peers venv with onnxruntime 1.30.0 (default ~/.cache/strata/peers-venv; made by
#                       scripts/install-deps.sh --peers when missing)
#          ROWS         e.g. resnet18:1,cnn:32 to run some rows only; BUDGET_S timed seconds per engine and row (2)
#          OMP_WAIT_POLICY passed through unchanged when set (e.g. passive on a busy machine); unset by default, so
#                       each engine idles its threads its own default way: ONNX Runtime's pool spins (it ignores
#                       this variable), libgomp (strata, PyTorch) spins briefly, then sleeps.
# Every engine gets the same environment and 2 threads.
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-1}
OUT=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=${PEERS:-$(cd "$HERE/../.." && pwd)/shared/peers}
[ -d "$PEERS/torch" ] || PEERS=/work/shared/peers
MODELS_DIR=${MODELS_DIR:-/tmp/strata-peer-models}
PEERS_VENV=${STRATA_PEERS_VENV:-$HOME/.cache/strata/peers-venv}
STRATA=$(cd "$BUILD" && pwd)/strata
[ -x "$STRATA" ] || { echo "error: no strata binary at $STRATA (build it first)" >&2; exit 2; }

# Export once (outside the repository).
missing=0
for m in resnet18 resnet50 mobilenet_v2 squeezenet1_1 transformer cnn mlp; do
  [ -f "$MODELS_DIR/$m/io.json" ] || missing=1
done
if [ $missing = 1 ]; then
  echo "# exporting models into $MODELS_DIR" >&2
  mkdir -p "$MODELS_DIR"
  (cd "$PEERS/torch" && PEERS_MODELS="$MODELS_DIR" /usr/bin/python3 export_models.py >&2)
fi

# ONNX Runtime peer: the Python package in the peers venv (PyPI; npm is not reachable here), installed once.
if [ ! -x "$PEERS_VENV/bin/python" ]; then
  STRATA_PEERS_VENV="$PEERS_VENV" "$HERE/../scripts/install-deps.sh" --peers >&2
fi

MD=$(mktemp)
trap 'rm -f "$MD"' EXIT
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 "$HERE/compare_peers.py" --strata "$STRATA" --models "$MODELS_DIR" --ort-python "$PEERS_VENV/bin/python" \
  --ort-runner "$PEERS/ort/run_model.py" \
  --torch-peer "$PEERS/torch" --threads 2 --rounds "$ROUNDS" --budget-s "${BUDGET_S:-2}" --rows "${ROWS:-}" \
  --markdown "$MD" --json "${JSON_OUT:-/dev/null}" >/dev/null
{
  echo "Run of $(date -u '+%F %H:%M') UTC, strata at commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?'):"
  echo
  echo "    ${OMP_WAIT_POLICY+OMP_WAIT_POLICY=$OMP_WAIT_POLICY }bench/compare_peers.sh $BUILD $ROUNDS"
  echo
  echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), load average before the run $LOAD" \
       "(1/5/15 min), after $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  cat "$MD"
} | tee ${OUT:+"$OUT"}
