#!/usr/bin/env bash
# Installs every Debian package strata needs to build, test and benchmark. Idempotent: packages that are
# already installed are skipped, so a second run does nothing and needs no network.
#
#   scripts/install-deps.sh            # build + test dependencies
#   scripts/install-deps.sh --peers    # also the PyPI peers (TensorFlow, Keras, ONNX Runtime, TF Serving's client,
#                                      # tritonclient, tf2onnx) in a venv outside make test's path: $STRATA_PEERS_VENV,
#                                      # default ~/.cache/strata/peers-venv. Tests labelled `peer` use it and skip
#                                      # with a message when it is absent.
set -euo pipefail

BUILD_PKGS=(
  build-essential cmake ninja-build ccache pkg-config git
  clang libclang-rt-14-dev
  libdnnl-dev
  libonnx-dev libonnx-testdata
  libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
  libboost-dev libsimdjson-dev libssl-dev openssl
  libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev libpng-dev libturbojpeg0-dev libjpeg62-turbo-dev
  libcli11-dev
  libopenmpi-dev openmpi-bin
  libhdf5-dev
  libsnappy-dev
  flatbuffers-compiler libflatbuffers-dev
  dataset-fashion-mnist
  python3 python3-numpy python3-protobuf python3-onnx python3-pil python3-grpcio
  python3-torch python3-torchvision libopenblas0-pthread
)
# Extra Debian packages for the peers: venv support for Debian's python3, which the venv is made from.
PEER_PKGS=(python3-venv python3-pip)
# The PyPI peers, pinned (the versions ../shared/peers/README.md and the issues name).
PEER_PYPI=(
  tensorflow-cpu==2.21.0 keras==3.15.1
  onnxruntime==1.30.0 onnx
  tensorflow-serving-api==2.21.0 grpcio-reflection==1.81.1 grpcio-health-checking==1.81.1
  "tritonclient[http,grpc]==2.73.0"
  tf2onnx==1.17.0
  kubernetes-validate==1.37.0
  numpy h5py
)
PEERS_VENV=${STRATA_PEERS_VENV:-$HOME/.cache/strata/peers-venv}

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
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: done"
fi

if [[ "${1:-}" == "--peers" ]]; then
  # The venv is made from Debian's python3 and sees none of its packages (Debian's torch stays with /usr/bin/python3,
  # which the torch peer uses). A stamp of the pins makes a second run a no-op.
  stamp="$PEERS_VENV/.strata-peers"
  want_stamp=$(printf '%s\n' "${PEER_PYPI[@]}")
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want_stamp" ]]; then
    echo "install-deps: peers venv $PEERS_VENV up to date"
    exit 0
  fi
  echo "install-deps: creating the peers venv in $PEERS_VENV (a few minutes: TensorFlow is large)"
  mkdir -p "$(dirname "$PEERS_VENV")"
  [[ -x "$PEERS_VENV/bin/python" ]] || /usr/bin/python3 -m venv "$PEERS_VENV"
  "$PEERS_VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$PEERS_VENV/bin/python" -m pip install -q --disable-pip-version-check "${PEER_PYPI[@]}"
  "$PEERS_VENV/bin/python" - <<'PY'
import onnxruntime, tensorflow as tf, keras
print(f"install-deps: peers ok: tensorflow {tf.__version__}, keras {keras.__version__}, onnxruntime {onnxruntime.__version__}")
PY
  printf '%s' "$want_stamp" > "$stamp"
fi
