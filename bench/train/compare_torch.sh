#!/usr/bin/env bash
# Training images/s of strata vs the PyTorch peer (../shared/peers/torch/bench_train.py protocol: SGD lr 0.01
# momentum 0.9 + cross-entropy, one fixed random batch of 64, 3 warm-up steps, >= 10 timed steps, images/s = batch /
# median step), same machine, same threads (2), measured in ONE run: strata and torch alternate ROUNDS times per
# model and each keeps its median-of-rounds. The peer's wait-for-a-quiet-machine is disabled (on a shared 2-core
# machine it would wait minutes); instead every figure carries the CPU share other processes used meanwhile.
#   usage: bench/train/compare_torch.sh [BUILD_DIR] [ROUNDS]      (env is passed to both, e.g. OMP_WAIT_POLICY)
set -euo pipefail
BUILD=${1:-build}
ROUNDS=${2:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
PEER_SRC=${TORCH_PEER:-$HERE/../../../shared/peers/torch}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cp -r "$PEER_SRC"/. "$TMP"/ && chmod -R u+w "$TMP"
cat > "$TMP/one_now.py" <<'PY'
import json, sys
import common
common.wait_quiet = lambda *a, **k: 0.0   # measure now, alternating with strata
import bench_train
print('JSON ' + json.dumps(bench_train.one(sys.argv[1], int(sys.argv[2]))), flush=True)
PY
echo "# strata vs torch training throughput, $(date -u +%FT%TZ), $(nproc) cores, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-(unset)}"
echo "# $(lscpu | grep 'Model name' | sed 's/  */ /g')"
for pair in "mlp mlp" "cnn_small cnn"; do
  set -- $pair
  for r in $(seq 1 "$ROUNDS"); do
    s=$("$BUILD/strata" train-bench --model_name "$1" --batch_size 64 --intra_op_threads 2 --min_seconds 5)
    echo "strata $s"
    t=$(cd "$TMP" && /usr/bin/python3 one_now.py "$2" 64 | grep '^JSON ' | sed 's/^JSON //')
    echo "torch  $t"
  done
done | tee "$TMP/raw.txt"
/usr/bin/python3 - "$TMP/raw.txt" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    who, js = line.split(' ', 1)
    r = json.loads(js)
    key = 'mlp' if r['model'] == 'mlp' else 'cnn'
    rows.setdefault((key, who), []).append(r)
print(f"\n{'model':<6}{'strata img/s':>14}{'torch img/s':>13}{'ratio':>8}{'strata foreign%':>17}{'torch foreign%':>16}")
for key in ('mlp', 'cnn'):
    s, t = rows.get((key, 'strata'), []), rows.get((key, 'torch'), [])
    if not s or not t:
        continue
    si = statistics.median(x['images_per_s'] for x in s)
    ti = statistics.median(x['images_per_s'] for x in t)
    sf = statistics.median(x['foreign_pct'] for x in s)
    tf = statistics.median(x['foreign_pct'] for x in t)
    print(f"{key:<6}{si:>14.0f}{ti:>13.0f}{si / ti:>8.2f}{sf:>17.0f}{tf:>16.0f}")
PY
