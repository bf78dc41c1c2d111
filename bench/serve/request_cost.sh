#!/usr/bin/env bash
# The server's own CPU cost per request (BENCHMARKS.md "Serving cost per request"): the load generator runs in its
# own network namespace, joined to the server's by a veth pair, so every request crosses a real TCP stack (not the
# loopback shortcut) and the generator's CPU is not the server's. For REST and gRPC at batch 1 on the Fashion CNN:
#   server CPU us/request  = (utime + stime of the server process over the run) / requests it answered
#   executor CPU us/example = `strata bench --threads 1 --batch 1`'s process CPU time per run
#   overhead               = the difference: HTTP/JSON or gRPC/protobuf, threads, copies, the reply.
# Needs root (ip netns). One intra-op thread and passive OpenMP waits on both sides, so spin-waiting is not counted.
#
#   bench/serve/request_cost.sh [BUILD_DIR] [SECONDS] [CONNECTIONS]
set -euo pipefail
source "$(dirname "$0")/netns.sh"
BUILD=${1:-build}
SECONDS_PER_RUN=${2:-10}
CONNECTIONS=${3:-32}
export OMP_WAIT_POLICY=passive
[ "$(id -u)" = 0 ] || { echo "request_cost.sh: needs root for 'ip netns' (network namespaces)" >&2; exit 2; }
NS=strata_cost_$$
VS=vs$$ VC=vc$$
SERVER_IP=10.201.$((RANDOM % 250)).1
CLIENT_IP=${SERVER_IP%.1}.2
OUT=$(mktemp -d /tmp/strata_request_cost.XXXXXX)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  netns_down
  rm -rf "$OUT"
}
trap cleanup EXIT
netns_up

/usr/bin/python3 bench/serve/export_fashion_cnn.py "$OUT" > /dev/null
touch -d '1 hour ago' "$OUT/cnn/1/model.onnx" "$OUT/cnn/1"
INPUT=$(/usr/bin/python3 -c "import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)" "$OUT/cnn.onnx")

echo "== machine"
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== executor: strata bench --threads 1 --batch 1"
"$BUILD/strata" bench "$OUT/cnn.onnx" --threads 1 --batch 1 --warmup 200 --iters 20000 --json | tee "$OUT/bench.json"
EXEC_US=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cpu_us_per_run'])" "$OUT/bench.json")

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
REST_PORT=$(free_port)
GRPC_PORT=$(free_port)
"$BUILD/strata" serve --host="$SERVER_IP" --port="$GRPC_PORT" --rest_api_port="$REST_PORT" --model_name=cnn \
    --model_base_path="$OUT/cnn" --tensorflow_intra_op_parallelism=1 ${SERVE_FLAGS:-} 2> "$OUT/serve.log" &
SERVER_PID=$!
for _ in $(seq 1 300); do
  curl -sf "$SERVER_IP:$REST_PORT/readyz" > /dev/null && break
  sleep 0.1
done
curl -sf "$SERVER_IP:$REST_PORT/readyz" > /dev/null || { echo "server did not get ready:"; cat "$OUT/serve.log"; exit 1; }

cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER_PID/stat"; }
answered() {
  curl -s "$SERVER_IP:$REST_PORT/monitoring/prometheus/metrics" |
    awk '/^:tensorflow:serving:request_count\{model_name="cnn",status="OK"\}/ {print $2}' | tail -1
}
TICK=$(getconf CLK_TCK)

measure() {  # $1 = label; the rest = load generator arguments
  local label=$1; shift
  local c0 n0 c1 n1 perf_pid=
  n0=$(answered); n0=${n0:-0}
  c0=$(cpu_ticks)
  # PERF_DIR=dir: also record a CPU profile of the server during the run (perf record -g; it adds its own cost).
  if [ -n "${PERF_DIR:-}" ]; then
    perf record -g -F 999 -p "$SERVER_PID" -o "$PERF_DIR/$label.perf" -- sleep "$SECONDS_PER_RUN" 2> /dev/null &
    perf_pid=$!
  fi
  ip netns exec "$NS" "$BUILD/strata_serve_load" --host "$SERVER_IP" --connections "$CONNECTIONS" \
      --duration "$SECONDS_PER_RUN" --warmup 1 --json "$@" | tee "$OUT/$label.json"
  c1=$(cpu_ticks)
  n1=$(answered)
  [ -n "${perf_pid:-}" ] && wait "$perf_pid" || true
  /usr/bin/python3 - "$label" "$c0" "$c1" "$n0" "$n1" "$TICK" "$EXEC_US" <<'PY'
import sys
label, c0, c1, n0, n1, tick, exec_us = sys.argv[1:]
cpu_s = (float(c1) - float(c0)) / float(tick)
n = float(n1) - float(n0)
per = 1e6 * cpu_s / n
print(f"{label}: {n:.0f} requests, server CPU {cpu_s:.2f} s -> {per:.1f} us/request; executor {float(exec_us):.1f} "
      f"us/example; server overhead {per - float(exec_us):.1f} us/request")
PY
}

echo "== REST predict, batch 1, $CONNECTIONS connections, load generator in netns $NS ($CLIENT_IP -> $SERVER_IP)"
measure rest --port "$REST_PORT" --target /v1/models/cnn:predict --instance_shape 1,28,28
echo "== gRPC Predict (tensor_content), batch 1, $CONNECTIONS callers"
measure grpc --grpc --port "$GRPC_PORT" --model cnn --input_name "$INPUT" --instance_shape 1,28,28
