/*
 * hccn-topo: validates a topology file and prints its summary.
 *
 *   hccn-topo [-v] FILE            summary (-v: every device and link too)
 *   hccn-topo FILE --route A B     the route from NPU A to NPU B
 *   hccn-topo list                 the configs found by name (topo_list.h)
 *   hccn-topo import|export|detect ...   tools/import/ (docs/import.md)
 *
 * FILE is a path or a config name (hgx-h100): device_sim/topo_find.c.
 * Exit status: 0 when the file is valid, 2 when it is not (the one-line error
 * on stderr) or when the arguments are wrong (usage on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccn/hccn_sim.h"
#include "tools/topo_list.h"
#include "tools/tool_text.h"
#include "tools/import/imp.h"

static const char *const level_names[3] = {"intra-node", "NIC", "network"};

static int usage(FILE *f, int code)
{
    fprintf(f, "usage: hccn-topo [-v] FILE\n"
               "       hccn-topo FILE --route A B\n"
               "       hccn-topo list\n"
               "       hccn-topo import|export|detect ... (docs/import.md)\n"
               "Validates a topology file (docs/topology.md) and prints its "
               "summary.\n"
               "  -v, --verbose   also list every device and link\n"
               "  --route A B     print the route from NPU A to NPU B\n"
               "  list            the configs FILE can name (hgx-h100), with "
               "their size and description\n"
               "FILE is a path, or the name of a config of 'list'.\n"
               "Exit status: 0 valid, 2 invalid file or bad arguments.\n");
    return code;
}

/* "SRC->DST" as "SRC -> DST" (device names hold no '-' followed by '>'). */
static const char *arrow(const char *name)
{
    static char buf[128];
    char safe[sizeof(buf)];
    const char *p = strstr(name, "->");
    if (p == NULL)
        return tool_safe(name, buf, sizeof(buf));
    snprintf(safe, sizeof(safe), "%.*s -> %s", (int)(p - name), name, p + 2);
    return tool_safe(safe, buf, sizeof(buf));
}

/* The network switch's reduction unit (network.reduce), when there is
 * one: the link from a network device to itself. */
static void print_net_reduce(const hccn_topo_t *t)
{
    for (int i = hccn_topo_links(t) - 1; i >= 0; i--) {
        hccn_link_info_t l = {.struct_size = sizeof(l)};
        hccn_device_info_t v = {.struct_size = sizeof(v)};
        if (hccn_topo_link(t, i, &l) != HCCN_OK || l.src != l.dst ||
            hccn_topo_device(t, l.src, &v) != HCCN_OK || v.node >= 0)
            continue;
        char safe[256];
        printf("network reduce: %s, %g GB/s, lat %g us\n",
               tool_safe(v.name, safe, sizeof(safe)), l.bw_Bps / 1e9,
               l.lat_s * 1e6);
        return;
    }
}

/* The nodes whose PCIe traffic is staged through host memory (p2p false):
 * one line per run of nodes with the same figures. */
static void print_staged(const hccn_topo_t *t)
{
    int n = hccn_topo_nodes(t);
    for (int first = 0; first < n;) {
        double e, f, e2, f2;
        if (!hccn_topo_staged(t, first, &e, &f)) {
            first++;
            continue;
        }
        int last = first;
        while (last + 1 < n && hccn_topo_staged(t, last + 1, &e2, &f2) &&
               e2 == e && f2 == f)
            last++;
        if (first == last)
            printf("staged (no p2p): node %d", first);
        else
            printf("staged (no p2p): nodes %d..%d", first, last);
        printf(", efficiency %g, duplex %g\n", e, f);
        first = last + 1;
    }
}

/* The software model as loaded (preset and overrides merged): one line
 * for the call, one per protocol on. Figures "intra / net". */
