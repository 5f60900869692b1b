#!/usr/bin/env bash
# hccn-topo import/export/detect (docs/import.md): every fixture of
# tests/data/import imports to a topology whose NPU count, per-pair link
# bandwidths, NIC count and speed match the figures written in the fixture
# (times the cited preset's per-link rate); the output loads with hccn-topo
# and runs in hccn-perf; exports round-trip with the same ring allreduce time;
# malformed inputs fail with one line naming the file and line or JSON path.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
topo="$HCCN_BINARY_DIR/hccn-topo"
perf="$HCCN_BINARY_DIR/hccn-perf"
py=/usr/bin/python3
data="$HCCN_SOURCE_DIR/tests/data/import"

# imp NAME ARGS...: imports into $tmp/NAME.json; it must load and run.
imp() {
    local name=$1
    shift
    if ! "$topo" import "$@" -o "$tmp/$name.json" 2>"$tmp/err"; then
        fail "$name: import failed: $(cat "$tmp/err")"
        return 1
    fi
    "$topo" "$tmp/$name.json" >"$tmp/$name.summary" 2>&1 ||
        fail "$name: output does not load: $(cat "$tmp/$name.summary")"
    # With data up to 64 NPUs; beyond, timing-only (the same schedules):
    # a 128-NPU cluster of 64 GiB arenas is more address space than a
    # sanitizer's runtime leaves a process.
    # Timing-only runs take 8 B and 1 MiB only: between them the cost
    # model picks mesh on 128 ranks, 16,256 concurrent flows per step,
    # seconds of engine work per size (minutes under ThreadSanitizer).
    local npus data=() sizes=(-b 8 -e 1M -f 32)
    npus=$(sed -n 's/^npus: //p' "$tmp/$name.summary")
    [ "${npus:-0}" -le 64 ] || { data=(--no-data); sizes=(-b 8 -e 1M -f 131072); }
    "$perf" allreduce -t "$tmp/$name.json" "${sizes[@]}" -n 1 -w 0 \
        "${data[@]}" >"$tmp/$name.perf" 2>&1 ||
        fail "$name: hccn-perf failed: $(tail -3 "$tmp/$name.perf")"
}

# check NAME PYTHON-EXPR...: each expression holds on d (the output JSON),
# t (node_types[0]), nics (t's NICs as a list of (npus, bw)).
check() {
    local name=$1
    shift
    "$py" - "$tmp/$name.json" "$@" <<'EOF' || fail "$name: figures differ"
import json, sys
d = json.load(open(sys.argv[1]))
t = d["node_types"][0]
n = t.get("nics")
if isinstance(n, dict):
    nics = [([k], n["bw_GBps"]) for k in range(n["count"])]
else:
    nics = [(x["npus"], x["bw_GBps"]) for x in (n or [])]
notes = "\n".join(d.get("notes", []))
npus = sum(x["count"] * x["npu"]["count"] for x in d["node_types"])
bad = 0
for expr in sys.argv[2:]:
    if not eval(expr):
        print("  not true: %s" % expr, file=sys.stderr)
        bad = 1
if bad:
    print("  node type 0: %s\n  notes:\n%s" % (json.dumps(t), notes), file=sys.stderr)
sys.exit(bad)
EOF
}

[ -x "$topo" ] && [ -x "$perf" ] || { echo "FAIL: tools not built" >&2; exit 1; }

