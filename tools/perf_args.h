/*
 * hccn-perf: the command line (included by hccn-perf.c only): nccl-tests'
 * options with their meanings, hccn's own (--algo, --set, --sweep,
 * --json, --csv, --trace, --no-data), and errors that name the option.
 */
#ifndef HCCN_TOOLS_PERF_ARGS_H
#define HCCN_TOOLS_PERF_ARGS_H

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"
#include "tools/perf_calls.h"
#include "tools/perf_links.h"
#include "tools/perf_report.h"
#include "tools/perf_topo.h"
#include "tools/tool_size.h"

static int parse_size(const char *s, size_t *out)
{
    uint64_t v;
    if (tool_parse_size(s, &v) != 0)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int min, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < min || v > 1000000000)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_dtype(const char *s, hccn_dtype_t *out)
{
    static const struct { const char *name; hccn_dtype_t dt; } alias[] = {
        {"half", HCCN_FP16}, {"float", HCCN_FP32}, {"double", HCCN_FP64},
        {"bfloat16", HCCN_BF16}, {"int", HCCN_INT32}, {"char", HCCN_INT8},
        {"uint", HCCN_UINT32},
    };
    for (int d = 0; d < HCCN_DTYPE_COUNT; d++)
        if (strcasecmp(s, hccn_dtype_name((hccn_dtype_t)d)) == 0) {
            *out = (hccn_dtype_t)d;
            return 0;
        }
    for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
        if (strcasecmp(s, alias[i].name) == 0) {
            *out = alias[i].dt;
            return 0;
        }
    return -1;
}

static int parse_op(const char *s, hccn_redop_t *out)
{
    for (int o = 0; o < HCCN_REDOP_COUNT; o++)
        if (strcasecmp(s, hccn_redop_name((hccn_redop_t)o)) == 0) {
            *out = (hccn_redop_t)o;
            return 0;
        }
    return -1;
}

/* nccl-tests' binary names (with or without "_perf") for ours. */
static const char *const nccl_names[C_COUNT] = {
    "all_reduce", "reduce_scatter", "all_gather", "broadcast", "reduce",
    "alltoall", "sendrecv", "scatter", "gather", "hypercube"};

static int coll_named(const char *s, int c)
{
    size_t n = strlen(nccl_names[c]);
    return strcmp(s, coll_names[c]) == 0 || strcmp(s, nccl_names[c]) == 0 ||
           (strncmp(s, nccl_names[c], n) == 0 && strcmp(s + n, "_perf") == 0);
}

/* The collectives named by argv[1]: one, or the first six for "all". */
static int parse_colls(const char *s, opts_t *o)
{
    for (int c = 0; c < C_COUNT; c++)
        if ((strcmp(s, "all") == 0 && c < C_ALL) || coll_named(s, c))
            o->colls[o->ncolls++] = c;
    return o->ncolls > 0 ? 0 : -1;
}

/* What an option's values must be, for its error message. */
static const char *bad_hint(int ch)
{
    switch (ch) {
    case 'c': case 'z': case 'p': case 'C': return " (0 or 1)";
    case 'a': return " (0 rank 0, 1 mean, 2 min, 3 max)";
    case 'm': return " (a count >= 1)";
    case 'G': return " (a count >= 0)";
    default: return "";
    }
}

