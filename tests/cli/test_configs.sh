#!/usr/bin/env bash
# configs/: every file validates with hccn-topo; every real-system config
# carries a "sources" field, and its key figures (NPUs, fabric bandwidth,
# NIC bandwidth) appear in hccn-topo's summary and in its sources' text.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
topo="$HCCN_BINARY_DIR/hccn-topo"

[ -x "$topo" ] || { echo "FAIL: $topo not built" >&2; exit 1; }

n=0
for f in "$HCCN_SOURCE_DIR"/configs/*.json; do
    "$topo" "$f" >"$tmp/out" 2>"$tmp/err" ||
        fail "$(basename "$f"): invalid: $(cat "$tmp/err")"
    n=$((n + 1))
done
[ "$n" -ge 11 ] || fail "only $n configs"

# check FILE NPUS NODES FABRIC_GBPS NIC_GBPS: the summary has these figures
# (NIC "-" for a one-node config without NICs), and the sources text of the
# file states the fabric and NIC figures.
check() {
    local file=$1 npus=$2 nodes=$3 fabric=$4 nic=$5 path
    path="$HCCN_SOURCE_DIR/configs/$file"
    "$topo" "$path" >"$tmp/out" 2>&1 || { fail "$file: invalid"; return; }
    grep -qx "npus: $npus" "$tmp/out" || fail "$file: not $npus NPUs"
    grep -qx "nodes: $nodes" "$tmp/out" || fail "$file: not $nodes nodes"
    grep -q "^level 0 (intra-node): .*, min $fabric GB/s per link$" "$tmp/out" ||
        [ "$fabric" = - ] || fail "$file: fabric is not $fabric GB/s: $(grep '^level 0' "$tmp/out")"
    grep -q "^level 1 (NIC): .*, min $nic GB/s per link$" "$tmp/out" ||
        [ "$nic" = - ] || fail "$file: NIC is not $nic GB/s: $(grep '^level 1' "$tmp/out")"
    /usr/bin/python3 - "$path" "$fabric" "$nic" <<'PY' || fail "$file: sources"
import json, sys
doc = json.load(open(sys.argv[1]))
src = doc.get("sources")
assert isinstance(src, dict) and len(src) >= 5, "no sources object"
text = " ".join(src.values())
for fig in sys.argv[2:]:
    assert fig == "-" or fig in text, "sources do not state " + fig
for key in ("npu.arena_MiB", "npu.reduce_bw_GBps"):
    assert key in src or "npu" in src, "no source for " + key
PY
}

# Every config that gives npu.peak_TFLOPS states that figure (each rate,
# when it gives one per dtype) in its sources
# (tests/coll/test_compute_flops.c checks what hccn_compute_flops makes of it).
for f in "$HCCN_SOURCE_DIR"/configs/*.json; do
    /usr/bin/python3 - "$f" <<'PY' || fail "$(basename "$f"): peak_TFLOPS"
import json, sys
doc = json.load(open(sys.argv[1]))
src = doc.get("sources", {})
text = " ".join(src.values() if isinstance(src, dict) else src)
def said(x):   # a rate as the sources write it: "989", "19.5", "1,979"
    return "%g" % x in text or "{:,}".format(x).rstrip("0").rstrip(".") in text
for i, t in enumerate(doc["node_types"]):
    peak = t["npu"].get("peak_TFLOPS")
    if isinstance(peak, dict):   # one rate per dtype: each in the sources
        for k, v in peak.items():
            if not said(v):
                sys.exit("node_types[%d].npu.peak_TFLOPS.%s = %g: not in the "
                         "sources" % (i, k, v))
    elif peak is not None and "%g TFLOPS" % peak not in text:
        sys.exit("node_types[%d].npu.peak_TFLOPS = %g: not in the sources"
                 % (i, peak))
PY
done

check ascend-910b.json 16 2 56 24.5
check ascend-910a.json 8 2 30 12.25
check hgx-a100.json 16 2 240 24.75
check hgx-h100.json 16 2 360 49.5
check pcie-8gpu.json 8 1 28.8 -
check tcp-10gbe.json 2 2 - 1.176
check dgx1-v100.json 16 2 20 12.375   # 25 GB/s links x the stack's 0.80
check mi300x-8.json 16 2 53.12 44.5
check gaudi2-8.json 16 2 36.75 36.75   # 37.5 GB/s x RoCE's 0.98
check hgx-b200.json 16 2 720 49.5
check hgx-b200-sharp.json 16 2 720 49.5
check gb200-nvl72.json 72 1 720 -
check gb200-nvl72-ib.json 144 2 720 49.5
check p5-efa.json 16 2 360 50
check pcie-4090-8.json 16 2 28.8 12.25
check cpu-epyc-16c.json 32 2 14.4 12.375
check ascend-910c-superpod.json 384 1 392 -

finish "configs: all checks passed"