# --- NCCL XML. DGX-1 V100: NVLink counts written in the fixture (per pair
# 1 or 2 links, 6 per GPU) x 25 GB/s (preset v100); uneven -> mesh at
# 6 x 25 / 7, each pair listed in the notes; 4 EDR NICs of 100000 Mb/s, one
# per PCIe switch of 2 GPUs.
imp dgx1 nccl-xml "$data/nccl_dgx1_v100.xml" && check dgx1 \
    'npus == 8' 't["fabric"]["type"] == "mesh"' \
    'abs(t["fabric"]["bw_GBps"] - 6 * 25 / 7) < 1e-9' \
    '"NVLink GPU0-GPU3: 2 links = 50 GB/s" in notes' \
    '"NVLink GPU0-GPU1: 1 links = 25 GB/s" in notes' \
    '"NVLink GPU0-GPU5: 0 links = 0 GB/s" in notes' \
    '"NVLink GPU6-GPU7: 2 links = 50 GB/s" in notes' \
    'nics == [([0, 1], 12.5), ([2, 3], 12.5), ([4, 5], 12.5), ([6, 7], 12.5)]'
# DGX A100: 12 NVLinks (6 NVSwitches x 2) x 25 GB/s = 300; 10 NICs of
# 200000 Mb/s: 8 paired with GPUs, 2 storage ports left out (noted).
imp dgxa100 nccl-xml "$data/nccl_dgx_a100.xml" && check dgxa100 \
    'npus == 8' 't["fabric"] == {"type": "switch", "bw_GBps": 300, "lat_us": 1}' \
    'nics == [([k], 25) for k in range(8)]' \
    '"mlx5_8 (25 GB/s) is not the nearest NIC" in notes' \
    '"mlx5_9 (25 GB/s) is not the nearest NIC" in notes' \
    't["npu"]["arena_MiB"] == 81920'
# HGX H100: 5+4+4+5 = 18 NVLinks x 25 = 450; 8 NDR NICs of 400000 Mb/s.
imp h100 nccl-xml "$data/nccl_hgx_h100.xml" && check h100 \
    'npus == 8' 't["fabric"]["type"] == "switch"' 't["fabric"]["bw_GBps"] == 450' \
    'nics == [([k], 50) for k in range(8)]' 't["npu"]["arena_MiB"] == 81920'
# The same board with Blackwell GPUs (sm 100: preset b200): 18 NVLinks x
# 50 GB/s = 900, 180 GB arenas.
sed 's/sm="90"/sm="100"/' "$data/nccl_hgx_h100.xml" >"$tmp/b200.xml"
imp b200 nccl-xml "$tmp/b200.xml" && check b200 \
    't["fabric"]["type"] == "switch"' 't["fabric"]["bw_GBps"] == 900' \
    't["npu"]["arena_MiB"] == 184320' 'nics == [([k], 50) for k in range(8)]'
# sm 90 is H100 unless --gpu says another Hopper: H200's 141 GB, same links.
imp h200 nccl-xml "$data/nccl_hgx_h100.xml" --gpu h200 && check h200 \
    't["fabric"]["bw_GBps"] == 450' 't["npu"]["arena_MiB"] == 144384'
# Two H100 hosts (two files) on a fat tree of 2 nodes per leaf.
imp h100x2 nccl-xml "$data/nccl_hgx_h100.xml" "$data/nccl_hgx_h100.xml" \
    --network fat-tree:2 && check h100x2 'npus == 16' 't["count"] == 2' \
    'd["network"]["type"] == "leaf_spine"' 'd["network"]["nodes_per_leaf"] == 2'
# 4-GPU PCIe workstation: two PCIe 4.0 x16 switches of 2 GPUs: 16 GT/s x 16
# x 128/130 / 8 GB/s; one 100000 Mb/s NIC shared by the 4 GPUs.
imp ws nccl-xml "$data/nccl_pcie_4gpu.xml" && check ws \
    'npus == 4' 't["fabric"]["type"] == "pcie"' \
    't["fabric"]["groups"] == [[0, 1], [2, 3]]' \
    'abs(t["fabric"]["bw_GBps"] - 16 * 16 * 128 / 130 / 8) < 1e-9' \
    'nics == [([0, 1, 2, 3], 12.5)]'

