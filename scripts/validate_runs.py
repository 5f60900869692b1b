"""Which config of configs/ describes each run of the calibration set
(measurements.json), and why the others are not simulated. Used by
scripts/validate.py; every config's figures are specification values,
every --set edit below names the datasheet figure it puts in.

A run's "algo", where the run forced NCCL's algorithm, is the one hccn
runs (HCCN_ALGO); elsewhere hccn's default selection decides. A run's
family groups the runs of one system: one config, one stack, and the same
network (a run whose edits put other NICs in, Ethernet for InfiniBand, is
another system, and so is a different GPU server under the same config):
the leave-one-out table fits the stack on all runs of a family but one.
"""
import json
import re

A100 = "configs/hgx-a100.json"
H100 = "configs/hgx-h100.json"
PCIE = "configs/pcie-8gpu.json"
MI300X = "configs/mi300x-8.json"
GB200 = "configs/gb200-nvl72.json"
P5 = "configs/p5-efa.json"
B200_SHARP = "configs/hgx-b200-sharp.json"
GAUDI2 = "configs/gaudi2-8.json"
ONE = "node_types[0].count=1"
# Two RTX 2080 Ti behind one PCIe 3.0 switch (nvidia-smi topo: PIX), no
# P2P: 8 GT/s x 16 lanes x 128b/130b = 15.75 GB/s (the stack's pcie link
# efficiency, the TLP payload share 256 / 280, makes it 14.4 GB/s carried);
# both GPUs in one group.
PCIE3_2 = ["node_types[0].npu.count=2", "node_types[0].fabric.groups=[[0,1]]",
           "node_types[0].fabric.bw_GBps=15.75",
           "node_types[0].fabric.host_bw_GBps=15.75"]

# An HPE Cray EX GH200 node (CSCS Alps): 4 GH200, each H100's 18 NVLink 4
# links (25 GB/s per direction each, H100 datasheet) split 6 per peer, so
# a full mesh of 150 GB/s per pair per direction (x 0.80, the stack's
# NVLink efficiency: 120 carried); one 200 Gb/s Slingshot-11 NIC per GPU,
# 25 GB/s at an Ethernet frame efficiency of 0.98 (ETH200, below) = 24.5.
ETH200 = ["node_types[0].nics.bw_GBps=25", "node_types[0].nics.efficiency=0.98"]
GH200_QUAD = ["node_types[0].npu.count=4", "node_types[0].fabric.reduce=null",
              "node_types[0].fabric.type=mesh",
              "node_types[0].fabric.bw_GBps=150",
              "node_types[0].nics.count=4"] + ETH200
# MI325X (AMD Instinct MI325X datasheet): MI300X's xGMI links (64 GB/s per
# link per direction), 256 GB HBM3E at 6 TB/s (copy 6000 / 2, reduction
# 6000 / 3).
MI325X = ["node_types[0].npu.arena_MiB=262144",
          "node_types[0].npu.mem_bw_GBps=3000",
          "node_types[0].npu.reduce_bw_GBps=2000"]
# MI355X (AMD Instinct MI355X datasheet): 7 Infinity Fabric links of
# 153.6 GB/s bidirectional = 76.8 GB/s per direction, 288 GB HBM3E at
# 8 TB/s; Pollara 400 NICs: 400 Gb/s RoCE v2, the config's 400G RDMA
# NICs at their calibrated efficiency (docs/validation.md).
MI355X = ["node_types[0].fabric.bw_GBps=76.8",
          "node_types[0].npu.arena_MiB=294912",
          "node_types[0].npu.mem_bw_GBps=4000",
          "node_types[0].npu.reduce_bw_GBps=2667"]

# RCCL's Ring on an xGMI mesh is one ring per channel, the channels'
# rings over different links, so every link carries traffic; hccn's
# `ring` is one ring on one link per GPU. hccn's default choice under the
# rccl stack keeps to the library's algorithms, `rings` among them.
RCCL_RING = ("RCCL was forced to its Ring (NCCL_ALGO=Ring), which on an "
             "xGMI mesh runs one ring per channel over different links: "
             "hccn runs its default choice, which under the stack keeps to "
             "the library's algorithms (its multi-channel rings among "
             "them), not its single ring.")