static void print_software(const hccn_topo_t *t)
{
    hccn_software_t sw = {.struct_size = sizeof(sw)};
    if (hccn_topo_software(t, &sw) != HCCN_OK || !sw.present)
        return;
    char safe[64];
    printf("software: %s, launch %g us, host %g us x %d NPU(s) a thread, "
           "%d slot(s)", sw.stack[0] ? tool_safe(sw.stack, safe,
                                                  sizeof(safe))
                                     : "(no stack)",
           sw.launch_us, sw.host_us, sw.ranks_per_thread, sw.slots);
    if (sw.nvls_launch_us > 0.0)
        printf(", in-switch launch %g us", sw.nvls_launch_us);
    if (sw.nvls_step_set)
        printf(", in-switch step %g us", sw.nvls_step_us);
    if (sw.nvls_net_step_us > 0.0)
        printf(", in-switch network step %g us", sw.nvls_net_step_us);
    if (sw.send_overhead_us > 0.0 || sw.recv_overhead_us > 0.0)
        printf(", host per message %g us sent / %g us received",
               sw.send_overhead_us, sw.recv_overhead_us);
    if (sw.link_efficiency[HCCN_LINK_FABRIC] < 1.0 ||
        sw.link_efficiency[HCCN_LINK_PCIE] < 1.0 ||
        sw.link_efficiency[HCCN_LINK_NIC] < 1.0)
        printf(", link efficiency where the file gives none: fabric %g, "
               "pcie %g, NIC %g", sw.link_efficiency[HCCN_LINK_FABRIC],
               sw.link_efficiency[HCCN_LINK_PCIE],
               sw.link_efficiency[HCCN_LINK_NIC]);
    printf("; per protocol, inside a node / through a NIC:\n");
    for (int p = 0; p < HCCN_NPROTO; p++) {
        if (!sw.enabled[p])
            continue;
        printf("  %s: launch %g us, step %g / %g us, efficiency %g / %g",
               hccn_proto_name(p),
               sw.proto_launch_us[p] > 0.0 ? sw.proto_launch_us[p]
                                           : sw.launch_us,
               sw.step_us[p][0], sw.step_us[p][1], sw.efficiency[p][0],
               sw.efficiency[p][1]);
        if (sw.max_bytes[p][0] > 0.0 || sw.max_bytes[p][1] > 0.0)
            printf(", up to %g / %g B", sw.max_bytes[p][0],
                   sw.max_bytes[p][1]);
        if (sw.tree_step_set[p])
            printf(", tree step %g / %g us", sw.tree_step_us[p][0],
                   sw.tree_step_us[p][1]);
        if (sw.ring_step_us[p] > 0.0)
            printf(", ring across nodes >= %g us a step in a node",
                   sw.ring_step_us[p]);
        if (p == HCCN_PROTO_SIMPLE && sw.ring_plateau > 1.0)
            printf(", ring across nodes x%g a step", sw.ring_plateau);
        double least = 1.0;
        int at = -1;
        for (int i = 0; i < HCCN_TREE_SIZES; i++)
            if (sw.tree_bw[p][i] > 0.0 && sw.tree_bw[p][i] < least) {
                least = sw.tree_bw[p][i];
                at = i;
            }
        if (at >= 0)
            printf(", tree across nodes down to %g of its bandwidth (at "
                   "%g KiB)", least, (double)(1u << at) / 16.0);
        if (sw.max_GBps[p][0] > 0.0 || sw.max_GBps[p][1] > 0.0)
            printf(", bus bandwidth <= %g GB/s on 2 nodes, %g on more",
                   sw.max_GBps[p][0], sw.max_GBps[p][1]);
        printf("\n");
    }
}

