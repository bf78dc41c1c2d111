#!/usr/bin/env bash
# Installs every Debian package strata needs to build, test and benchmark. Idempotent: packages that are
# already installed are skipped, so a second run does nothing and needs no network.
#
#   scripts/install-deps.sh            # build + test dependencies
#   scripts/install-deps.sh --peers    # also PyTorch/ONNX tooling used by the peer comparisons and model tests
set -euo pipefail

BUILD_PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  clang libclang-rt-14-dev
  libdnnl-dev
  libonnx-dev libonnx-testdata
  libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
  libboost-dev libsimdjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev libpng-dev libturbojpeg0-dev libjpeg62-turbo-dev
  libcli11-dev
  libopenmpi-dev openmpi-bin
  dataset-fashion-mnist
  python3 python3-numpy python3-protobuf python3-onnx python3-pil
  python3-torch python3-torchvision libopenblas0-pthread
)
# Extra packages for the peer comparisons in ../shared/peers (none beyond the above today; node + npm come with the
# machine image, Debian's nodejs conflicts with it).
PEER_PKGS=()

want=("${BUILD_PKGS[@]}")
if [[ "${1:-}" == "--peers" && ${#PEER_PKGS[@]} -gt 0 ]]; then want+=("${PEER_PKGS[@]}"); fi

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#want[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
