/*
 * hccn-info: the algorithms hccn knows, and which one it would choose.
 *
 *   hccn-info                                  list every algorithm
 *   hccn-info -t configs/default.json -c allreduce -s 64M [-n 16]
 *                                              predicted time of each
 *                                              candidate, and the choice
 *
 * Predictions come from the cost model (docs/selection.md): the same
 * figures the runtime selects by and logs with HCCN_DEBUG=INFO.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hccn/hccn.h"
#include "tools/tool_size.h"
#include "tools/tool_text.h"
#include "runtime/predict.h"
#include "hierarchy/cost.h"
#include "hierarchy/select.h"

typedef struct {
    const char *topo, *spec;
    hccn_coll_t coll;
    int have_coll, nranks, root;
    uint64_t bytes;
    int have_bytes;
    size_t esize;
    hccn_cost_mode_t mode;
} opts_t;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hccn-info                    list the algorithms\n"
            "       hccn-info -t FILE -c COLL -s SIZE [options]\n"
            "  -t, --topo FILE      topology file\n"
            "  -c, --coll COLL      allreduce reduce_scatter allgather "
            "broadcast reduce\n"
            "                       alltoall scatter gather barrier\n"
            "  -s, --size SIZE      bytes (K/M/G suffixes) as in hccn-perf: "
            "the whole\n"
            "                       message; per rank count = SIZE / "
            "esize, divided by the\n"
            "                       ranks for reduce_scatter, allgather, "
            "alltoall,\n"
            "                       scatter and gather\n"
            "  -n, --ranks N        the first N NPUs of the topology "
            "(default all)\n"
            "  -e, --esize BYTES    element size: 1, 2, 4 or 8 (default 4)\n"
            "  -r, --root R         root of rooted collectives (default 0)\n"
            "  -a, --algo SPEC      an override, as HCCN_ALGO "
            "(docs/selection.md)\n"
            "  -m, --mode MODE      auto (default), engine or model\n");
}

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "hccn-info: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    usage(stderr);
    return 2;
}

static int parse_int(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > 1 << 24)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_coll(const char *s, hccn_coll_t *out)
{
    for (int c = 0; c < HCCN_COLL_COUNT; c++)
        if (strcasecmp(s, hccn_coll_name((hccn_coll_t)c)) == 0 ||
            (c == HCCN_COLL_REDUCE_SCATTER && strcasecmp(s, "reducescatter") == 0)) {
            *out = (hccn_coll_t)c;
            return 0;
        }
    return -1;
}

static int parse_mode(const char *s, hccn_cost_mode_t *out)
{
    static const char *names[] = {"auto", "engine", "model"};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (hccn_cost_mode_t)i;
            return 0;
        }
    return -1;
}

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    static const struct option lo[] = {
        {"topo", 1, 0, 't'}, {"coll", 1, 0, 'c'}, {"size", 1, 0, 's'},
        {"ranks", 1, 0, 'n'}, {"esize", 1, 0, 'e'}, {"root", 1, 0, 'r'},
        {"algo", 1, 0, 'a'}, {"mode", 1, 0, 'm'}, {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    int ch, e = 4;
    while ((ch = getopt_long(argc, argv, "t:c:s:n:e:r:a:m:h", lo, NULL)) !=
           -1) {
        switch (ch) {
        case 't': o->topo = optarg; break;
        case 'c':
            if (parse_coll(optarg, &o->coll) != 0)
                return bad("unknown collective '%s'", optarg);
            o->have_coll = 1;
            break;
        case 's':
            if (tool_parse_size(optarg, &o->bytes) != 0)
                return bad("bad size '%s' (e.g. 8, 4K, 64M, 1G)", optarg);
            o->have_bytes = 1;
            break;
        case 'n':
            if (parse_int(optarg, 1, &o->nranks) != 0)
                return bad("bad rank count '%s'", optarg);
            break;
        case 'e':
            if (parse_int(optarg, 1, &e) != 0 || (e != 1 && e != 2 && e != 4 && e != 8))
                return bad("bad element size '%s' (1, 2, 4 or 8)", optarg);
            break;
        case 'r':
            if (parse_int(optarg, 0, &o->root) != 0)
                return bad("bad root '%s'", optarg);
            break;
        case 'a': o->spec = optarg; break;
        case 'm':
            if (parse_mode(optarg, &o->mode) != 0)
                return bad("bad mode '%s' (auto, engine or model)", optarg);
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    o->esize = (size_t)e;
    if (optind < argc)
        return bad("unexpected argument '%s'", argv[optind]);
    int any = o->topo || o->have_coll || o->have_bytes || o->nranks ||
              o->spec;
    if (any && !(o->topo && o->have_coll &&
                 (o->have_bytes || o->coll == HCCN_COLL_BARRIER)))
        return bad("%s", "a prediction needs -t FILE, -c COLL and -s SIZE");
    return -1;
}

/* ---------------------------------------------------------------- list --- */