# RCCL's dump of an 8 x MI300X platform: gcn gfx942 -> preset mi300x (its
# sm, 304, is the compute unit count, not read as a CUDA generation); one
# xGMI link per pair x 64 GB/s -> mesh of 64 GB/s, as configs/mi300x-8.json;
# 8 NICs of 400000 Mb/s.
imp mi300x nccl-xml "$data/rccl_mi300x.xml" && check mi300x \
    'npus == 8' 't["fabric"] == {"type": "mesh", "bw_GBps": 64, "lat_us": 1.5}' \
    'nics == [([k], 50) for k in range(8)]' \
    't["npu"]["arena_MiB"] == 196608' '"read as preset mi300x" in notes'
# A Grace Hopper host: its GPU's C2C link to the CPU is read, not modelled.
printf '%s\n' '<system version="1"><cpu numaid="0">' \
    '<pci busid="0009:01:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">' \
    '<gpu dev="0" sm="90" rank="0" gdr="1"><c2c count="10" bw="45000"/></gpu></pci>' \
    '<pci busid="0000:01:00.0" class="0x020700"><nic>' \
    '<net name="cxi0" dev="0" speed="200000" port="1" latency="0" gdr="1"/>' \
    '</nic></pci></cpu></system>' >"$tmp/gh200.xml"
imp gh200 nccl-xml "$tmp/gh200.xml" && check gh200 'npus == 1' \
    'nics == [([0], 25)]' 't["npu"]["arena_MiB"] == 81920'

# --- nvidia-smi topo -m.
imp smi_dgx1 nvidia-smi "$data/nvsmi_dgx1_v100.txt" --gpu v100 && check smi_dgx1 \
    'npus == 8' 'abs(t["fabric"]["bw_GBps"] - 6 * 25 / 7) < 1e-9' \
    '"NVLink GPU0-GPU3: 2 links = 50 GB/s" in notes' \
    'nics == [([0, 1], 12.5), ([2, 3], 12.5), ([4, 5], 12.5), ([6, 7], 12.5)]'
imp smi_a100 auto "$data/nvsmi_dgx_a100.txt" --gpu a100 && check smi_a100 \
    'npus == 8' 't["fabric"]["type"] == "switch"' 't["fabric"]["bw_GBps"] == 300' \
    'len(nics) == 8' 'all(bw == 25 for _, bw in nics)'
imp smi_ws nvidia-smi "$data/nvsmi_pcie_4gpu.txt" --gpu rtx-a6000 \
    --nic-gbps 40 && check smi_ws \
    'npus == 4' 't["fabric"]["groups"] == [[0, 1], [2, 3]]' \
    'nics == [([0, 1, 2, 3], 5)]'

# --- HCCL rank tables. 910A: one server of 8 = 2 HCCS groups of 4, 30 GB/s
# per link, 100GE (12.5 GB/s) per NPU; 910B: mesh of 8, 56 GB/s, 200GE.
imp rt_a hccl-ranktable "$data/ranktable_910a_1server_v1.0.json" --npu 910a &&
    check rt_a 'npus == 8' 't["count"] == 2' 't["npu"]["count"] == 4' \
    't["fabric"] == {"type": "mesh", "bw_GBps": 30, "lat_us": 1.5}' \
    'nics == [([k], 12.5) for k in range(4)]'
imp rt_b2 hccl-ranktable "$data/ranktable_910b_2server_v1.0.json" &&
    check rt_b2 'npus == 16' 't["count"] == 2' 't["fabric"]["bw_GBps"] == 56' \
    'nics == [([k], 25) for k in range(8)]' '"preset 910b" in notes'
imp rt_b16 auto "$data/ranktable_910b_16server_v2.0.json" &&
    check rt_b16 'npus == 128' 't["count"] == 16' 'd["network"]["type"] == "switch"'
imp rt_pod hccl-ranktable "$data/ranktable_superpod_4server_v1.2.json" &&
    check rt_pod 'npus == 32' 'd["network"]["type"] == "leaf_spine"' \
    'd["network"]["nodes_per_leaf"] == 2'