RUNS = {
    "thanos_1node_8xA100_80G_nvswitch_allreduce_g8": {
        "config": A100, "sets": [ONE], "family": "hgx-a100",
        "note": "One process drives all 8 GPUs (-g 8): its launches are "
                "serialised on one thread (ranks_per_thread 8: a call takes "
                "at least 8 x host_us, docs/software.md)."},
    "crusoe_2node_16xA100_80G_ib_allreduce": {
        "config": A100, "sets": [], "family": "hgx-a100",
        "note": "Two nodes over 8 HDR adapters each."},
    "azure_ndmv4_1node_8gpu_nccl_allgather": {
        "config": A100, "sets": [ONE], "family": "hgx-a100",
        "note": "Two sizes published."},
    "aws_p5_1node_8xH100_nvswitch_allreduce": {
        "config": H100, "sets": [ONE], "family": "hgx-h100",
        "note": "Very probably NVLink SHARP (busbw above the links' "
                "bandwidth): the config's NVSwitch reduces (nvls)."},
    "together_1node_8xH100_nvswitch_allgather_ring": {
        "config": H100, "sets": [ONE], "family": "hgx-h100", "algo": "rings",
        "note": "NCCL forced to its ring (NCCL_ALGO=Ring): hccn runs the "
                "library's ring too (rings: channels, slices)."},
    "together_1node_8xH100_nvswitch_reduce_scatter_ring": {
        "config": H100, "sets": [ONE], "family": "hgx-h100", "algo": "rings",
        "note": "NCCL forced to its ring (NCCL_ALGO=Ring): hccn runs the "
                "library's ring too (rings: channels, slices)."},
    "azure_nd_h100_v5_1node_8xH100_nvls_allreduce_busbw": {
        "config": H100, "sets": [ONE], "family": "hgx-h100",
        "note": "NVLink SHARP (NVLS): the config's NVSwitch reduces "
                "(nvls)."},
    "azure_nd_h200_v5_1node_8xH200_nvls_allreduce_busbw": {
        "config": H100, "sets": [ONE], "family": "hgx-h100",
        "note": "H200 has H100's NVLink 4 (900 GB/s): the hgx-h100 config "
                "describes its links; NVLS as above."},
    "gcp_a3mega_2node_16xH100_tcpxo_allreduce": {
        "config": H100, "sets": ETH200,
        "family": "h100-tcpxo",
        "note": "8 x 200 Gb/s Ethernet NICs (200 Gb/s x 0.98 frame "
                "efficiency) with GPUDirect-TCPXO, whose ~120 us host "
                "network stack per call is not NCCL's InfiniBand figure "
                "that the preset carries."},
    "aws_p5_2node_16xH100_efa_nccl2203_ofi_tuner_allreduce": {
        "config": P5, "sets": [], "family": "p5-efa",
        "note": "p5-efa describes these instances: 32 EFA devices of 100 "
                "Gb/s per node as 4 rails per GPU, each device's latency "
                "from the aws-ofi-nccl tuner model's 20 us."},
    "cscs_alps_2node_2xGH200_slingshot_sarus_allreduce": {
        "config": H100, "sets": ["node_types[0].count=2",
                                 "node_types[0].npu.count=1",
                                 "node_types[0].nics.count=1"] + ETH200,
        "family": "gh200-slingshot",
        "note": "One GH200 per node, Slingshot-11 at 200 Gb/s (x 0.98)."},
    "cscs_alps_2node_8xGH200_slingshot_ofi_allreduce": {
        "config": H100, "sets": GH200_QUAD, "family": "gh200-slingshot",
        "note": "Four GH200 per node, every pair joined by 6 NVLink 4 "
                "links and no switch (a mesh fabric); one Slingshot-11 NIC "
                "per GPU through libfabric."},
    "rtx4090_1node_8gpu_pcie_noP2P_allreduce": {
        "config": PCIE, "sets": [], "family": "pcie-4090",
        "note": "No P2P: every message crosses host memory and the CPU "
                "sockets' links, which are not resources in the format."},
    "amd_aac8_1node_8xMI300X_rccl_allreduce": {
        "config": MI300X, "sets": [ONE], "family": "mi300x",
        "note": "One MI300X platform; RCCL's defaults."},
    "amd_aac10_2node_16xMI300X_roce_rccl_allreduce": {
        "config": MI300X, "sets": [], "family": "mi300x",
        "note": "8 RoCE NICs per node of a speed the source does not state: "
                "the config's 400 Gb/s. Its ~219 us small-message floor is "
                "far above RCCL's per-call figure (the source does not "
                "explain it)."},
    "amd_aac11_1node_8xMI325X_ring_rccl_allreduce_large": {
        "config": MI300X, "sets": [ONE] + MI325X, "family": "mi325x",
        "note": "MI325X (MI300X's links, larger and faster HBM); only 4G "
                "and larger published. " + RCCL_RING},
    "amd_aac14_2node_16xMI355X_pollara400_rccl_allreduce": {
        "config": MI300X, "sets": MI355X, "family": "mi355x",
        "note": "MI355X's faster Infinity Fabric links, Pollara 400 NICs."},
    "together_slinky_64node_512xB200_ndr_sharp_collnetdirect_allreduce_busbw": {
        "config": B200_SHARP, "sets": ["node_types[0].count=64"],
        "family": "hgx-b200-sharp", "algo": "hier_sharp",
        "note": "64 B200 servers, NCCL's CollNet Direct over InfiniBand "
                "SHARP (NVLS off): hccn's hier_sharp (reduce-scatter inside "
                "the node, allreduce in the network switch, allgather). The "
                "source reports 12 HCAs per node without saying how they "
                "are used: the config's 8 (one 400 Gb/s NIC per GPU)."},
    "azure_nd_gb200_v6_1node_4xGB200_nvlink5_allreduce_ring_busbw": {
        "config": GB200, "sets": ["node_types[0].npu.count=4"],
        "family": "gb200", "algo": "rings",
        "note": "The 4 GPUs of one compute tray on the NVLink switch "
                "trays; NCCL forced to its ring (hccn: rings)."},
}
for _nodes in (2, 4, 8):
    RUNS["amd_aac11_%dnode_%dxMI325X_ring_rccl_allreduce_large"
         % (_nodes, 8 * _nodes)] = {
        "config": MI300X,
        "sets": ["node_types[0].count=%d" % _nodes] + MI325X,
        "family": "mi325x",
        "note": "MI325X nodes with 8 Broadcom Thor 2 (400 Gb/s) RoCE NICs "
                "each; only 4G and larger published. " + RCCL_RING}