static const char *option_name(const struct option *lo, int ch)
{
    for (; lo->name != NULL; lo++)
        if (lo->val == ch)
            return lo->name;
    return "?";
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: hccn-perf COLLECTIVE [options]\n"
        "  COLLECTIVE: allreduce reduce_scatter allgather broadcast reduce\n"
        "              alltoall sendrecv scatter gather hypercube, or all "
        "(the first\n"
        "              six);\n"
        "              nccl-tests' names too (all_reduce, all_gather_perf, "
        "...)\n"
        "  -t, --topo FILE        topology (default configs/default.json)\n"
        "  -b, --minbytes N       smallest size (default 8; K/M/G suffixes)\n"
        "  -e, --maxbytes N       largest size (default 32M)\n"
        "  -f, --stepfactor F     multiply the size by F (default 2)\n"
        "  -i, --stepbytes N      or add N bytes each step\n"
        "  -n, --iters N          timed iterations per size (default 5)\n"
        "  -w, --warmup_iters N   warm-up iterations (default 1)\n"
        "  -c, --check 0|1        check results (default 1)\n"
        "  -d, --datatype T|all   int8 uint8 int16 uint16 int32 uint32 int64\n"
        "                         uint64 half bfloat16 float double "
        "(default float)\n"
        "  -o, --op OP|all        sum prod max min avg (default sum)\n"
        "  -r, --root N           root of broadcast, reduce, scatter, gather "
        "(default 0)\n"
        "      --algo NAME        force an algorithm (sets HCCN_ALGO)\n"
        "  -a, --average 0|1|2|3  time column from the ranks' own times: "
        "rank 0,\n"
        "                         mean, min, max (nccl-tests' RANK0/AVG/MIN/"
        "MAX)\n"
        "                         (default: latest start to latest end)\n"
        "  -g, --ngpus N, -t N    nccl-tests' GPUs per thread and threads: "
        "one thread\n"
        "                         per NPU here; N x M must divide the ranks\n"
        "  -z, --blocking 0|1     0: post the timed calls as futures, wait "
        "at the end\n"
        "  -m, --agg_iters N      N calls per timed iteration, in one group\n"
        "  -p 0|1, -G N           accepted: init is one call, no CUDA graphs\n"
        "  -C, --report_cputime 0|1  1: the time column is the host's wall "
        "time\n"
        "      --inplace          in-place calls only (default: out-of-place "
        "and in-place)\n"
        "      --set PATH=VALUE   change a topology field before loading it\n"
        "                         (repeatable; e.g. network.lat_us=2;\n"
        "                         PATH=null removes the key)\n"
        "      --sweep PATH=V1,V2,...  measure once per value of PATH\n"
        "      --format nccl|hccl table columns (default nccl)\n"
        "      --json FILE        write every record as JSON\n"
        "      --csv FILE         write every record as CSV\n"
        "      --trace FILE       write a timeline of every run (Chrome "
        "trace JSON:\n"
        "                         ui.perfetto.dev, chrome://tracing)\n"
        "      --no-data          timing only: no bytes moved, no threads; "
        "same times\n"
        "      --no-fold          timing only: simulate every node even where "
        "all\n"
        "                         run alike (slower; same times)\n"
        "      --fault SPEC       add a fault to the topology's plan "
        "(repeatable):\n"
        "                         'KIND TARGET[@AT_US] [FACTOR]' or a "
        "faults element\n"
        "      --sweep-faults link|nic|npu[:slow=F]  one member failed at a "
        "time:\n"
        "                         busbw at -e, most harmful first\n"
        "Times are simulated microseconds; wall is the simulation's own "
        "time. See docs/perf.md.\n");
}

typedef struct {
    opts_t o;
    topo_spec_t topo;
    report_t rep;
    link_sum_t links;           /* the current collective's runs */
    hccn_trace_t *trace;        /* --trace, or NULL */
} cli_t;

/* Parses the options after the collective. Returns -1 to go on, or the
 * exit status. */