# --- ASTRA-sim: GB = 2^30 bytes; Switch latency counted on both links.
imp as3 astrasim "$data/astrasim_3d.yml" && check as3 \
    'npus == 16' 't["count"] == 4' 't["fabric"]["type"] == "ring"' \
    't["fabric"]["bw_GBps"] == 50 * 2**30 / 1e9' \
    'nics == [([k], 25 * 2**30 / 1e9) for k in range(4)]' \
    'd["network"]["oversubscription"] == 2' 'd["network"]["nodes_per_leaf"] == 2'
imp as2 auto "$data/astrasim_2d_block.yml" && check as2 \
    'npus == 32' 't["fabric"]["type"] == "switch"' 't["fabric"]["lat_us"] == 1.4' \
    'abs(t["fabric"]["bw_GBps"] - 256 * 2**30 / 1e9) < 1e-6' \
    'd["network"]["lat_us"] == 1.7'

# --- SimGrid: 10Gbps = 1.25 GB/s; network latency = lat + bb_lat.
imp sg16 simgrid "$data/simgrid_cluster16.xml" && check sg16 \
    'npus == 16' 'nics == [([0], 1.25)]' 'd["network"]["lat_us"] == 550' \
    '"bb_bw 2.25 GB/s" in notes'
imp sg4 auto "$data/simgrid_star4.xml" && check sg4 \
    'npus == 4' 'nics == [([0], 1.25)]' 't["count"] == 4' 'd["network"]["lat_us"] == 10'

# --- Round trips: same ring allreduce time (simulated, exact).
ring_time() {  # ring_time TOPO: the 1 MiB ring allreduce time, as JSON float
    "$perf" allreduce -t "$1" --algo ring -b 1M -e 1M -n 1 -w 0 --no-data \
        --json "$tmp/rt.json" >/dev/null 2>&1 || { echo "perf-failed"; return; }
    "$py" -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["records"][0]["time_us"]))' "$tmp/rt.json"
}
for fmt in astrasim:uniform_4x4 simgrid:uniform_16x1; do
    f=${fmt%%:*}
    src="$data/${fmt##*:}.json"
    "$topo" export "$f" "$src" -o "$tmp/rt.$f" 2>"$tmp/err" ||
        fail "export $f: $(cat "$tmp/err")"
    "$topo" import "$f" "$tmp/rt.$f" -o "$tmp/rt.$f.json" 2>"$tmp/err" ||
        fail "import back $f: $(cat "$tmp/err")"
    a=$(ring_time "$src")
    b=$(ring_time "$tmp/rt.$f.json")
    [ "$a" = "$b" ] && [ "$a" != perf-failed ] ||
        fail "round trip $f: ring allreduce $a us before, $b us after"
done
# A stack's link efficiency goes out with the links: hgx-a100's 300 GB/s
# NVLink x 0.80 and 25 GB/s NICs x 0.99 are 240 and 24.75 GB/s, written
# in GiB/s.
"$topo" export astrasim "$HCCN_SOURCE_DIR/configs/hgx-a100.json" \
    >"$tmp/a100.yaml" 2>"$tmp/err" || fail "export hgx-a100: $(cat "$tmp/err")"
grep -q '^bandwidth: \[ 223.517417908, 23.0502337217 \]' "$tmp/a100.yaml" ||
    fail "export hgx-a100: $(grep bandwidth "$tmp/a100.yaml")"
"$topo" export simgrid "$data/uniform_4x4.json" >/dev/null 2>"$tmp/err" &&
    fail "simgrid export of multi-NPU nodes should fail"
grep -q "one-NPU hosts" "$tmp/err" || fail "simgrid export: $(cat "$tmp/err")"

