#!/usr/bin/env bash
# Serving benchmark for BENCHMARKS.md ("Serving"): predict on the Fashion CNN at batch 1 with 32 concurrent
# keep-alive clients, with and without server-side batching, next to `strata bench` of the same model.
# Everything runs on 127.0.0.1; the load generator shares the machine with the server.
#
#   bench/serve/serving_bench.sh [BUILD_DIR] [SECONDS]
set -euo pipefail
BUILD=${1:-build}
SECONDS_PER_RUN=${2:-20}
CONNECTIONS=${CONNECTIONS:-32}
INTRA=${INTRA:-0}  # intra-op threads for both the executor and the server (0 = one per core)
OUT=$(mktemp -d /tmp/strata_serving_bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$OUT"' EXIT

# The Fashion CNN of tools/torch_models.py (flatten exported as Reshape; see the script).
/usr/bin/python3 bench/serve/export_fashion_cnn.py "$OUT"
touch -d '1 hour ago' "$OUT/cnn/1/model.onnx" "$OUT/cnn/1"

echo "== machine"
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg)"

echo "== executor (strata bench)"
"$BUILD/strata" bench "$OUT/cnn.onnx" --threads "$INTRA" --batch 1 --warmup 50 --iters 2000 --json
"$BUILD/strata" bench "$OUT/cnn.onnx" --threads "$INTRA" --batch "${MAX_BATCH:-32}" --warmup 10 --iters 300 --json

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_server() {  # $1 = label, rest = extra flags
  local label=$1; shift
  local port; port=$(free_port)
  "$BUILD/strata" serve --host=127.0.0.1 --port=0 --rest_api_port="$port" --model_name=cnn \
      --model_base_path="$OUT/cnn" --tensorflow_intra_op_parallelism="$INTRA" "$@" 2> "$OUT/serve_$label.log" &
  local pid=$!
  for _ in $(seq 1 300); do
    curl -sf "127.0.0.1:$port/readyz" > /dev/null && break
    sleep 0.1
  done
  echo "== serving: $label ($*)"
  "$BUILD/strata_serve_load" --port "$port" --target /v1/models/cnn:predict --instance_shape 1,28,28 \
      --connections "$CONNECTIONS" --duration "$SECONDS_PER_RUN" --warmup 2 --json
  curl -s "127.0.0.1:$port/monitoring/prometheus/metrics" | grep -E '^:tensorflow:serving:batching_session:processed_batch_size_(sum|count)' || true
  kill -TERM "$pid"
  wait "$pid"
}

run_server no_batching ${NO_BATCHING_FLAGS:-}
cat > "$OUT/batching.config" <<CONF
max_batch_size { value: ${MAX_BATCH:-32} }
batch_timeout_micros { value: ${BATCH_TIMEOUT_MICROS:-0} }
max_enqueued_batches { value: 1000 }
num_batch_threads { value: ${BATCH_THREADS:-1} }
CONF
run_server batching --enable_batching --batching_parameters_file="$OUT/batching.config" ${BATCHING_FLAGS:-}
