#!/usr/bin/env bash
# Server-side batching on a compute-bound model (BENCHMARKS.md "Batching that pays", issue 17 item 2): served
# throughput of `strata serve --enable_batching` under CLIENTS concurrent gRPC Predict callers (one image each,
# tensor_content) against `strata bench --batch BATCH` of the same model, both on every core, in one run.
#
#   bench/serve/batching_bench.sh [BUILD_DIR] [SECONDS] [CLIENTS] [BATCH]
#   env MODEL (default /tmp/strata-peer-models/resnet50/model.onnx, exported by bench/compare_peers.sh's peers),
#       INPUT_SHAPE (one example, default 3,224,224), BATCH_TIMEOUT_MICROS (default 5000)
set -euo pipefail
BUILD=${1:-build}
SECONDS_PER_RUN=${2:-20}
CLIENTS=${3:-64}
BATCH=${4:-8}
MODEL=${MODEL:-/tmp/strata-peer-models/resnet50/model.onnx}
INPUT_SHAPE=${INPUT_SHAPE:-3,224,224}
[ -f "$MODEL" ] || { echo "no model at $MODEL: run bench/compare_peers.sh once (it exports resnet50), or set MODEL" >&2; exit 2; }
OUT=$(mktemp -d /tmp/strata_batching_bench.XXXXXX)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$OUT"' EXIT
mkdir -p "$OUT/m/1"
ln -s "$MODEL" "$OUT/m/1/model.onnx"
touch -h -d '1 hour ago' "$OUT/m/1/model.onnx" "$OUT/m/1"
INPUT=$(/usr/bin/python3 -c "import onnx,sys; print(onnx.load(sys.argv[1], load_external_data=False).graph.input[0].name)" "$MODEL")

echo "== machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== executor: strata bench --batch $BATCH"
"$BUILD/strata" bench "$MODEL" --batch "$BATCH" --warmup 3 --iters 20 --json | tee "$OUT/bench.json"
cat > "$OUT/batching.config" <<CONF
max_batch_size { value: $BATCH }
batch_timeout_micros { value: ${BATCH_TIMEOUT_MICROS:-5000} }
max_enqueued_batches { value: 1000 }
num_batch_threads { value: 1 }
allowed_batch_sizes: $BATCH
CONF
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
REST_PORT=$(free_port)
GRPC_PORT=$(free_port)
"$BUILD/strata" serve --host=127.0.0.1 --port="$GRPC_PORT" --rest_api_port="$REST_PORT" --model_name=m \
    --model_base_path="$OUT/m" --enable_batching --batching_parameters_file="$OUT/batching.config" \
    2> "$OUT/serve.log" &
SERVER_PID=$!
for _ in $(seq 1 600); do
  curl -sf "127.0.0.1:$REST_PORT/readyz" > /dev/null && break
  sleep 0.1
done
curl -sf "127.0.0.1:$REST_PORT/readyz" > /dev/null || { echo "server not ready:"; cat "$OUT/serve.log"; exit 1; }
echo "== served: $CLIENTS gRPC callers, one example each, batching max $BATCH"
"$BUILD/strata_serve_load" --grpc --port "$GRPC_PORT" --model m --input_name "$INPUT" --instance_shape "$INPUT_SHAPE" \
    --connections "$CLIENTS" --channels 4 --duration "$SECONDS_PER_RUN" --warmup 5 --json | tee "$OUT/load.json"
curl -s "127.0.0.1:$REST_PORT/monitoring/prometheus/metrics" |
  grep -E '^:tensorflow:serving:batching_session:processed_batch_size_(sum|count)' || true
/usr/bin/python3 - "$OUT/bench.json" "$OUT/load.json" <<'PY'
import json, sys
bench = json.load(open(sys.argv[1]))
load = json.load(open(sys.argv[2]))
b, s = bench['throughput_per_s'], load['requests_per_second']
print(f"executor batch {bench['batch']}: {b:.1f} examples/s; served: {s:.1f} requests/s "
      f"({load['failed']} failed); served / executor = {s / b:.3f} (target >= 0.90)")
PY
