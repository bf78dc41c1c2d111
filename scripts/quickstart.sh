#!/usr/bin/env bash
# make quickstart: the main job on built-in data (grows as the strata land).
set -euo pipefail
BUILD=${1:-build}
echo "quickstart: strata is built in $BUILD"
