#!/usr/bin/env bash
# Issue 16's guards from the command line: --input_signature (train: one plan, the partial batch dropped; run/bench:
# a request that does not fit is refused naming input, expected and found shape) and the profiler (train
# --profile_steps in TensorBoard's layout, run/bench --profile, serve --profile_dir + POST /monitoring/profile).
# usage: cli_profile.sh STRATA
set -uo pipefail
STRATA=$1
DATA=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
OUT=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$OUT"' EXIT
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
failures=0 passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { passes=$((passes + 1)); }
check() { if "$@"; then pass; else fail "${CHECK_WHAT:-$*}"; fi; }

# A trace file is valid Trace Event Format JSON; prints "<node events> <run events> <step events> <min dur>" and the
# step names, and fails on a negative duration or an event without name/ph/ts.
trace_summary() {
  python3 - "$1" <<'EOF'
import gzip, json, sys
path = sys.argv[1]
raw = gzip.open(path).read() if path.endswith('.gz') else open(path, 'rb').read()
t = json.loads(raw)
nodes = runs = 0
steps = []
mindur = 0.0
for e in t['traceEvents']:
    for k in ('name', 'ph', 'pid', 'tid'):
        assert k in e, (k, e)
    if e['ph'] == 'M':
        continue
    assert 'ts' in e, e
    if e['ph'] == 'X':
        assert e['dur'] >= 0, e
        mindur = min(mindur, e['dur'])
        cat = e['cat']
        if cat == 'strata.run': runs += 1
        elif cat == 'strata.step': steps.append(e['name'])
        elif not cat.startswith('strata'):
            assert e['name'] and e['args']['op_type'] == cat, e
            nodes += 1
print(nodes, runs, len(steps), mindur, '|'.join(steps))
EOF
}

"$STRATA" data import-idx --images "$DATA/t10k-images-idx3-ubyte.gz" --labels "$DATA/t10k-labels-idx1-ubyte.gz" \
  --out "$OUT/data/train" --shards 1 > /dev/null || { echo "import-idx failed"; exit 1; }
# 10,000 examples in batches of 32: 312 whole batches and a partial one of 16.
base=(--data_dir "$OUT/data" --tfrecord_pattern 'train-*.tfrecord' --model_name mlp --epochs 1 --batch_size 32
      --verbose 0 --seed 1)

# Without a signature the partial batch is a second plan; with one, it is dropped and training compiles one plan.
"$STRATA" train "${base[@]}" > "$OUT/free.log" 2>&1 || fail "plain training: $(tail -2 "$OUT/free.log")"
CHECK_WHAT="without --input_signature: 313 steps, 2 plans ($(grep trained "$OUT/free.log"))" \
  check grep -q "313 steps, 2 plan compilations" "$OUT/free.log"
if "$STRATA" train "${base[@]}" --input_signature '[None,28,28,1]' --log_dir "$OUT/logs" --profile_steps 2,3 \
     --profile "$OUT/train.json" --export_dir "$OUT/export" > "$OUT/sig.log" 2>&1; then
  CHECK_WHAT="with --input_signature: 312 steps, 1 plan ($(grep trained "$OUT/sig.log"))" \
    check grep -q "312 steps, 1 plan compilations" "$OUT/sig.log"
  # --profile_steps 2,3: the same trace in the plain file and in the TensorBoard layout.
  tb=$(ls "$OUT"/logs/plugins/profile/*/"$(hostname)".trace.json.gz 2>/dev/null | head -1)
  if [ -n "$tb" ] && [ "$(gunzip -c "$tb" | md5sum)" = "$(md5sum < "$OUT/train.json")" ]; then pass; else
    fail "no TensorBoard trace equal to --profile under $OUT/logs/plugins/profile: $(find "$OUT/logs" | head)"; fi
  read -r nodes runs steps mindur names <<< "$(trace_summary "$OUT/train.json")"
  CHECK_WHAT="train trace: steps '$names', $runs runs, $nodes node events" \
    check test "$names" = "train_step 2|train_step 3" -a "$runs" = 2 -a "$nodes" -gt 10
else
  fail "train with --input_signature and --profile_steps: $(tail -3 "$OUT/sig.log")"
fi
"$STRATA" train "${base[@]}" --input_signature '[None,28,28,3]' > "$OUT/bad.log" 2>&1 && fail "[None,28,28,3] trained"
CHECK_WHAT="bad signature message: $(tail -1 "$OUT/bad.log")" check grep -q "has 3 at dimension 3" "$OUT/bad.log"
"$STRATA" train "${base[@]}" --profile_steps 2,1 > "$OUT/badp.log" 2>&1 && fail "--profile_steps 2,1 trained"
CHECK_WHAT="--profile_steps 2,1: $(tail -1 "$OUT/badp.log")" check grep -q "ends before it starts" "$OUT/badp.log"
"$STRATA" train "${base[@]}" --profile_steps 2 > "$OUT/nodir.log" 2>&1 && fail "--profile_steps without a place"
CHECK_WHAT="--profile_steps without --log_dir: $(tail -1 "$OUT/nodir.log")" check grep -q "needs --log_dir" "$OUT/nodir.log"

# run and bench on the exported model.
model=$(ls "$OUT"/export/*/1/model.onnx 2>/dev/null | head -1)
[ -n "$model" ] || { fail "no exported model"; echo "$passes passed, $failures failed"; exit 1; }
input=$("$STRATA" inspect "$model" 2>/dev/null | sed -n '/^inputs:/{n;s/^ *\([^ ]*\) .*/\1/p}')
python3 - "$OUT" <<'EOF'
import struct, sys
def npy(path, shape):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ''.join('%d, ' % d for d in shape)
    header += ' ' * (63 - (10 + len(header)) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode())
        n = 1
        for d in shape: n *= d
        f.write(struct.pack('<%df' % n, *[0.5] * n))