static void list(void)
{
    for (const hccn_algo_t *a = hccn_hier_algos(); a->name; a++) {
        printf("%-10s %s%s\n", a->name, a->description,
               hccn_hier_cost_known(a->name) ? ""
                                             : " (no cost model: chosen only "
                                               "when forced)");
        printf("%-10s", "");
        const char *sep = " ";
        for (int c = 0; c < HCCN_COLL_COUNT; c++)
            if (a->colls & 1u << c) {
                printf("%s%s", sep, hccn_coll_name((hccn_coll_t)c));
                sep = ", ";
            }
        printf("\n");
    }
}

/* ------------------------------------------------------------- predict --- */

static uint64_t count_of(const opts_t *o, int n)
{
    uint64_t count = o->bytes / o->esize;
    switch (o->coll) {
    case HCCN_COLL_REDUCE_SCATTER:
    case HCCN_COLL_ALLGATHER:
    case HCCN_COLL_ALLTOALL:
    case HCCN_COLL_SCATTER:
    case HCCN_COLL_GATHER:
        return count / (uint64_t)n;
    case HCCN_COLL_BARRIER:
        return 0;
    default:
        return count;
    }
}

static void print_levels(const hccn_cost_place_t *pl, int n)
{
    hccn_cost_levels_t lv;
    hccn_hier_cost_levels(pl, n, &lv);
    printf("ranks: %d on %d node%s, up to %d per node\n", n, lv.nnodes,
           lv.nnodes == 1 ? "" : "s", lv.ppn);
    for (int l = 0; l < 2; l++)
        if (lv.bw[l] > 0.0)
            printf("level %d (%s): alpha %.2f us, bandwidth %.1f GB/s\n", l,
                   l == 0 ? "inside a node" : "between nodes",
                   lv.alpha[l] * 1e6, lv.bw[l] / 1e9);
    printf("reduce: %.1f GB/s\n", lv.reduce_bw / 1e9);
}

/* Latency and bottleneck bandwidth of the route between NPUs a and b. */
static void route_figs(const hccn_sim_topo_t *t, int a, int b, double *lat,
                       double *bw)
{
    int links[HCCN_SIM_ROUTE_MAX];
    int k = hccn_sim_topo_route(t, a, b, links, lat);
    *bw = INFINITY;
    for (int i = 0; i < k; i++)
        *bw = fmin(*bw, t->links[links[i]].bw);
}

/* The levels the hierarchical rows derive (docs/algorithms.md, hier3):
 * pods from leaf switches, and why there are only two levels when so. */
static void print_pods(const hccn_cost_place_t *pl, int n)
{
    hccn_hier_view_t v;
    int *mem = malloc(5 * (size_t)n * sizeof(int));
    if (mem == NULL || hccn_hier_cost_view(pl, n, mem, mem + n, &v) != 0 ||
        hccn_hier_cost_pods(pl, mem + 2 * n, &v) != 0) {
        free(mem);
        return;
    }
    int *ppod = mem + 3 * n, *psize = mem + 4 * n, even = 1, first = -1;
    memset(ppod, 0, 2 * (size_t)n * sizeof(int));
    for (int r = 0; r < n; r++)
        psize[v.node[r]]++;
    for (int r = 0; r < n && v.pod != NULL; r++)
        if (v.local[r] == 0) {
            ppod[v.pod[r]]++;   /* nodes per pod */
            if (v.pod[r] == 1 && first < 0)
                first = r;
        }
    for (int k = 0; k < v.nnodes; k++)
        even &= psize[k] == psize[0];
    for (int q = 0; q < v.npods; q++)
        even &= ppod[q] == ppod[0];
    if (v.pod == NULL)
        printf("levels: 2 (no leaf switches)\n");
    else if (v.npods < 2)
        printf("levels: 2 (one pod)\n");
    else if (!even)
        printf("levels: 2 (pods or nodes of different sizes)\n");
    else if (ppod[0] == 1)
        printf("levels: 2 (one node per pod: level 1 crosses the spine)\n");
    else if (psize[0] == 1)
        printf("levels: 2 (one rank per node: pods in the place of nodes)\n");
    else {
        double lat, bw;
        route_figs(pl->topo, pl->world[0], pl->world[first], &lat, &bw);
        printf("levels: 3: level 0 = %d ranks of a node, level 1 = %d nodes "
               "of a pod (leaf), level 2 = %d pods (spine)\n",
               psize[0], ppod[0], v.npods);
        printf("level 2 (between pods): alpha %.2f us, bandwidth %.1f GB/s\n",
               lat * 1e6, bw / 1e9);
    }
    free(mem);
}

