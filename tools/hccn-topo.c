/*
 * hccn-topo: validates a topology file and prints its summary.
 *
 *   hccn-topo [-v] FILE            summary (-v: every device and link too)
 *   hccn-topo FILE --route A B     the route from NPU A to NPU B
 *   hccn-topo import|export|detect ...   tools/import/ (docs/import.md)
 *
 * Exit status: 0 when the file is valid, 2 when it is not (the one-line error
 * on stderr) or when the arguments are wrong (usage on stderr).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/topo.h"
#include "tools/import/imp.h"

static const char *const level_names[3] = {"intra-node", "NIC", "network"};

static int usage(FILE *f, int code)
{
    fprintf(f, "usage: hccn-topo [-v] FILE\n"
               "       hccn-topo FILE --route A B\n"
               "       hccn-topo import|export|detect ... (docs/import.md)\n"
               "Validates a topology file (docs/topology.md) and prints its "
               "summary.\n"
               "  -v, --verbose   also list every device and link\n"
               "  --route A B     print the route from NPU A to NPU B\n"
               "Exit status: 0 valid, 2 invalid file or bad arguments.\n");
    return code;
}

static void print_summary(const hccn_sim_topo_t *t)
{
    hccn_sim_topo_summary_t s;
    hccn_sim_topo_summarize(t, &s);
    printf("name: %s\n", t->name);
    printf("source: %s\n", t->source);
    printf("nodes: %d\n", t->nnodes);
    printf("npus: %d\n", t->nnpus);
    printf("devices: %d\n", t->ndevs);
    printf("links: %d\n", t->nlinks);
    for (int l = 0; l < 3; l++) {
        printf("level %d (%s): %d links", l, level_names[l],
               s.links_per_level[l]);
        if (s.links_per_level[l] > 0)
            printf(", min %g GB/s per link", s.bw_per_level[l] / 1e9);
        printf("\n");
    }
    printf("bisection: %g GB/s\n", s.bisection_bw / 1e9);
}

static void print_graph(const hccn_sim_topo_t *t)
{
    static const char *const kinds[] = {"npu", "switch", "nic", "bridge"};
    for (int d = 0; d < t->ndevs; d++)
        printf("device %d: %s (%s, node %d, lat %g us)\n", d, t->devs[d].name,
               kinds[t->devs[d].kind], t->devs[d].node, t->devs[d].lat * 1e6);
    for (int i = 0; i < t->nlinks; i++) {
        const hccn_sim_link_t *l = &t->links[i];
        printf("link %d: %s -> %s (level %d, %g GB/s, lat %g us)\n", i,
               t->devs[l->src].name, t->devs[l->dst].name, l->level,
               l->bw / 1e9, l->lat * 1e6);
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

static int print_route(const hccn_sim_topo_t *t, const char *as,
                       const char *bs)
{
    int a = parse_npu(as), b = parse_npu(bs), links[HCCN_SIM_ROUTE_MAX];
    double lat;
    if (a < 0 || b < 0 || a >= t->nnpus || b >= t->nnpus) {
        fprintf(stderr, "hccn-topo: --route: NPUs must be in 0..%d\n",
                t->nnpus - 1);
        return 2;
    }
    int n = hccn_sim_topo_route(t, a, b, links, &lat);
    printf("route %d -> %d: %d links, latency %g us\n", a, b, n, lat * 1e6);
    for (int i = 0; i < n; i++) {
        const hccn_sim_link_t *l = &t->links[links[i]];
        printf("  link %d: %s -> %s (%g GB/s, lat %g us)\n", links[i],
               t->devs[l->src].name, t->devs[l->dst].name, l->bw / 1e9,
               l->lat * 1e6);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *file = NULL, *ra = NULL, *rb = NULL;
    int verbose = 0;
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

    char err[1024];
    hccn_sim_topo_t *t = NULL;
    if (hccn_sim_topo_load_file(file, &t, err, sizeof(err)) != HCCN_OK) {
        fprintf(stderr, "%s\n", err);
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
    hccn_sim_topo_free(t);
    return code;
}
