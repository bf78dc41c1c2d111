#!/usr/bin/env bash
# Server CPU per request for two builds side by side (BENCHMARKS.md "Cost per request"): both servers start once in
# the same network setup as request_cost.sh (load generator in its own namespace, veth pair), then 6 s runs alternate
# between them, ROUNDS times per protocol, so that a busy machine weighs on both alike. Prints server CPU us/request
# ((utime + stime) / requests answered) per run; compare the medians. Needs root (ip netns).
#
#   bench/serve/request_cost_ab.sh BUILD_A BUILD_B [SECONDS] [ROUNDS] [rest|grpc|both]
# PERF_DIR=dir also records a CPU profile of each server during the first round (perf record -g).
set -euo pipefail
source "$(dirname "$0")/netns.sh"
A=$1 B=$2 SECS=${3:-6} ROUNDS=${4:-4} WHAT=${5:-both}
export OMP_WAIT_POLICY=passive
[ "$(id -u)" = 0 ] || { echo "request_cost_ab.sh: needs root for 'ip netns' (network namespaces)" >&2; exit 2; }
NS=strata_ab_$$ VS=vsa$$ VC=vca$$
SERVER_IP=10.202.$((RANDOM % 250)).1
CLIENT_IP=${SERVER_IP%.1}.2
OUT=$(mktemp -d /tmp/strata_request_cost_ab.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  netns_down
  rm -rf "$OUT"
}
trap cleanup EXIT
netns_up
/usr/bin/python3 "$(dirname "$0")/export_fashion_cnn.py" "$OUT" > /dev/null
touch -d '1 hour ago' "$OUT/cnn/1/model.onnx" "$OUT/cnn/1"
INPUT=$(/usr/bin/python3 -c "import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)" "$OUT/cnn.onnx")
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A REST_PORT GRPC_PORT PID BUILD_OF=([A]=$A [B]=$B)
for X in A B; do
  REST_PORT[$X]=$(free_port)
  GRPC_PORT[$X]=$(free_port)
  "${BUILD_OF[$X]}/strata" serve --host="$SERVER_IP" --port="${GRPC_PORT[$X]}" --rest_api_port="${REST_PORT[$X]}" \
      --model_name=cnn --model_base_path="$OUT/cnn" --tensorflow_intra_op_parallelism=1 ${SERVE_FLAGS:-} \
      2> "$OUT/serve_$X.log" &
  PID[$X]=$!
  PIDS+=("$!")
done
for X in A B; do
  for _ in $(seq 1 300); do
    curl -sf "$SERVER_IP:${REST_PORT[$X]}/readyz" > /dev/null && break
    sleep 0.1
  done
  curl -sf "$SERVER_IP:${REST_PORT[$X]}/readyz" > /dev/null || { echo "server $X did not get ready:"; cat "$OUT/serve_$X.log"; exit 1; }
done
answered() {
  curl -s "$SERVER_IP:${REST_PORT[$1]}/monitoring/prometheus/metrics" |
    awk '/^:tensorflow:serving:request_count\{model_name="cnn",status="OK"\}/ {print $2}' | tail -1
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/${PID[$1]}/stat"; }
TICK=$(getconf CLK_TCK)
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A = $A, B = $B"
for r in $(seq 1 "$ROUNDS"); do
  for proto in rest grpc; do
    [ "$WHAT" = both ] || [ "$WHAT" = "$proto" ] || continue
    for X in A B; do
      if [ "$proto" = rest ]; then
        args=(--port "${REST_PORT[$X]}" --target /v1/models/cnn:predict --instance_shape 1,28,28)
      else
        args=(--grpc --port "${GRPC_PORT[$X]}" --model cnn --input_name "$INPUT" --instance_shape 1,28,28)
      fi
      n0=$(answered "$X"); n0=${n0:-0}
      c0=$(cpu_ticks "$X")
      perf_pid=
      if [ -n "${PERF_DIR:-}" ] && [ "$r" = 1 ]; then
        perf record -g -F 999 -p "${PID[$X]}" -o "$PERF_DIR/${proto}_$X.perf" -- sleep "$SECS" 2> /dev/null &
        perf_pid=$!
      fi
      ip netns exec "$NS" "${BUILD_OF[$X]}/strata_serve_load" --host "$SERVER_IP" --connections 32 \
          --duration "$SECS" --warmup 1 --json "${args[@]}" > "$OUT/load.json"
      [ -n "$perf_pid" ] && wait "$perf_pid" || true
      c1=$(cpu_ticks "$X")
      n1=$(answered "$X")
      /usr/bin/python3 - "$r" "$proto" "$X" "$c0" "$c1" "$n0" "$n1" "$TICK" "$OUT/load.json" <<'PY'
import json, sys
r, proto, x, c0, c1, n0, n1, tick, load = sys.argv[1:]
n = float(n1) - float(n0)
per = 1e6 * (float(c1) - float(c0)) / float(tick) / n
j = json.load(open(load))
print(f"round {r} {proto} {x}: {per:6.1f} us/request ({n:.0f} requests, {j['requests_per_second']:.0f}/s, "
      f"{j['failed']} failed)")
PY
    done
  done
done
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
