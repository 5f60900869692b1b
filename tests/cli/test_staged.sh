#!/usr/bin/env bash
# Staged PCIe traffic without peer-to-peer (docs/topology.md, "Staged
# traffic without peer-to-peer"), through the tools: hccn-topo prints the
# staged figures of a p2p-false config and none for a p2p-true one; on
# pcie-8gpu.json the timing-only path (--no-data) gives the simulated times
# of the data path bit for bit; and a 2-GPU allreduce of 64 MiB drains at
# the closed form of the staged budget.
source "$(dirname "$0")/common.sh"
topo="$HCCN_BINARY_DIR/hccn-topo"
perf="$HCCN_BINARY_DIR/hccn-perf"
cfg="$HCCN_SOURCE_DIR/configs"

out=$("$topo" "$cfg/pcie-4090-8.json") || fail "hccn-topo pcie-4090-8"
grep -qx "staged (no p2p): nodes 0..1, efficiency 0.8, duplex 1.2" <<<"$out" ||
    fail "hccn-topo pcie-4090-8: no staged line: $out"
out=$("$topo" "$cfg/default.json")
grep -q "^staged (no p2p)" <<<"$out" && fail "default.json printed a staged line"

# The data path against the timing-only path: the time columns (out of
# place and in place) of every size, for two collectives.
for coll in allreduce alltoall; do
    args=("$coll" -t "$cfg/pcie-8gpu.json" -b 8 -e 4M -f 8 -n 1 -w 0)
    "$perf" "${args[@]}" >"$tmp/data" 2>&1 || fail "$coll data path"
    "$perf" "${args[@]}" --no-data >"$tmp/nodata" 2>&1 ||
        fail "$coll timing only"
    cols() { awk '!/^#/ && NF > 8 { print $1, $6, $10 }' "$1"; }
    [ -n "$(cols "$tmp/data")" ] || fail "$coll: no rows"
    diff <(cols "$tmp/data") <(cols "$tmp/nodata") >/dev/null ||
        fail "$coll: timing-only times differ from the data path's"
done

# Two GPUs, each its own PCIe 4.0 group (28.8 GB/s): a ring allreduce of
# S bytes sends S/2 twice each way at once, each direction at
# min(E x W, E x F x W / 2) = 0.96 x 28.8 / 2 = 13.824 GB/s, so its
# bandwidth term is S / 13.824 GB/s; the busbw of hccn-perf's largest
# size is within 3 % of that rate (latencies and steps are the rest).
two=(--set 'node_types[0].npu.count=2' --set 'node_types[0].fabric.groups=[[0],[1]]')
"$perf" allreduce -t "$cfg/pcie-8gpu.json" -b 256M -e 256M -n 1 -w 0 \
    --no-data --inplace "${two[@]}" >"$tmp/two" 2>&1 || fail "2-GPU allreduce"
busbw=$(awk '!/^#/ && NF > 8 { print $8 }' "$tmp/two")
/usr/bin/python3 - "$busbw" <<'PY' || fail "2-GPU allreduce busbw $busbw"
import sys
got, want = float(sys.argv[1]), 0.8 * 1.2 * 28.8 / 2
sys.exit(0 if 0.97 * want <= got <= want else 1)
PY
finish "staged: hccn-topo, data path = timing only, 2-GPU closed form"