static int parse_args(int argc, char **argv, cli_t *cli)
{
    enum { O_INPLACE = 256, O_SET, O_SWEEP, O_FORMAT, O_JSON, O_CSV,
           O_NODATA, O_NOFOLD, O_TRACE, O_ALGO, O_FAULT, O_SWEEP_FAULTS };
    static const struct option lo[] = {
        {"topo", 1, 0, 't'}, {"minbytes", 1, 0, 'b'}, {"maxbytes", 1, 0, 'e'},
        {"stepfactor", 1, 0, 'f'}, {"stepbytes", 1, 0, 'i'},
        {"iters", 1, 0, 'n'}, {"warmup_iters", 1, 0, 'w'},
        {"check", 1, 0, 'c'}, {"datatype", 1, 0, 'd'}, {"op", 1, 0, 'o'},
        {"root", 1, 0, 'r'}, {"algo", 1, 0, O_ALGO},
        {"average", 1, 0, 'a'}, {"ngpus", 1, 0, 'g'}, {"nthreads", 1, 0, 't'},
        {"blocking", 1, 0, 'z'}, {"agg_iters", 1, 0, 'm'},
        {"parallel_init", 1, 0, 'p'}, {"cudagraph", 1, 0, 'G'},
        {"report_cputime", 1, 0, 'C'},
        {"inplace", 0, 0, O_INPLACE}, {"set", 1, 0, O_SET},
        {"sweep", 1, 0, O_SWEEP}, {"format", 1, 0, O_FORMAT},
        {"json", 1, 0, O_JSON}, {"csv", 1, 0, O_CSV},
        {"trace", 1, 0, O_TRACE},
        {"no-data", 0, 0, O_NODATA}, {"no-fold", 0, 0, O_NOFOLD},
        {"fault", 1, 0, O_FAULT}, {"sweep-faults", 1, 0, O_SWEEP_FAULTS},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    opts_t *o = &cli->o;
    int ch, tmp;
    optind = 2;
    while ((ch = getopt_long(argc, argv, "t:b:e:f:i:n:w:c:d:o:r:a:g:z:m:p:G:"
                                         "C:h", lo, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 't':   /* a number is nccl-tests' thread count */
            if (strspn(optarg, "0123456789") == strlen(optarg))
                bad = parse_int(optarg, 1, &o->threads);
            else
                cli->topo.path = optarg;
            break;
        case 'g': bad = parse_int(optarg, 1, &o->gpus); break;
        case 'b': bad = parse_size(optarg, &o->min_bytes); break;
        case 'e': bad = parse_size(optarg, &o->max_bytes); break;
        case 'f': o->factor = atof(optarg); bad = !(o->factor > 1.0); break;
        case 'i': bad = parse_size(optarg, &o->step) || o->step == 0; break;
        case 'n': bad = parse_int(optarg, 1, &o->iters); break;
        case 'w': bad = parse_int(optarg, 0, &o->warmup); break;
        case 'c': bad = parse_int(optarg, 0, &o->check) || o->check > 1; break;
        case 'a': bad = parse_int(optarg, 0, &o->average) || o->average > 3;
            break;
        case 'z': bad = parse_int(optarg, 0, &tmp) || tmp > 1;
            o->nonblocking = tmp == 0;
            break;
        case 'p': bad = parse_int(optarg, 0, &tmp) || tmp > 1; break;
        case 'G':
            bad = parse_int(optarg, 0, &tmp);
            if (!bad && tmp > 0)
                printf("# -G %d: a simulation has no CUDA graphs; ignored\n",
                       tmp);
            break;
        case 'm': bad = parse_int(optarg, 1, &o->agg); break;
        case 'C': bad = parse_int(optarg, 0, &o->cputime) || o->cputime > 1;
            break;
        case 'd':
            o->all_dtypes = strcmp(optarg, "all") == 0;
            bad = !o->all_dtypes && parse_dtype(optarg, &o->dtype);
            break;
        case 'o':
            o->all_ops = strcmp(optarg, "all") == 0;
            bad = !o->all_ops && parse_op(optarg, &o->op);
            break;
        case 'r': bad = parse_int(optarg, 0, &o->root); break;
        case O_ALGO: setenv("HCCN_ALGO", optarg, 1); cli->rep.algo = optarg;
            break;
        case O_INPLACE: o->variants = V_IP; break;
        case O_SET:
            bad = cli->topo.nsets == PERF_SETS_MAX;
            if (!bad)
                cli->topo.sets[cli->topo.nsets++] = optarg;
            break;
        case O_SWEEP:
            if (cli->topo.sweep_path != NULL) {
                fprintf(stderr, "hccn-perf: only one --sweep is allowed\n");
                return 2;
            }
            if (parse_sweep(&cli->topo, optarg) != 0)
                return 2;
            break;
        case O_FORMAT:
            bad = strcmp(optarg, "nccl") != 0 && strcmp(optarg, "hccl") != 0;
            cli->rep.format = strcmp(optarg, "hccl") == 0 ? FMT_HCCL
                                                          : FMT_NCCL;
            break;
        case O_JSON: o->json = optarg; break;
        case O_CSV: o->csv = optarg; break;
        case O_TRACE: o->trace = optarg; break;
        case O_NODATA: o->nodata = 1; break;
        case O_NOFOLD: o->nofold = 1; break;
        case O_FAULT: bad = faults_add_spec(optarg) != 0; break;
        case O_SWEEP_FAULTS: perf_faults.sweep = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            if (ch < 256)
                fprintf(stderr, "hccn-perf: bad value '%s' for option -%c "
                        "(--%s)%s\n", optarg, ch, option_name(lo, ch),
                        bad_hint(ch));
            else
                fprintf(stderr, "hccn-perf: bad value '%s' for option --%s\n",
                        optarg, option_name(lo, ch));
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hccn-perf: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o->min_bytes > o->max_bytes) {
        fprintf(stderr, "hccn-perf: -b is larger than -e\n");
        return 2;
    }
    if (o->nofold && !o->nodata) {
        fprintf(stderr, "hccn-perf: --no-fold applies to timing-only runs; "
                        "add --no-data\n");
        return 2;
    }
    if (o->average >= 0 && o->nodata) {
        fprintf(stderr, "hccn-perf: option -a needs each rank's time: drop "
                        "--no-data (timing-only runs give the span)\n");
        return 2;
    }
    if (o->trace != NULL && o->nodata) {
        fprintf(stderr, "hccn-perf: --trace needs the run with data; drop "
                        "--no-data\n");
        return 2;
    }
    if (o->variants == 0)
        o->variants = cli->rep.format == FMT_HCCL ? V_OOP : V_OOP | V_IP;
    return -1;
}

#endif /* HCCN_TOOLS_PERF_ARGS_H */
