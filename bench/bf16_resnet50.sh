#!/usr/bin/env bash
# bfloat16 inference (issue 13): ResNet-50 at batch 32, `strata bench --precision fp32` and `--precision bf16`
# alternating in each round, 2 threads. Prints per round the median ms and the process CPU time per run
# (cpu_us_per_run, steadier than wall time on a shared machine) of each, and the fp32 / bf16 ratios; then the medians
# over the rounds. With BASE=path/to/another/strata, that binary's bf16 runs too, in the same rounds (a before/after
# comparison on one machine state).
#
#   usage: bench/bf16_resnet50.sh [BUILD_DIR] [ROUNDS]
#   env:   MODEL (default /tmp/strata-peer-models/resnet50/model.onnx, from ../shared/peers/torch/export_models.py),
#          BATCH (32), ITERS (8), WARMUP (1), THREADS (2), BASE (unset)
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
STRATA=$(cd "$BUILD" && pwd)/strata
MODEL=${MODEL:-/tmp/strata-peer-models/resnet50/model.onnx}
[ -f "$MODEL" ] || { echo "error: $MODEL missing: export it with ../shared/peers/torch/export_models.py" >&2; exit 2; }
[ -x "$STRATA" ] || { echo "error: $STRATA missing: build the strata target first" >&2; exit 2; }
if [ -n "${BASE:-}" ] && [ ! -x "$BASE" ]; then echo "error: BASE=$BASE is not an executable" >&2; exit 2; fi

# One `strata bench` run: "median_ms cpu_ms_per_run".
run() {
  "$1" bench "$MODEL" --batch "${BATCH:-32}" --threads "${THREADS:-2}" --warmup "${WARMUP:-1}" --iters "${ITERS:-8}" \
    --precision "$2" --json | tail -1 |
    /usr/bin/python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["median_ms"], j["cpu_us_per_run"] / 1000)'
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$ROUNDS"); do
  line="$r $(run "$STRATA" fp32) $(run "$STRATA" bf16)"
  if [ -n "${BASE:-}" ]; then line="$line $(run "$BASE" bf16)"; fi
  echo "$line" >>"$results"
  echo "round $r done (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
/usr/bin/python3 - "$results" "${BASE:+1}" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
base = sys.argv[2] == "1"
head = ("| round | fp32 median ms | fp32 CPU ms/run | bf16 median ms | bf16 CPU ms/run | fp32/bf16 wall "
        "| fp32/bf16 CPU |")
if base:
    head += " base bf16 median ms | base bf16 CPU ms/run | fp32/base bf16 wall | fp32/base bf16 CPU |"
print(head)
print("|" + "---|" * (head.count("|") - 1))
def fmt(label, v):
    s = f"| {label} | {v[1]:.1f} | {v[2]:.0f} | {v[3]:.1f} | {v[4]:.0f} | {v[1]/v[3]:.3f} | {v[2]/v[4]:.3f} |"
    if base:
        s += f" {v[5]:.1f} | {v[6]:.0f} | {v[1]/v[5]:.3f} | {v[2]/v[6]:.3f} |"
    return s
for v in rows:
    print(fmt(int(v[0]), v))
med = [0] + [statistics.median(v[i] for v in rows) for i in range(1, len(rows[0]))]
print(fmt("median", med))
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
