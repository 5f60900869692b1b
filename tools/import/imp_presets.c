/*
 * Device presets: the figures a foreign file does not carry (memory, link
 * rates per NVLink/HCCS link, the server class's NIC), per GPU generation and
 * Ascend family. Each cites where its figures come from; docs/import.md
 * lists them. Rates are nominal, per direction; no efficiency is applied.
 */
#include <string.h>

#include "imp.h"

static const hccn_imp_preset_t presets[] = {
    {"p100", "NVIDIA Tesla P100-SXM2-16GB", 60, 20, 4, 15.75, 16384, 732,
     21.2, 100, 0, 1.0,
     "P100 datasheet: 16 GB HBM2 at 732 GB/s, 21.2 TFLOPS FP16, 4 NVLink 1.0 "
     "links of 20 GB/s per direction (160 GB/s bidirectional in total), PCIe "
     "3.0 x16; DGX-1 (P100): 100 Gb/s EDR InfiniBand"},
    {"v100", "NVIDIA Tesla V100-SXM2-32GB", 70, 25, 6, 15.75, 32768, 900, 125,
     100, 0, 1.0,
     "V100 datasheet: 32 GB HBM2 at 900 GB/s, 125 TFLOPS tensor, 6 NVLink 2.0 "
     "links of 25 GB/s per direction (300 GB/s bidirectional in total), PCIe "
     "3.0 x16; DGX-1 (V100) datasheet: 4 x 100 Gb/s EDR InfiniBand"},
    {"a100", "NVIDIA A100-SXM4-80GB", 80, 25, 12, 31.5, 81920, 2039, 312, 200,
     0, 1.0,
     "A100 80GB datasheet: 80 GB HBM2e at 2,039 GB/s, 312 TFLOPS FP16 tensor "
     "(dense), 12 third-generation NVLinks, 600 GB/s bidirectional in total "
     "(25 GB/s per link per direction), PCIe 4.0 x16; DGX A100 datasheet: "
     "8 x 200 Gb/s HDR InfiniBand for compute"},
    {"rtx-a6000", "NVIDIA RTX A6000", 86, 14.0625, 4, 31.5, 49152, 768, 0, 100,
     0, 1.0,
     "RTX A6000 datasheet: 48 GB GDDR6 at 768 GB/s, NVLink bridge 112.5 GB/s "
     "bidirectional (4 links: 14.0625 GB/s per link per direction), PCIe 4.0 "
     "x16; no server NIC class: 100 Gb/s assumed"},
    {"rtx4090", "NVIDIA GeForce RTX 4090", 89, 0, 0, 31.5, 24576, 1008, 0, 10,
     0, 1.0,
     "GeForce RTX 4090 specifications: 24 GB GDDR6X at 1,008 GB/s, no NVLink, "
     "PCIe 4.0 x16; workstation NIC: 10 Gb/s Ethernet assumed"},
    {"h100", "NVIDIA H100-SXM5-80GB", 90, 25, 18, 63.0, 81920, 3350, 989, 400,
     0, 1.0,
     "H100 SXM datasheet: 80 GB HBM3 at 3.35 TB/s, 989 TFLOPS FP16 tensor "
     "(dense), 18 fourth-generation NVLinks, 900 GB/s bidirectional in total "
     "(25 GB/s per link per direction), PCIe 5.0 x16; DGX H100 datasheet: "
     "8 x 400 Gb/s NDR InfiniBand for compute"},
    {"h200", "NVIDIA H200-SXM-141GB", 90, 25, 18, 63.0, 144384, 4800, 989,
     400, 0, 1.0,
     "H200 SXM datasheet: 141 GB HBM3e at 4.8 TB/s, 989 TFLOPS FP16 tensor "
     "(dense), NVLink 900 GB/s bidirectional (18 links of 25 GB/s per "
     "direction, as H100), PCIe 5.0 x16; 400 Gb/s NDR per GPU as DGX H100"},
    {"h20", "NVIDIA H20", 90, 25, 18, 63.0, 98304, 4000, 148, 400, 0, 1.0,
     "H20 product brief: 96 GB HBM3 at 4.0 TB/s, 148 TFLOPS FP16 tensor "
     "(dense), NVLink 900 GB/s bidirectional (18 links of 25 GB/s per "
     "direction), PCIe 5.0 x16; 400 Gb/s NDR per GPU as DGX H100"},
    {"b200", "NVIDIA B200 (HGX/DGX B200)", 100, 50, 18, 63.0, 184320, 8000,
     2250, 400, 0, 1.0,
     "DGX B200 datasheet: 8 x B200, 1,440 GB HBM3e in all (180 GB each) at "
     "64 TB/s (8 TB/s each), 14.4 TB/s NVLink in all = 18 fifth-generation "
     "NVLinks of 50 GB/s per link per direction, 8 x 400 Gb/s ConnectX-7; "
     "HGX B200: 36 PFLOPS FP16/BF16 with sparsity over 8 GPUs (2.25 dense "
     "each); PCIe 5.0 x16 to the host assumed (the ConnectX-7's); as "
     "configs/hgx-b200.json"},
    {"mi300x", "AMD Instinct MI300X OAM", 0, 64, 7, 63.0, 196608, 5300,
     1307.4, 400, 0, 1.5,
     "MI300X data sheet: 192 GB HBM3 at 5.3 TB/s, 1307.4 TFLOPS FP16 "
     "(dense), 7 Infinity Fabric (xGMI) links of 128 GB/s bidirectional "
     "(64 GB/s per link per direction), PCIe 5.0 x16; MI300X platform: one "
     "400 Gb/s NIC per GPU; xGMI latency 1.5 us assumed (as "
     "configs/mi300x-8.json)"},
    {"910a", "Ascend 910 (910A), Atlas 800 training server (model 9000)", 0,
     30, 3, 31.5, 32768, 1200, 0, 100, 4, 1.5,
     "Ascend 910 (Hot Chips 31, 2019): 32 GB HBM2 at 1.2 TB/s, 3 HCCS links "
     "of 30 GB/s, one to each other NPU of its group of 4; Atlas 800 (model "
     "9000): 8 NPUs in two HCCS groups of 4, 8 x 100GE RoCE v2 (one per NPU); "
     "HCCS latency 1.5 us assumed (as configs/ascend-910a.json)"},
    {"910b", "Ascend 910B, Atlas 800T A2 training server", 0, 56, 7, 31.5,
     65536, 1600, 0, 200, 8, 1.5,
     "Atlas 800T A2 specification: 8 x Ascend 910B with 64 GB HBM2e (about "
     "1.6 TB/s as commonly quoted), HCCS full mesh of 392 GB/s per NPU over "
     "7 peer links = 56 GB/s per link per direction, 8 x 200GE RoCE v2 (one "
     "per NPU); HCCS latency 1.5 us assumed (as configs/ascend-910b.json)"},
    {"generic", "a generic NPU (illustrative figures)", 0, 0, 0, 32, 1024, 600,
     0, 200, 0, 1.0,
     "no device named by the input: illustrative figures of "
     "configs/default.json (1024 MiB arena, reduction 200 GB/s = a 600 GB/s "
     "memory / 3)"},
};

#define NPRESETS (sizeof(presets) / sizeof(presets[0]))

const hccn_imp_preset_t *hccn_imp_preset(const char *name)
{
    for (size_t i = 0; i < NPRESETS; i++)
        if (!strcmp(presets[i].name, name))
            return &presets[i];
    return NULL;
}

const hccn_imp_preset_t *hccn_imp_preset_sm(int sm)
{
    for (size_t i = 0; i < NPRESETS; i++)
        if (presets[i].sm == sm)
            return &presets[i];
    return NULL;
}

const char *hccn_imp_preset_names(void)
{
    return "p100, v100, a100, rtx-a6000, rtx4090, h100, h200, h20, b200, "
           "mi300x, 910a, 910b, generic";
}
