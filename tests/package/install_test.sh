#!/usr/bin/env bash
# strata as an installed package, as a user meets it: `cmake --install` into an empty prefix, then examples/ built
# against that prefix alone with find_package(strata), then run: train_tfrecord trains a custom-layer model on
# TFRecords and saves it, predict serves it in-process, custom_training trains with a user optimizer, metric and
# loss. Also checks strata.pc by compiling predict.cc with
# pkg-config's flags only.
#   install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/strata-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi

echo "== cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
for f in include/strata/train.h include/strata/records.h lib/cmake/strata/strataConfig.cmake \
         lib/pkgconfig/strata.pc lib/libstrata_core.a lib/libstrata_train.a bin/strata; do
  [[ -e "$work/prefix/$f" ]] || { echo "FAIL: the install tree has no $f"; exit 1; }
done
# Only the public headers are installed: nothing from src/ may leak in.
if find "$work/prefix/include" -type f | grep -v '/include/strata/[a-z_]*\.h$'; then
  echo "FAIL: files other than include/strata/*.h were installed (above)"
  exit 1
fi

echo "== examples/ against the installed package (find_package(strata))"
cmake -S "$src/examples" -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" "${launcher[@]}" >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
# The examples must not see the source tree: its include folders appear nowhere in their compile commands.
if grep -q -- "-I$src/\(include\|src\)" "$work/examples/build.ninja"; then
  echo "FAIL: the examples' build uses the source tree's include folders"
  exit 1
fi
cmake --build "$work/examples" -j "$(nproc)"

echo "== train_tfrecord"
mkdir -p "$work/run"
"$work/examples/train_tfrecord" "$work/run"
echo "== predict"
"$work/examples/predict" "$work/run/model.onnx" "$work/run/val-00000.tfrecord"
echo "== custom_training"
"$work/examples/custom_training"

echo "== pkg-config strata"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
pkg-config --exists --print-errors strata
# shellcheck disable=SC2046
${CXX:-c++} -O1 -o "$work/predict_pc" "$src/examples/predict.cc" $(pkg-config --cflags --libs strata)
"$work/predict_pc" "$work/run/model.onnx" "$work/run/val-00000.tfrecord"
echo "install_test: OK"