static int predict(const opts_t *o)
{
    char err[512], why[1024], report[2048];
    hccn_sim_topo_t *topo;
    if (hccn_sim_topo_load_file(o->topo, &topo, err, sizeof(err)) != 0) {
        fprintf(stderr, "hccn-info: %s\n", err);
        return 2;
    }
    int n = o->nranks ? o->nranks : topo->nnpus, rc = 0;
    if (n > HCCN_MAX_TIMING_NPUS) {
        char safe[1024];
        fprintf(stderr, "hccn-info: %s: %d NPUs: predictions take at most "
                "%d (docs/topology.md, Limits)\n",
                tool_safe(o->topo, safe, sizeof(safe)), n,
                HCCN_MAX_TIMING_NPUS);
        hccn_sim_topo_free(topo);
        return 2;
    }
    int *world = malloc((size_t)n * sizeof(int));
    if (n > topo->nnpus || o->root >= n || world == NULL) {
        fprintf(stderr, "hccn-info: %s: %d NPUs; -n %d and -r %d must fit\n",
                o->topo, topo->nnpus, n, o->root);
        free(world);
        hccn_sim_topo_free(topo);
        return 2;
    }
    for (int r = 0; r < n; r++)
        world[r] = r;
    hccn_cost_place_t pl = {topo, world};
    hccn_coll_args_t a = {.coll = o->coll, .nranks = n,
                          .count = count_of(o, n), .esize = o->esize,
                          .root = o->root};
    char safe[1024];
    printf("topology: %s (%d NPUs)\n", tool_safe(topo->source, safe,
                                                  sizeof(safe)), topo->nnpus);
    print_levels(&pl, n);
    print_pods(&pl, n);
    printf("%s: count %llu x %zu B per rank\n", hccn_coll_name(o->coll),
           (unsigned long long)a.count, o->esize);
    printf("%-10s %14s  %s\n", "algorithm", "predicted", "by");
    for (const hccn_algo_t *al = hccn_hier_algos(); al->name; al++) {
        if (!(al->colls & 1u << o->coll))
            continue;
        int engine = 0;
        double t = hccn_hier_cost(al, &a, &pl, o->mode, &engine);
        if (t >= 0.0)
            printf("%-10s %11.2f us  %s\n", al->name, t * 1e6,
                   engine ? "engine" : "model");
        else
            printf("%-10s %14s  %s\n", al->name, "n/a",
                   hccn_hier_cost_known(al->name) ? "cannot run these "
                                                    "arguments"
                                                  : "no cost model");
    }
    hccn_hier_select_in_t in = {topo, world, o->spec};
    const hccn_algo_t *pick =
        hccn_hier_select(&a, &in, why, sizeof(why), report, sizeof(report));
    if (pick != NULL) {
        printf("chosen: %s\n", pick->name);
        printf("%s\n", report);
    } else {
        fprintf(stderr, "hccn-info: %s\n", why);
        rc = 2;
    }
    free(world);
    hccn_sim_topo_free(topo);
    return rc;
}

int main(int argc, char **argv)
{
    opts_t o = {0};
    o.mode = HCCN_COST_AUTO;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (o.topo == NULL) {
        list();
        return 0;
    }
    return predict(&o);
}
