#!/usr/bin/env bash
# Training images/s and peak RSS of ResNet50V2, MobileNetV3Large and EfficientNetV2B0 (batch 32, 224x224x3, 2
# threads): strata vs Keras 3 on TF 2.21 (peers venv) vs PyTorch 1.13 (torchvision's resnet50, mobilenet_v3_large,
# efficientnet_v2_s), in one run, each measurement in its own process (bench/train/zoo_training.py has the protocol).
#   usage: bench/train/zoo_training.sh [--build build] [--steps 3] [--warmup_steps 2] [--models A,B]
#          [--frameworks strata,keras,torch] [--omp_wait_policy passive (strata and torch)] [--markdown OUT]
# About 10 minutes on an idle 2-core machine with the defaults.
set -euo pipefail
exec /usr/bin/python3 "$(cd "$(dirname "$0")" && pwd)/zoo_training.py" "$@"