# OSU alltoall between the Grace CPUs of two Alps GH200 nodes (one rank per
# Grace, host buffers) under Open MPI 5 over libfabric's CXI provider: the
# GH200 node's four modules and Slingshot NICs as above (GH200_QUAD; a
# Grace reaches its module's NIC over PCIe Gen5, faster than the NIC), run
# under the mpi preset (docs/software.md). OSU gives the bytes sent to each
# peer in MPI_CHAR: hccn-perf runs int8 and the whole buffer, 8 x that
# (validate.py, "osu_per_peer_bytes").
RUNS["cscs_alps_2node_8rank_grace_cpu_openmpi_osu_alltoall"] = {
    "config": H100, "sets": GH200_QUAD + ["stack=mpi"], "family": "mpi",
    "dtype": "int8",
    "note": "Grace CPU ranks (host memory) over Slingshot-11, Open MPI 5 "
            "with the CXI provider: the mpi preset on the GH200 node "
            "description. The run's intra-node messages also go through "
            "the NIC (CXI), where hccn's take the modules' links."}
# One HLS-Gaudi2 server (configs/gaudi2-8.json), Habana's hccl_demo: one
# process per accelerator, HCCL's defaults. No preset describes HCCL: the
# links' times alone.
RUNS["intel_gaudi2_1node_8xHL225_hccl_demo_allreduce_32MiB"] = {
    "config": GAUDI2, "sets": [ONE], "family": "gaudi2",
    "note": "One Gaudi 2 server, its 8 accelerators all-to-all over 3 "
            "RoCE ports per pair; HCCL has no preset, so the links' times "
            "alone."}
for _coll in ("allreduce", "allgather", "broadcast", "reduce", "alltoall"):
    RUNS["autodl_1node_2xRTX2080Ti_pcie_noP2P_" + _coll] = {
        "config": PCIE, "sets": PCIE3_2, "family": "pcie-2080ti",
        "note": "Two GPUs behind one PCIe 3.0 switch, no P2P: staged "
                "through host memory."}



def gpus_per_thread(run):
    """How many GPUs one host thread drives in run: nccl-tests' -g N
    (--ngpus N) in the run's command (1 where it is not given: one process
    per GPU)."""
    m = re.search(r"(?:^|\s)(?:-g\s*|--ngpus[=\s]\s*)(\d+)",
                  run["software"].get("benchmark", ""))
    return int(m.group(1)) if m else 1


def thread_sets(config_path, run):
    """The --set edit that gives the config's software model the run's
    GPUs per host thread (docs/software.md, host_us): none for one."""
    g = gpus_per_thread(run)
    if g <= 1:
        return []
    with open(config_path) as f:
        has_sw = "software" in json.load(f)
    return ["software.ranks_per_thread=%d" % g if has_sw else
            'software={"ranks_per_thread": %d}' % g]


# Runs not simulated, by id prefix, and why.
SKIPPED = [
    ("redhat_ocp_2node_1xL40S", "no config of PCIe GPU servers with NICs"),
    ("redhat_ocp_2node_2xL40S", "no config of PCIe GPU servers with NICs"),
    ("redhat_ocp_2node_16xH200", "NCCL's socket transport over one shared "
                                 "interface: no preset for it"),
    ("cscs_alps_2node_8rank_gh200_gpu", "OSU alltoall of GPU buffers over "
                                        "Open MPI: what device memory adds "
                                        "to each message (22 us at 1 B a "
                                        "peer against the Grace run's 12) "
                                        "is not in the mpi preset"),
    ("intel_gaudi2d_2node", "Gaudi 2D servers whose scale-out is host NICs "
                            "(4 or 8, of 200 or 400 Gb/s: the source does "
                            "not say which)"),
    ("limulidae_910b", "one summary bandwidth per run, no sizes; no HCCL "
                       "preset"),
]


def skipped_reason(rid, run):
    """Why run rid is not simulated (None: it is)."""
    if rid in RUNS:
        return None
    if not run["health"].startswith("healthy") and \
            not run["health"].startswith("summary"):
        return "degraded on purpose (%s)" % run["health"][:60]
    for prefix, why in SKIPPED:
        if rid.startswith(prefix):
            return why
    return "no config describes its hardware"
