# Sourced by request_cost.sh and request_cost_ab.sh: the load generator's network namespace, joined to the server's
# by a veth pair. Expects NS, VS, VC, SERVER_IP and CLIENT_IP set; netns_up creates the pair and addresses,
# netns_down removes them (safe to call twice, and when netns_up never ran).
netns_up() {
  ip netns add "$NS"
  ip link add "$VS" type veth peer name "$VC"
  ip link set "$VC" netns "$NS"
  ip addr add "$SERVER_IP/24" dev "$VS"
  ip link set "$VS" up
  ip netns exec "$NS" ip addr add "$CLIENT_IP/24" dev "$VC"
  ip netns exec "$NS" ip link set "$VC" up
  ip netns exec "$NS" ip link set lo up
}
netns_down() {
  ip netns del "$NS" 2>/dev/null || true
  ip link del "$VS" 2>/dev/null || true
}
