#!/usr/bin/env bash
# The seed table: simulated time of one fp32 sum allreduce of 1 GiB on 4 and
# 8 cards of three systems, from the spec-derived configs of configs/, beside
# the figures of the article that motivated hccn (which it states as
# simulated). The configs are not tuned to the article; this prints what
# they give, and which parameters produce each row.
#
#   BUILD_DIR   where hccn-perf is (default build/; built by setup.sh when
#               missing)
#
# Each run moves 1 GiB per card for real (8 GiB of host memory for 8 cards)
# and takes tens of seconds.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$src/build}
[ -x "$build/hccn-perf" ] || "$src/scripts/setup.sh" >&2
cd "$src"

# time_ms CONFIG SET...: simulated ms of one in-place 1 GiB allreduce.
time_ms() {
    local config=$1 sets=() s
    shift
    for s in "$@"; do sets+=(--set "$s"); done
    "$build/hccn-perf" allreduce -t "$config" -b 1G -e 1G -n 1 -w 0 \
        --inplace "${sets[@]}" |
        awk '!/^#/ && NF { printf "%.1f", $6 / 1000; found = 1 }
             END { exit !found }'
}

# One node of k cards: the node's NPU count, and as many NICs.
one_node() {
    echo "node_types[0].count=1" "node_types[0].npu.count=$1" \
        "node_types[0].nics.count=$1"
}

# shellcheck disable=SC2046
{
    tcp4=$(time_ms configs/tcp-10gbe.json "node_types[0].count=4")
    tcp8=$(time_ms configs/tcp-10gbe.json "node_types[0].count=8")
    nvl4=$(time_ms configs/hgx-h100.json $(one_node 4))
    nvl8=$(time_ms configs/hgx-h100.json $(one_node 8))
    hccs4=$(time_ms configs/ascend-910b.json $(one_node 4))
    hccs8=$(time_ms configs/ascend-910b.json $(one_node 8))
}

echo "allreduce, 1 GiB fp32 sum, in place; simulated time in ms"
echo
printf '| %-28s | %8s | %8s | %16s | %16s |\n' system "4 cards" "8 cards" \
    "article, 4 cards" "article, 8 cards"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..30})" ---------: \
    ---------: -----------------: -----------------:
printf '| %-28s | %8s | %8s | %16s | %16s |\n' \
    "TCP cluster (10GbE)" "$tcp4" "$tcp8" 120 210 \
    "GPU NVLink box (HGX H100)" "$nvl4" "$nvl8" 35 68 \
    "NPU HCCS box (Ascend 910B)" "$hccs4" "$hccs8" 28 52
cat <<'EOF'

Which parameters produce each row (hccn's default allreduce, which the
cost model chooses: a mesh reduce-scatter + allgather in every row, as
hccn-info -c allreduce -s 1G shows; sources of every figure in each
config's "sources" field):
- TCP: configs/tcp-10gbe.json with node_types[0].count = 4 or 8 (one card
  per machine): 10GbE NIC at 1.176 GB/s (10 Gb/s x TCP/IPv4 frame
  efficiency 0.941), 10 us NIC + 1 us switch per message. The NIC bandwidth
  decides it: about 2(p-1)/p x 1 GiB / 1.176 GB/s.
- NVLink: configs/hgx-h100.json as one node of 4 or 8 GPUs
  (node_types[0].count=1, npu.count and nics.count = 4 or 8): NVSwitch at
  400 GB/s per GPU per direction (450 nominal x 0.89 calibrated NVLink
  efficiency), 1 us per step, reduction at 1117 GB/s (HBM3 3.35 TB/s / 3).
- HCCS: configs/ascend-910b.json as one node of 4 or 8 NPUs: full mesh of
  56 GB/s HCCS links (nominal), 1.5 us per step, reduction at 533 GB/s.
  The mesh allreduce uses all of an NPU's links at once; a ring
  (--algo ring) would use one, and 56 GB/s would bound it.
The article's figures are its own simulation's; no parameter here was
chosen to match them.
EOF