# --- detect: this host; loads and runs.
imp_detect() {
    LSAN_OPTIONS="suppressions=$data/lsan-hwloc.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    ASAN_OPTIONS="fast_unwind_on_malloc=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
        "$topo" detect "$@" -o "$tmp/detect.json" 2>"$tmp/err" ||
        { fail "detect $*: $(cat "$tmp/err")"; return; }
    "$topo" "$tmp/detect.json" >/dev/null 2>&1 || fail "detect $*: does not load"
}
imp_detect
imp_detect --per numa
# An accelerator host, from a hwloc XML (4 GPUs behind two PCIe 4.0
# switches: hwloc linkspeed 31.507692 GB/s; one NIC on a root port).
HWLOC_XMLFILE="$data/hwloc_4gpu.xml" imp_detect --gpu rtx-a6000 --nic-gbps 100
cp "$tmp/detect.json" "$tmp/det4.json"
check det4 'npus == 4' 't["fabric"]["type"] == "pcie"' \
    't["fabric"]["groups"] == [[0, 1], [2, 3]]' 't["fabric"]["bw_GBps"] == 31.50769' \
    't["fabric"]["host_bw_GBps"] == 31.50769' 'nics == [([0, 1, 2, 3], 12.5)]' \
    't["npu"]["arena_MiB"] == 49152'

# --- Malformed input: exit 2, one line naming the file and the place.
bad() {  # bad FORMAT EXPECTED-SUBSTRING CONTENT [ARGS]
    local fmt=$1 want=$2 content=$3
    shift 3
    local f="$tmp/bad.$fmt"
    printf '%s' "$content" >"$f"
    "$topo" import "$fmt" "$f" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    [ "$rc" -eq 2 ] || fail "bad $fmt ($want): exit $rc"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "bad $fmt ($want): not one line: $(cat "$tmp/err")"
    grep -qF -- "$f" "$tmp/err" || fail "bad $fmt ($want): no file name: $(cat "$tmp/err")"
    grep -qF -- "$want" "$tmp/err" || fail "bad $fmt: expected '$want' in: $(cat "$tmp/err")"
    [ -s "$tmp/out" ] && fail "bad $fmt ($want): stdout not empty"
}
head -c 900 "$data/nccl_dgx1_v100.xml" >"$tmp/trunc.xml"
bad nccl-xml ":11: <gpu> of line 8: not closed" "$(cat "$tmp/trunc.xml")"
bad nccl-xml ":2: <gpus>: unknown element" $'<system version="1">\n<gpus/></system>'
# An AMD GPU of no preset (RCCL's gcn; its sm is no CUDA generation).
bad nccl-xml ":2: <gpu>: gcn=gfx90a: no preset (give --gpu" $'<system version="2"><cpu numaid="0"><pci busid="0000:01:00.0">\n<gpu dev="0" sm="110" gcn="gfx90a"/></pci></cpu></system>'
bad nccl-xml ":3: <xgmi>: target 0000:09:00.0 is neither another GPU" $'<system version="2"><cpu numaid="0">\n<pci busid="0000:01:00.0"><gpu dev="0" sm="304" gcn="gfx942"><xgmi target="0000:02:00.0" count="1"/></gpu></pci><pci busid="0000:02:00.0"><gpu dev="1" sm="304" gcn="gfx942">\n<xgmi target="0000:09:00.0" count="1"/></gpu></pci></cpu></system>'
bad nccl-xml ":3: <net>: speed=\"fast\"" $'<system version="1"><cpu numaid="0">\n<pci busid="0000:01:00.0"><gpu dev="0" sm="80"/></pci><nic>\n<net name="mlx5_0" dev="0" speed="fast"/></nic></cpu></system>'
bad nccl-xml ":1: DOCTYPE: an internal DTD subset" '<!DOCTYPE system [<!ENTITY x "y">]><system/>'
bad nccl-xml ":1: attribute value: an entity" '<system version="&x;"/>'
bad nccl-xml ":2: </pci>: does not close <cpu>" $'<system><cpu>\n</pci></system>'
bad simgrid ":3: <cluster>: bw=\"10\": not a number with a unit" $'<?xml version="1.0"?>\n<platform version="4.1">\n<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="10" lat="1us"/></platform>'
bad simgrid ":2: <cluster>: topology=\"TORUS\" is not supported" $'<platform version="4.1">\n<cluster id="c" prefix="n" suffix="" radical="0-3" speed="1Gf" bw="1GBps" lat="1us" topology="TORUS"/></platform>'
# found by fuzzing: a cluster without id
bad simgrid ":2: <cluster>: attribute 'id' is required" $'<platform version="4.1">\n<cluster prefix="n" suffix="" radical="0-3" speed="1Gf" bw="1GBps" lat="1us"/></platform>'
# A radical whose range overflows a long (found by fuzzing): refused, no UB.
bad simgrid ":2: <cluster>: radical holds more than 65536 hosts" $'<platform version="4.1">\n<cluster id="c" prefix="n" suffix="" radical="0-99999999999999999999999" speed="1Gf" bw="1GBps" lat="1us"/></platform>'
bad simgrid ":1: <platform>: version" '<platform version="3"><cluster/></platform>'
bad astrasim ":3: npus_count: has 1 entries" $'topology: [ Ring, Switch ]\n# two dims\nnpus_count: [ 4 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1, 1 ]\n'
bad astrasim ":2: npus_count[1]: 'x2' is not an integer" $'topology: [ Ring, Switch ]\nnpus_count: [ 4, x2 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1, 1 ]\n'
bad astrasim ":1: topology[0]: 'Torus3D' is not supported" $'topology: [ Torus3D ]\nnpus_count: [ 4 ]\nbandwidth: [ 1 ]\nlatency: [ 1 ]\n'
# found by fuzzing: a 54232-NPU node took seconds before it was refused
bad astrasim ":2: npus_count[0]: 54232 NPUs in dimension 0" $'topology: [ Ring, Switch ]\nnpus_count: [ 54232, 3 ]\nbandwidth: [ 1, 1 ]\nlatency: [ 1, 1 ]\n'
bad astrasim ":2: unsupported YAML (nested" $'topology:\n  nested: [ Ring ]\n'
bad astrasim ":5: links_count: unknown key" $'topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 1 ]\nlatency: [ 1 ]\nlinks_count: [ 2 ]\n'
bad hccl-ranktable "server_list[0].device[1].rank_id: must be a string of digits" \
    '{"status":"completed","version":"1.0","server_count":"1","server_list":[{"server_id":"a","device":[{"device_id":"0","device_ip":"1.1.1.1","rank_id":"0"},{"device_id":"1","device_ip":"1.1.1.2","rank_id":1}]}]}'