npy(sys.argv[1] + '/good.npy', (2, 28, 28, 1))
npy(sys.argv[1] + '/bad.npy', (2, 28, 28, 3))
EOF
if "$STRATA" run "$model" --input "$input=$OUT/good.npy" --profile "$OUT/run.json" > "$OUT/run.log" 2>&1; then
  read -r nodes runs steps mindur names <<< "$(trace_summary "$OUT/run.json")"
  CHECK_WHAT="run trace: $runs runs, $nodes node events" check test "$runs" = 1 -a "$nodes" -gt 0
else
  fail "run --profile: $(tail -2 "$OUT/run.log")"
fi
"$STRATA" run "$model" --input "$input=$OUT/bad.npy" --input_signature '[-1,28,28,1]' > "$OUT/runbad.log" 2>&1 &&
  fail "run with a shape outside the signature succeeded"
CHECK_WHAT="run refuses a shape outside --input_signature: $(tail -1 "$OUT/runbad.log")" check grep -q \
  "input '$input' expects shape \[batch,28,28,1\] float32 (input signature), got \[2,28,28,3\] float32" \
  "$OUT/runbad.log"
if "$STRATA" bench "$model" --batch 4 --iters 3 --warmup 1 --input_signature '[-1,28,28,1]' \
     --profile "$OUT/bench.json.gz" > "$OUT/bench.log" 2>&1; then
  read -r nodes runs steps mindur names <<< "$(trace_summary "$OUT/bench.json.gz")"
  CHECK_WHAT="bench trace: $runs runs (one profiled), $nodes node events" check test "$runs" = 1 -a "$nodes" -gt 0
else
  fail "bench --profile: $(tail -2 "$OUT/bench.log")"
fi

# serve: POST /monitoring/profile?requests=2 records the next two requests.
mkdir -p "$OUT/models/mlp/1" && cp "$model" "$OUT/models/mlp/1/model.onnx"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$STRATA" serve --model_name mlp --model_base_path "$OUT/models/mlp" --port 0 --rest_api_port "$port" --host 127.0.0.1 \
  --profile_dir "$OUT/prof" --input_signature '[-1,28,28,1]' > "$OUT/serve.log" 2>&1 &
SERVER_PID=$!
python3 - "$port" "$OUT" "$input" <<'EOF'
import json, sys, time, urllib.request, urllib.error, glob, socket
port, out, name = sys.argv[1], sys.argv[2], sys.argv[3]
base = 'http://127.0.0.1:%s' % port
def call(path, body=None, method=None):
    req = urllib.request.Request(base + path, data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
for _ in range(200):
    try:
        if call('/v1/models/mlp')[0] == 200 and '"AVAILABLE"' in call('/v1/models/mlp')[1]:
            break
    except (urllib.error.URLError, ConnectionError, socket.timeout):
        pass
    time.sleep(0.1)
ok = True
def expect(cond, what):
    global ok
    if not cond:
        print('FAIL: ' + what)
        ok = False
st, body = call('/monitoring/profile?requests=2', b'', 'POST')
expect(st == 200 and '"profiling_requests": 2' in body, 'POST /monitoring/profile: %s %s' % (st, body))
st, body = call('/monitoring/profile?requests=zero', b'', 'POST')
expect(st == 400, 'a bad count gets 400: %s %s' % (st, body))
inst = [[[[0.5]] * 28] * 28]
for i in range(3):
    st, body = call('/v1/models/mlp:predict', json.dumps({'instances': inst}).encode(), 'POST')
    expect(st == 200, 'predict %d: %s %s' % (i, st, body[:200]))
bad = [[[[0.5, 0.5, 0.5]] * 28] * 28]
st, body = call('/v1/models/mlp:predict', json.dumps({'instances': bad}).encode(), 'POST')
expect(st == 400 and 'expects shape [batch,28,28,1]' in body and '[1,28,28,3]' in body, 'a request outside the signature: %s %s' % (st, body[:300]))
files = []
for _ in range(50):
    files = glob.glob(out + '/prof/plugins/profile/*/*.trace.json.gz')
    if files:
        break
    time.sleep(0.1)
expect(len(files) == 1, 'one trace under --profile_dir: %s' % files)
if files:
    import gzip
    t = json.loads(gzip.open(files[0]).read())
    runs = [e for e in t['traceEvents'] if e.get('cat') == 'strata.run']
    expect(len(runs) == 2, 'two requests recorded, found %d' % len(runs))
sys.exit(0 if ok else 1)
EOF
if [ $? -eq 0 ]; then pass; else fail "serve profiling (log: $(tail -3 "$OUT/serve.log"))"; fi
kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=

echo "$passes passed, $failures failed"
[ "$failures" -eq 0 ]
