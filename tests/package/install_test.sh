#!/usr/bin/env bash
# strata as an installed package, as a user meets it: `cmake --install` into an empty prefix, then examples/ built
# against that prefix alone with find_package(strata), then run: train_tfrecord trains a custom-layer model on
# TFRecords and saves it, predict serves it in-process, custom_training trains with a user optimizer, metric and
# loss. The train and predict programs linked against libstrata.so (strata::strata_shared) must load it from the
# prefix, not carry strata's code themselves, and give the same results. Also checks strata.pc and strata-shared.pc
# by compiling predict.cc with pkg-config's flags only.
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
         lib/pkgconfig/strata.pc lib/pkgconfig/strata-shared.pc lib/libstrata_core.a lib/libstrata_train.a \
         lib/libstrata.so bin/strata; do
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

echo "== libstrata.so"
lib="$work/prefix/lib/libstrata.so"
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libstrata\.so\.[0-9]+\.[0-9]+$ ]] || { echo "FAIL: libstrata.so's SONAME is '$soname'"; exit 1; }
[[ -e "$work/prefix/lib/$soname" ]] || { echo "FAIL: no $soname in the prefix"; exit 1; }
# The public API is exported; the generated protobuf classes and the bundled standard-library code are not.
exports=$(nm -D --defined-only -C "$lib")
for sym in "strata::graph::Session::Create" "strata::onnx::LoadModel" "typeinfo for strata::nn::Layer"; do
  grep -qF "$sym" <<<"$exports" || { echo "FAIL: libstrata.so does not export $sym"; exit 1; }
done
# (the name after the address and type letter; the version node STRATA_0.1 is the one other entry)
if cut -d' ' -f3- <<<"$exports" | grep -vE '^((vtable|typeinfo|typeinfo name|VTT|construction vtable|guard variable) for |(non-)?virtual thunk to )?strata::|^STRATA_0\.1$' | head -3 | grep .; then
  echo "FAIL: libstrata.so exports symbols outside namespace strata (above)"
  exit 1
fi
for exe in train_tfrecord_shared predict_shared; do
  bin="$work/examples/$exe"
  grep -qE "\(NEEDED\).*\[${soname//./\\.}\]" <<<"$(readelf -d "$bin")" ||
    { echo "FAIL: $exe does not link $soname:"; readelf -d "$bin"; exit 1; }
  resolved=$(ldd "$bin" | awk -v so="$soname" '$1 == so { print $3 }')
  [[ "$resolved" == "$work/prefix/lib/$soname" ]] ||
    { echo "FAIL: $exe loads $soname from '$resolved', not from the prefix"; ldd "$bin"; exit 1; }
  # strata's code is in the library, not in the program: the program imports strata symbols and defines none of the
  # library's functions (only the header-inline ones, weak).
  symbols=$(nm -C "$bin")  # (not piped into grep -q: with pipefail, nm's SIGPIPE would fail the check)
  grep -qE ' U strata::' <<<"$symbols" || { echo "FAIL: $exe imports nothing from strata"; exit 1; }
  if grep -E ' T strata::' <<<"$symbols" | head -3 | grep .; then
    echo "FAIL: $exe carries strata's code itself (above)"
    exit 1
  fi
done
echo "== train_tfrecord_shared, predict_shared"
mkdir -p "$work/run_shared"
"$work/examples/train_tfrecord_shared" "$work/run_shared"
"$work/examples/predict_shared" "$work/run_shared/model.onnx" "$work/run_shared/val-00000.tfrecord"
# And across: the shared-library predictor on the statically linked trainer's model.
"$work/examples/predict_shared" "$work/run/model.onnx" "$work/run/val-00000.tfrecord"

echo "== pkg-config strata"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
pkg-config --exists --print-errors strata
# shellcheck disable=SC2046
${CXX:-c++} -O1 -o "$work/predict_pc" "$src/examples/predict.cc" $(pkg-config --cflags --libs strata)
"$work/predict_pc" "$work/run/model.onnx" "$work/run/val-00000.tfrecord"
echo "== pkg-config strata-shared"
# shellcheck disable=SC2046
${CXX:-c++} -O1 -o "$work/predict_pc_shared" "$src/examples/predict.cc" $(pkg-config --cflags --libs strata-shared) \
  -Wl,-rpath,"$work/prefix/lib"
"$work/predict_pc_shared" "$work/run/model.onnx" "$work/run/val-00000.tfrecord"
echo "install_test: OK"
