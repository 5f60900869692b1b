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
#include "hccn/hccn_sim.h"
#include "tools/tool_size.h"
#include "tools/tool_text.h"

typedef struct {
    const char *topo, *spec;
    hccn_coll_t coll;
    int have_coll, nranks, root;
    uint64_t bytes;
    int have_bytes;
    size_t esize;
    hccn_dtype_t dtype;     /* one of esize bytes */
    int mode;               /* HCCN_PREDICT_* */
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

static int parse_mode(const char *s, int *out)
{
    static const char *names[] = {"auto", "engine", "model"};
    static const int modes[] = {HCCN_PREDICT_AUTO, HCCN_PREDICT_ENGINE,
                                HCCN_PREDICT_MODEL};
    for (int i = 0; i < 3; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = modes[i];
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
    o->dtype = e == 1 ? HCCN_INT8 : e == 2 ? HCCN_FP16 : e == 4 ? HCCN_FP32
                                                                : HCCN_FP64;
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
    for (int i = 0; i < hccn_algo_count(); i++) {
        hccn_algo_info_t a = {.struct_size = sizeof(a)};
        if (hccn_algo_info(i, &a) != HCCN_OK)
            continue;
        printf("%-10s %s%s\n", a.name, a.description,
               a.cost_known ? "" : " (no cost model: chosen only when "
                                   "forced)");
        printf("%-10s", "");
        const char *sep = " ";
        for (int c = 0; c < HCCN_COLL_COUNT; c++)
            if (a.colls & 1u << c) {
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

/* The levels (docs/selection.md), and the third one of the hierarchical
 * rows (docs/algorithms.md, hier3) or why there are only two. */
static void print_levels(const hccn_topo_t *topo, int n)
{
    hccn_levels_t lv = {.struct_size = sizeof(lv)};
    if (hccn_topo_levels(topo, n, &lv) != HCCN_OK)
        return;
    printf("ranks: %d on %d node%s, up to %d per node\n", n, lv.nnodes,
           lv.nnodes == 1 ? "" : "s", lv.ppn);
    for (int l = 0; l < 2; l++)
        if (lv.bw_Bps[l] > 0.0)
            printf("level %d (%s): alpha %.2f us, bandwidth %.1f GB/s\n", l,
                   l == 0 ? "inside a node" : "between nodes",
                   lv.alpha_s[l] * 1e6, lv.bw_Bps[l] / 1e9);
    printf("reduce: %.1f GB/s\n", lv.reduce_Bps / 1e9);
    if (lv.nlevels == 2) {
        printf("levels: 2 (%s)\n", lv.why);
        return;
    }
    printf("levels: 3: level 0 = %d ranks of a node, level 1 = %d nodes "
           "of a pod (leaf), level 2 = %d pods (spine)\n",
           lv.ppn, lv.nodes_per_pod, lv.npods);
    printf("level 2 (between pods): alpha %.2f us, bandwidth %.1f GB/s\n",
           lv.alpha_s[2] * 1e6, lv.bw_Bps[2] / 1e9);
}

static int predict(const opts_t *o)
{
    hccn_topo_t *topo;
    if (hccn_topo_load(o->topo, NULL, 0, &topo) != HCCN_OK) {
        fprintf(stderr, "hccn-info: %s\n", hccn_last_error());
        return 2;
    }
    int npus = hccn_topo_npus(topo), n = o->nranks ? o->nranks : npus;
    if (n > npus || o->root >= n) {
        fprintf(stderr, "hccn-info: %s: %d NPUs; -n %d and -r %d must fit\n",
                o->topo, npus, n, o->root);
        hccn_topo_free(topo);
        return 2;
    }
    hccn_call_t call = {.struct_size = sizeof(call), .coll = o->coll,
                        .count = count_of(o, n), .dtype = o->dtype,
                        .root = o->root, .algo = o->spec, .nranks = n};
    char safe[1024];
    printf("topology: %s (%d NPUs)\n",
           tool_safe(hccn_topo_source(topo), safe, sizeof(safe)), npus);
    print_levels(topo, n);
    printf("%s: count %llu x %zu B per rank\n", hccn_coll_name(o->coll),
           (unsigned long long)call.count, o->esize);
    printf("%-10s %14s  %s\n", "algorithm", "predicted", "by");
    for (int i = 0; i < hccn_algo_count(); i++) {
        hccn_algo_info_t al = {.struct_size = sizeof(al)};
        if (hccn_algo_info(i, &al) != HCCN_OK || !(al.colls & 1u << o->coll))
            continue;
        int engine = 0;
        double t = -1.0;
        hccn_predict_algo(topo, &call, al.name, o->mode, &t, &engine);
        if (t >= 0.0)
            printf("%-10s %11.2f us  %s\n", al.name, t * 1e6,
                   engine ? "engine" : "model");
        else
            printf("%-10s %14s  %s\n", al.name, "n/a",
                   al.cost_known ? "cannot run these arguments"
                                 : "no cost model");
    }
    hccn_choice_t ch = {.struct_size = sizeof(ch)};
    int rc = 0;
    if (hccn_predict_choice(topo, &call, &ch) == HCCN_OK) {
        printf("chosen: %s\n", ch.algo);
        printf("%s\n", ch.why);
    } else {
        fprintf(stderr, "hccn-info: %s\n", hccn_last_error());
        rc = 2;
    }
    hccn_topo_free(topo);
    return rc;
}

int main(int argc, char **argv)
{
    opts_t o = {0};
    o.mode = HCCN_PREDICT_AUTO;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    if (o.topo == NULL) {
        list();
        return 0;
    }
    return predict(&o);
}
