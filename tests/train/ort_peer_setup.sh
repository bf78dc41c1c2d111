#!/usr/bin/env bash
# ctest fixture: installs the ONNX Runtime peer (../shared/peers/ort, npm onnxruntime-node) into $1 once.
# The CPU library is bundled in the npm package; ONNXRUNTIME_NODE_INSTALL=skip stops its install script from fetching
# the optional CUDA binaries from outside the npm registry. Never fails the suite: offline, the ORT test skips.
set -u
DEST=$1
SRC=$2
if [ -e "$DEST/node_modules/onnxruntime-node/package.json" ]; then echo "ort peer already installed in $DEST"; exit 0; fi
if [ ! -d "$SRC" ] || ! command -v npm > /dev/null; then echo "no ort peer source ($SRC) or npm: skipping"; exit 0; fi
mkdir -p "$DEST" && cp -r "$SRC"/. "$DEST"/ && chmod -R u+w "$DEST"
(cd "$DEST" && ONNXRUNTIME_NODE_INSTALL=skip timeout 300 npm install --no-audit --no-fund > npm.log 2>&1) || echo "npm install failed (see $DEST/npm.log): skipping"
exit 0