static void print_summary(const hccn_topo_t *t)
{
    hccn_topo_summary_t s = {.struct_size = sizeof(s)};
    hccn_topo_summary(t, &s);
    char buf[1024];
    printf("name: %s\n", tool_safe(hccn_topo_name(t), buf, sizeof(buf)));
    printf("source: %s\n", tool_safe(hccn_topo_source(t), buf, sizeof(buf)));
    printf("nodes: %d\n", hccn_topo_nodes(t));
    printf("npus: %d\n", hccn_topo_npus(t));
    printf("devices: %d\n", hccn_topo_devices(t));
    printf("links: %d\n", hccn_topo_links(t));
    for (int l = 0; l < 3; l++) {
        printf("level %d (%s): %d links", l, level_names[l],
               s.links_per_level[l]);
        if (s.links_per_level[l] > 0)
            printf(", min %g GB/s per link", s.bw_per_level[l] / 1e9);
        printf("\n");
    }
    printf("bisection: %g GB/s\n", s.bisection_Bps / 1e9);
    print_net_reduce(t);
    print_staged(t);
    print_software(t);
}

static void print_graph(const hccn_topo_t *t)
{
    static const char *const kinds[] = {"npu", "switch", "nic", "bridge"};
    for (int d = 0; d < hccn_topo_devices(t); d++) {
        hccn_device_info_t v = {.struct_size = sizeof(v)};
        hccn_topo_device(t, d, &v);
        char safe[256];
        printf("device %d: %s (%s, node %d, lat %g us)\n", d,
               tool_safe(v.name, safe, sizeof(safe)), kinds[v.kind], v.node,
               v.lat_s * 1e6);
    }
    for (int i = 0; i < hccn_topo_links(t); i++) {
        hccn_link_info_t l = {.struct_size = sizeof(l)};
        hccn_topo_link(t, i, &l);
        printf("link %d: %s (level %d, %g GB/s, lat %g us)\n", i,
               arrow(l.name), l.level, l.bw_Bps / 1e9, l.lat_s * 1e6);
    }
}

/* Parses a whole decimal NPU index; -1 when s is not one. */
static int parse_npu(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s != '\0' && *end == '\0' && v >= 0 && v < (1L << 30) ? (int)v
                                                                   : -1;
}

static int print_route(const hccn_topo_t *t, const char *as, const char *bs)
{
    int a = parse_npu(as), b = parse_npu(bs), links[HCCN_ROUTE_MAX], n;
    double lat;
    if (a < 0 || b < 0 || a >= hccn_topo_npus(t) || b >= hccn_topo_npus(t)) {
        fprintf(stderr, "hccn-topo: --route: NPUs must be in 0..%d\n",
                hccn_topo_npus(t) - 1);
        return 2;
    }
    hccn_topo_route(t, a, b, links, &n, &lat);
    printf("route %d -> %d: %d links, latency %g us\n", a, b, n, lat * 1e6);
    for (int i = 0; i < n; i++) {
        hccn_link_info_t l = {.struct_size = sizeof(l)};
        hccn_topo_link(t, links[i], &l);
        printf("  link %d: %s (%g GB/s, lat %g us)\n", links[i],
               arrow(l.name), l.bw_Bps / 1e9, l.lat_s * 1e6);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *file = NULL, *ra = NULL, *rb = NULL;
    int verbose = 0;
    if (argc == 2 && !strcmp(argv[1], "list"))
        return list_configs();
    if (argc > 1 && (!strcmp(argv[1], "import") ||
                     !strcmp(argv[1], "export") || !strcmp(argv[1], "detect")))
        return hccn_imp_main(argc - 1, argv + 1);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return usage(stdout, 0);
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
            verbose = 1;
        } else if (!strcmp(argv[i], "--route") && i + 2 < argc) {
            ra = argv[++i];
            rb = argv[++i];
        } else if (argv[i][0] == '-' || file != NULL) {
            return usage(stderr, 2);
        } else {
            file = argv[i];
        }
    }
    if (file == NULL)
        return usage(stderr, 2);

    hccn_topo_t *t = NULL;
    if (hccn_topo_load(file, NULL, 0, &t) != HCCN_OK) {
        fprintf(stderr, "%s\n", hccn_last_error());
        return 2;
    }
    int code = 0;
    if (ra != NULL) {
        code = print_route(t, ra, rb);
    } else {
        print_summary(t);
        if (verbose)
            print_graph(t);
    }
    hccn_topo_free(t);
    return code;
}