bad hccl-ranktable "server_count: must be an integer (version 2.0)" \
    '{"status":"completed","version":"2.0","server_count":"1","server_list":[]}'
bad hccl-ranktable "server_list[0].device[0].color: unknown key" \
    '{"status":"completed","version":"1.0","server_count":"1","server_list":[{"server_id":"a","device":[{"device_id":"0","device_ip":"1.1.1.1","rank_id":"0","color":"red"}]}]}'
bad hccl-ranktable ":1: JSON syntax error" '{"status":"completed",'
bad hccl-ranktable "server_list[0]: its devices' rank_ids are not one contiguous block" \
    '{"status":"completed","version":"1.0","server_count":"2","server_list":[{"server_id":"a","device":[{"device_id":"0","device_ip":"1","rank_id":"0"},{"device_id":"1","device_ip":"1","rank_id":"2"}]},{"server_id":"b","device":[{"device_id":"0","device_ip":"1","rank_id":"1"},{"device_id":"1","device_ip":"1","rank_id":"3"}]}]}'
bad nvidia-smi ":2: row GPU0: 'NVX' is not" $'\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNVX\t0-3\nGPU1\tNV1\t X \t0-3\n' --gpu a100
bad nvidia-smi "give --gpu MODEL" $'\tGPU0\nGPU0\t X \n'

finish "all import checks passed"
