#!/usr/bin/env bash
# Two "hosts" (issue 14): network namespaces joined by a veth pair, mpirun --host across them (its rsh agent enters
# the other namespace), TCP between the workers (btl tcp on the veth subnet only). The 2-worker --deterministic run
# across the namespaces must end with the same weights, bit for bit, as the 2-worker run on one host over shared
# memory (the fixed-order reduction does not depend on the transport). Needs root and iproute2; creates and removes
# namespaces mpia<pid>, mpib<pid>. usage: mpi_netns.sh STRATA
set -euo pipefail
# Under `make test-asan`: Open MPI keeps allocations until exit that LeakSanitizer reports (in its own libraries and
# components); leak checking is off for the workers, the other ASan and UBSan checks stay on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
STRATA=$1
command -v mpirun > /dev/null || { echo "SKIP: mpirun not installed (scripts/install-deps.sh: openmpi-bin)"; exit 77; }
[ "$(id -u)" = 0 ] && command -v ip > /dev/null || { echo "SKIP: needs root and iproute2 (ip netns)"; exit 77; }
OUT=$(mktemp -d)
A=mpia$$ B=mpib$$
cleanup() { ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true; rm -rf "$OUT"; }
trap cleanup EXIT
ip netns add $A || { echo "SKIP: cannot create network namespaces here"; exit 77; }
ip netns add $B
ip link add va$$ type veth peer name vb$$
ip link set va$$ netns $A
ip link set vb$$ netns $B
ip netns exec $A ip addr add 10.211.0.1/24 dev va$$
ip netns exec $B ip addr add 10.211.0.2/24 dev vb$$
for n in $A $B; do ip netns exec $n ip link set lo up; done
ip netns exec $A ip link set va$$ up
ip netns exec $B ip link set vb$$ up
cat > "$OUT/netns_rsh.sh" <<'SH'
#!/bin/sh
# mpirun's rsh agent: "netns_rsh.sh HOST COMMAND..." runs COMMAND in the namespace that holds address HOST.
host=$1; shift
for pair in $NETNS_MAP; do [ "${pair%%=*}" = "$host" ] && ns=${pair#*=}; done
[ -n "$ns" ] || { echo "netns_rsh: no namespace for host $host" >&2; exit 1; }
echo "$host -> $ns" >> "$NETNS_LOG"
exec ip netns exec "$ns" /bin/sh -c "$*"
SH
chmod +x "$OUT/netns_rsh.sh"
/usr/bin/python3 - "$OUT/data" <<'PY'
import numpy as np, os, struct, sys
d = sys.argv[1]; os.makedirs(d)
rng = np.random.default_rng(5)
def write(prefix, n):
    y = rng.integers(0, 3, n).astype(np.uint8)
    x = (rng.random((n, 8, 8)) * 200).astype(np.uint8)
    for i, c in enumerate(y):
        x[i, :, c * 2:c * 2 + 2] //= 2
    open(f'{d}/{prefix}-images-idx3-ubyte', 'wb').write(b'\0\0\x08\x03' + struct.pack('>3I', n, 8, 8) + x.tobytes())
    open(f'{d}/{prefix}-labels-idx1-ubyte', 'wb').write(b'\0\0\x08\x01' + struct.pack('>I', n) + y.tobytes())
write('train', 320); write('t10k', 64)
PY
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
export NETNS_MAP="10.211.0.1=$A 10.211.0.2=$B" NETNS_LOG="$OUT/agent.log"
FLAGS=(--data_dir "$OUT/data" --model_name mlp --input_shape 8 8 1 --num_classes 3 --batch_size 16 --epochs 3
       --learning_rate 0.003 --seed 7 --deterministic --intra_op_threads 1 --verbose 0
       --distribution_strategy multi_worker_mirrored --collective_timeout_s 30)
timeout 120 mpirun --oversubscribe --mca btl self,vader -np 2 "$STRATA" train "${FLAGS[@]}" > "$OUT/local.log" 2>&1 \
  || { cat "$OUT/local.log"; exit 1; }
timeout 120 ip netns exec $A mpirun --host 10.211.0.1:1,10.211.0.2:1 --mca plm_rsh_agent "$OUT/netns_rsh.sh" \
  --mca btl self,tcp --mca btl_tcp_if_include 10.211.0.0/24 --mca oob_tcp_if_include 10.211.0.0/24 \
  -x OMP_WAIT_POLICY "$STRATA" train "${FLAGS[@]}" > "$OUT/hosts.log" 2>&1 || { cat "$OUT/hosts.log"; exit 1; }
grep -q "10.211.0.2 -> $B" "$OUT/agent.log" || { echo "FAIL: rank 1 was not started in namespace $B"; exit 1; }
local_hash=$(grep -o 'weights fnv1a64 [0-9a-f]*' "$OUT/local.log" | sort -u)
hosts_hash=$(grep -o 'weights fnv1a64 [0-9a-f]*' "$OUT/hosts.log" | sort -u)
[ "$(grep -c 'weights fnv1a64' "$OUT/hosts.log")" = 2 ] || { cat "$OUT/hosts.log"; echo "FAIL: not 2 workers"; exit 1; }
[ "$(wc -l <<< "$hosts_hash")" = 1 ] || { echo "FAIL: the hosts' workers differ: $hosts_hash"; exit 1; }
[ "$local_hash" = "$hosts_hash" ] || { echo "FAIL: TCP across namespaces $hosts_hash, shared memory $local_hash"; exit 1; }
echo "PASS: 2 workers in 2 network namespaces over TCP hold the same weights as on one host ($hosts_hash)"
