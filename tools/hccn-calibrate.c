/*
 * hccn-calibrate: fits a topology's software model (docs/calibrate.md) to
 * benchmark outputs of the user's own cluster, as the benchmarks print
 * them (nccl-tests, rccl-tests, OSU, hccl_test), and writes the topology
 * with the fitted "software" section.
 *
 *   hccn-calibrate -t TOPO [--set P=V]... [-o OUT] [--fit LIST] [--fit-bw]
 *                  [--fit-max SIZE] [--sweeps N] COLL:FILE[@P=V...]...
 *
 * A run's own edits follow its file after '@' (runs of one family on
 * clusters of different sizes, fitted together).
 *
 * The free parameters are the stack's: launch_us (then one launch for
 * every protocol: their own are dropped), host_us, send_overhead_us and
 * recv_overhead_us (these three only where --fit names them), and per
 * enabled protocol
 * its step_us and (but for the bulk protocol, whose efficiency is the
 * hardware's bandwidth: --fit-bw) its efficiency, for the classes of route
 * the topology has. The fit minimises the mean squared log ratio of
 * predicted to measured time over the rows up to --fit-max, by coordinate
 * descent (golden sections, sweeps until one gains < 0.1 %). Errors are printed per run and per size band
 * before and after.
 */
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"
#include "tools/calib_parse.h"
#include "tools/calib_report.h"
#include "tools/tool_size.h"

#define MAX_RUNS 64
#define MAX_SETS 64
#define MAX_PARAMS 16
#define GOLDEN_ITERS 14
#define GRID_POINTS 12
/* --prior's default: a parameter 10x off its loaded value costs the fit
 * 5.3e-4, what 2.3 % of error on every row costs; a parameter that moves
 * the rows by less than that stays near the loaded value. */
#define PRIOR_DEFAULT 1e-4

typedef struct {
    char name[40];
    double *val;
    double lo, hi;
    double start;                /* the loaded value: the prior's centre */
    int is_time;                 /* searched on ln(x + 0.1) */
} param_t;

typedef struct {
    const char *topo;
    const char *sets[MAX_SETS + 1];
    int nsets;
    calib_run_t runs[MAX_RUNS];
    int nruns;
    uint64_t fit_max;
    hccn_software_t sw;
    int tied[HCCN_NPROTO][HCCN_NCLASS];  /* a fitted step the tree's step
                                            of that class follows */
    int per_thread[MAX_RUNS];    /* each run's ranks_per_thread */
    param_t params[MAX_PARAMS];
    int nparams;
    double **pred;               /* per run, per row: seconds */
    long evals;
    int sweeps;                  /* at most (--sweeps; default 12) */
    double prior;                /* --prior: weight of the pull to start */
} calib_t;

static const char *const cls_name[HCCN_NCLASS] = {"intra", "net"};

/* ------------------------------------------------------ software json --- */

static void pair_json(char *buf, size_t len, const char *key,
                      const double *v)
{
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "\"%s\": {\"intra\": %.17g, \"net\": %.17g}",
             key, v[0], v[1]);
}

/* The tree's step of each class whose step is fitted is that step (the
 * classes not fitted keep the tree's own row). */
static void tie_tree(calib_t *c)
{
    for (int p = 0; p < HCCN_NPROTO; p++)
        for (int k = 0; k < HCCN_NCLASS; k++)
            if (c->tied[p][k] && c->sw.tree_step_set[p])
                c->sw.tree_step_us[p][k] = c->sw.step_us[p][k];
}

/* The whole "software" object of sw (every field, so no preset shows),
 * with per_thread NPUs driven by one host thread. */
static void software_json(const hccn_software_t *sw, int per_thread,
                          char *buf, size_t len)
{
    /* ring_plateau and tree_bw (below) are written whatever their values:
     * a file's stack would otherwise put its preset's back over a model
     * that has none. */
    snprintf(buf, len, "{\"launch_us\": %.17g, \"host_us\": %.17g, "
             "\"ranks_per_thread\": %d, \"slots\": %d, "
             "\"nvls_launch_us\": %.17g, \"nvls_net_step_us\": %.17g, "
             "\"allpairs_max_bytes\": %.17g, "
             "\"send_overhead_us\": %.17g, \"recv_overhead_us\": %.17g, "
             "\"ring_plateau\": %.17g",
             sw->launch_us, sw->host_us, per_thread, sw->slots,
             sw->nvls_launch_us, sw->nvls_net_step_us, sw->allpairs_max_bytes,
             sw->send_overhead_us, sw->recv_overhead_us,
             sw->ring_plateau > 1.0 ? sw->ring_plateau : 1.0);
    if (sw->channels > 0) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, ", \"channels\": %d", sw->channels);
    }
    if (sw->nvls_step_set) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, ", \"nvls_step_us\": %.17g",
                 sw->nvls_step_us);
    }
    size_t m = strlen(buf);
    snprintf(buf + m, len - m, ", \"link_efficiency\": {\"fabric\": %.17g, "
             "\"pcie\": %.17g, \"nic\": %.17g}",
             sw->link_efficiency[HCCN_LINK_FABRIC],
             sw->link_efficiency[HCCN_LINK_PCIE],
             sw->link_efficiency[HCCN_LINK_NIC]);
    for (int p = 0; p < HCCN_NPROTO; p++) {
        size_t n = strlen(buf);
        snprintf(buf + n, len - n, ", \"%s\": {\"enabled\": %s, ",
                 hccn_proto_name(p), sw->enabled[p] ? "true" : "false");
        if (sw->proto_launch_us[p] > 0.0) {
            n = strlen(buf);
            snprintf(buf + n, len - n, "\"launch_us\": %.17g, ",
                     sw->proto_launch_us[p]);
        }
        pair_json(buf, len, "step_us", sw->step_us[p]);
        strncat(buf, ", ", len - strlen(buf) - 1);
        pair_json(buf, len, "efficiency", sw->efficiency[p]);
        strncat(buf, ", ", len - strlen(buf) - 1);
        pair_json(buf, len, "max_bytes", sw->max_bytes[p]);
        n = strlen(buf);
        snprintf(buf + n, len - n, ", \"max_GBps\": {\"two_nodes\": %.17g, "
                 "\"more_nodes\": %.17g}, \"ring_step_us\": %.17g",
                 sw->max_GBps[p][0], sw->max_GBps[p][1],
                 sw->ring_step_us[p]);
        if (sw->tree_step_set[p]) {
            strncat(buf, ", ", len - strlen(buf) - 1);
            pair_json(buf, len, "tree_step_us", sw->tree_step_us[p]);
        }
        for (int i = 0; i < HCCN_TREE_SIZES; i++) {
            n = strlen(buf);
            snprintf(buf + n, len - n, "%s%.17g",
                     i == 0 ? ", \"tree_bw\": [" : ", ",
                     sw->tree_bw[p][i] > 0.0 ? sw->tree_bw[p][i] : 1.0);
        }
        strncat(buf, "]", len - strlen(buf) - 1);
        strncat(buf, "}", len - strlen(buf) - 1);
    }
    strncat(buf, "}", len - strlen(buf) - 1);
}

/* ------------------------------------------------------------ predict --- */

/* The topology of run r (r < 0: the --set edits alone), with the current
 * software model when with_sw. */
static hccn_topo_t *load(calib_t *c, int with_sw, int r)
{
    static char edit[8192];
    const char *edits[MAX_SETS + 17];
    int n = 0;
    for (; n < c->nsets; n++)
        edits[n] = c->sets[n];
    for (int i = 0; r >= 0 && i < c->runs[r].nedits; i++)
        edits[n++] = c->runs[r].edits[i];
    if (with_sw) {
        strcpy(edit, "software=");
        tie_tree(c);
        software_json(&c->sw, r >= 0 ? c->per_thread[r]
                                     : c->sw.ranks_per_thread,
                      edit + 9, sizeof(edit) - 9);
        edits[n++] = edit;
    }
    hccn_topo_t *t = NULL;
    if (hccn_topo_load(c->topo, edits, n, &t) != HCCN_OK) {
        fprintf(stderr, "hccn-calibrate: %s\n", hccn_last_error());
        exit(1);
    }
    return t;
}

/* Predicts every row of run r (those up to limit bytes) on t. */
static void predict_run(calib_t *c, hccn_topo_t *t, int r, uint64_t limit)
{
    const calib_run_t *run = &c->runs[r];
    hccn_call_t *calls = calloc((size_t)run->nrows, sizeof(*calls));
    double *ends = calloc((size_t)run->nrows, sizeof(double));
    int n = 0;
    for (int i = 0; i < run->nrows && calls && ends; i++)
        if (run->rows[i].bytes <= limit)
            calls[n++] = (hccn_call_t){
                .struct_size = sizeof(hccn_call_t), .coll = run->coll,
                .count = run->rows[i].count, .dtype = run->rows[i].dtype,
                .inplace = run->coll != HCCN_COLL_ALLTOALL};
    if (calls == NULL || ends == NULL ||
        hccn_predict(t, calls, n, ends, NULL) != HCCN_OK) {
        fprintf(stderr, "hccn-calibrate: %s: %s\n", run->file,
                calls && ends ? hccn_last_error() : "out of memory");
        exit(1);
    }
    for (int i = 0, k = 0; i < run->nrows; i++)
        if (run->rows[i].bytes <= limit) {
            c->pred[r][i] = ends[k] - (k > 0 ? ends[k - 1] : 0.0);
            k++;
        }
    free(calls);
    free(ends);
}

static double to_u(const param_t *p, double x);

/* The pull of the parameters to their loaded values: --prior times the
 * sum of their squared distances on the search's scale (log time, log
 * efficiency). A parameter the runs leave free, or nearly so, then stays
 * at the preset's value instead of wandering to wherever the search's
 * last probe was; one the runs determine moves as before (the weight is
 * small against what a misfit of a few per cent adds). */
static double prior_term(const calib_t *c)
{
    double sum = 0.0;
    for (int i = 0; i < c->nparams; i++) {
        const param_t *p = &c->params[i];
        double d = p->is_time ? to_u(p, *p->val) - to_u(p, p->start)
                              : log(*p->val / p->start);
        sum += d * d;
    }
    return c->prior * sum;
}

/* Mean squared log ratio of predicted to measured time over the rows up
 * to the fit limit, with the current parameters, plus the prior. */
static double objective(calib_t *c)
{
    double sum = 0.0;
    long n = 0;
    for (int r = 0; r < c->nruns; r++) {
        hccn_topo_t *t = load(c, 1, r);
        predict_run(c, t, r, c->fit_max);
        hccn_topo_free(t);
        for (int i = 0; i < c->runs[r].nrows; i++)
            if (c->runs[r].rows[i].bytes <= c->fit_max) {
                double e = log(c->pred[r][i] /
                               (c->runs[r].rows[i].time_us * 1e-6));
                sum += e * e;
                n++;
            }
    }
    c->evals++;
    return (n > 0 ? sum / (double)n : 0.0) + prior_term(c);
}

/* ---------------------------------------------------------------- fit --- */

static double to_u(const param_t *p, double x)
{
    return p->is_time ? log(x + 0.1) : x;
}

static double from_u(const param_t *p, double u)
{
    return p->is_time ? exp(u) - 0.1 : u;
}

static double at(calib_t *c, param_t *p, double u)
{
    *p->val = from_u(p, u);
    return objective(c);
}

/* A search of p over its range, keeping the best value seen (the current
 * one included): GRID_POINTS evenly spaced (in log time for times) find
 * the best cell, then a golden-section search refines it between the
 * points either side. The grid first, because an objective may be flat
 * over part of the range (a floor that binds only above some value of
 * p) and a golden section started there would close on the flat part. */
static double fit_one(calib_t *c, param_t *p, double best)
{
    const double g = (sqrt(5.0) - 1.0) / 2.0;
    double keep = *p->val;
    double lo = to_u(p, p->lo), hi = to_u(p, p->hi);
    double step = (hi - lo) / (GRID_POINTS - 1), gu = lo, gf = INFINITY;
    for (int k = 0; k < GRID_POINTS; k++) {
        double u = lo + k * step, f = at(c, p, u);
        if (f < gf) {
            gf = f;
            gu = u;
        }
    }
    double a = gu - step > lo ? gu - step : lo;
    double b = gu + step < hi ? gu + step : hi;
    double x1 = b - g * (b - a), x2 = a + g * (b - a);
    double f1 = at(c, p, x1), f2 = at(c, p, x2);
    for (int i = 0; i < GOLDEN_ITERS; i++) {
        if (f1 <= f2) {
            b = x2, x2 = x1, f2 = f1;
            x1 = b - g * (b - a);
            f1 = at(c, p, x1);
        } else {
            a = x1, x1 = x2, f1 = f2;
            x2 = a + g * (b - a);
            f2 = at(c, p, x2);
        }
    }
    double u = f1 <= f2 ? x1 : x2, f = f1 <= f2 ? f1 : f2;
    if (gf < f) {
        u = gu;
        f = gf;
    }
    if (f < best) {
        *p->val = from_u(p, u);
        return f;
    }
    *p->val = keep;
    return best;
}

static void add_param(calib_t *c, const char *name, double *val, double lo,
                      double hi, int is_time)
{
    if (c->nparams == MAX_PARAMS)
        return;
    param_t *p = &c->params[c->nparams++];
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->val = val;
    p->start = *val > lo ? *val : lo;
    p->lo = lo;
    p->hi = hi;
    p->is_time = is_time;
}

/* The free parameters: all of them, or those named in list. */
static void choose_params(calib_t *c, const char *list, int fit_bw,
                          int classes)
{
    char name[40];
    hccn_software_t *sw = &c->sw;
    if (list == NULL || strstr(list, "launch_us") != NULL) {
        /* One launch for every protocol: the stack's per protocol go. */
        add_param(c, "launch_us", &sw->launch_us, 0.0, 500.0, 1);
        for (int p = 0; p < HCCN_NPROTO; p++)
            sw->proto_launch_us[p] = 0.0;
    }
    if (list != NULL && strstr(list, "host_us") != NULL)   /* named only */
        add_param(c, "host_us", &sw->host_us, 0.0, 100.0, 1);
    /* The hosts' time per message: named only, as host_us. */
    if (list != NULL && strstr(list, "send_overhead_us") != NULL)
        add_param(c, "send_overhead_us", &sw->send_overhead_us, 0.0, 100.0,
                  1);
    if (list != NULL && strstr(list, "recv_overhead_us") != NULL)
        add_param(c, "recv_overhead_us", &sw->recv_overhead_us, 0.0, 100.0,
                  1);
    for (int p = 0; p < HCCN_NPROTO; p++)
        for (int k = 0; k < classes; k++) {
            if (!sw->enabled[p])
                continue;
            snprintf(name, sizeof(name), "%s.step_us.%s",
                     hccn_proto_name(p), cls_name[k]);
            if (list == NULL || strstr(list, name) != NULL) {
                /* The fitted step serves the tree too, for its class. */
                add_param(c, name, &sw->step_us[p][k], 0.0, 200.0, 1);
                c->tied[p][k] = 1;
            }
            snprintf(name, sizeof(name), "%s.efficiency.%s",
                     hccn_proto_name(p), cls_name[k]);
            if ((list == NULL && (p != HCCN_PROTO_SIMPLE || fit_bw)) ||
                (list != NULL && strstr(list, name) != NULL))
                add_param(c, name, &sw->efficiency[p][k], 0.05, 1.0, 0);
        }
}

static void predict_all(calib_t *c, int with_sw)
{
    for (int r = 0; r < c->nruns; r++) {
        hccn_topo_t *t = load(c, with_sw, r);
        predict_run(c, t, r, UINT64_MAX);
        hccn_topo_free(t);
    }
}

/* Writes the topology file with the fitted "software" section. */
static int write_topology(calib_t *c, const char *out)
{
    hccn_topo_t *t = load(c, 0, -1);
    json_object *doc = json_object_from_file(hccn_topo_source(t));
    hccn_topo_free(t);
    char sw[8192];
    tie_tree(c);
    software_json(&c->sw, c->sw.ranks_per_thread, sw, sizeof(sw));
    json_object *obj = json_tokener_parse(sw);
    if (doc == NULL || obj == NULL) {
        fprintf(stderr, "hccn-calibrate: cannot read %s again\n", c->topo);
        json_object_put(doc);
        json_object_put(obj);
        return 1;
    }
    json_object_object_add(doc, "software", obj);
    int rc = json_object_to_file_ext(out, doc, JSON_C_TO_STRING_PRETTY |
                                                   JSON_C_TO_STRING_NOSLASHESCAPE);
    json_object_put(doc);
    if (rc != 0) {
        fprintf(stderr, "hccn-calibrate: cannot write %s\n", out);
        return 1;
    }
    printf("# wrote %s%s\n", out, c->nsets ? " (the --set edits are not "
                                             "in it)" : "");
    return 0;
}

/* -------------------------------------------------------------- main --- */

static int parse_coll(const char *s, hccn_coll_t *out)
{
    for (int k = 0; k < HCCN_COLL_BARRIER; k++)
        if (calib_same_name(s, hccn_coll_name((hccn_coll_t)k))) {
            *out = (hccn_coll_t)k;
            return 0;
        }
    return -1;
}

/* A weight: a finite number >= 0. */
static int parse_prior(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= 0.0) || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: hccn-calibrate -t TOPO [--set PATH=VALUE]... [-o OUT]\n"
            "                      [--fit NAME,...] [--fit-bw] "
            "[--fit-max SIZE] [--sweeps N] [--prior W]\n"
            "                      COLL:FILE[@PATH=VALUE...]...\n"
            "  COLL: allreduce, allgather, reduce_scatter, broadcast, "
            "reduce, alltoall\n"
            "  FILE: nccl-tests / rccl-tests / OSU / hccl_test output, as "
            "printed\n");
    exit(2);
}

static void read_runs(calib_t *c, int argc, char **argv)
{
    for (int i = optind; i < argc; i++) {
        char err[512], *colon = strchr(argv[i], ':');
        hccn_coll_t coll;
        if (colon == NULL || c->nruns == MAX_RUNS)
            usage();
        *colon = '\0';
        calib_run_t *run = &c->runs[c->nruns];
        char *edits[16];
        int nedits = 0;
        for (char *at = strchr(colon + 1, '@'); at != NULL && nedits < 16;
             at = strchr(at + 1, '@')) {
            *at = '\0';
            edits[nedits++] = at + 1;
        }
        if (parse_coll(argv[i], &coll) != 0) {
            fprintf(stderr, "hccn-calibrate: %s: unknown collective \"%s\"\n",
                    colon + 1, argv[i]);
            exit(2);
        }
        if (calib_read(colon + 1, coll, run, err, sizeof(err)) != 0) {
            fprintf(stderr, "hccn-calibrate: %s\n", err);
            exit(1);
        }
        for (int k = 0; k < nedits; k++)
            run->edits[k] = edits[k];
        run->nedits = nedits;
        c->nruns++;
    }
    if (c->nruns == 0)
        usage();
}

/* Run r must be of its topology's size. */
static void check_ranks(calib_t *c, int r, const hccn_topo_t *t)
{
    if (c->runs[r].ranks != 0 && c->runs[r].ranks != hccn_topo_npus(t)) {
            fprintf(stderr, "hccn-calibrate: %s: %d ranks, but %s has %d "
                    "NPUs (give --set edits that make it that cluster)\n",
                    c->runs[r].file, c->runs[r].ranks, c->topo,
                    hccn_topo_npus(t));
            exit(1);
        }
}

/* The elements of each row's call of run r, on n ranks. nccl-tests' size
 * is the whole buffer (for allgather, reduce_scatter and alltoall n
 * blocks: its count column is one block, but hccn-perf's is the whole, so
 * the size decides); OSU's and hccl_test's are one rank's message (for
 * alltoall, per peer). */
static void set_counts(calib_t *c, int r, int n)
{
    calib_run_t *run = &c->runs[r];
    int blocks = strcmp(run->format, "nccl-tests") == 0 &&
                 (run->coll == HCCN_COLL_ALLGATHER ||
                  run->coll == HCCN_COLL_REDUCE_SCATTER ||
                  run->coll == HCCN_COLL_ALLTOALL);
    for (int i = 0; i < run->nrows; i++)
        run->rows[i].count = run->rows[i].bytes /
                             hccn_dtype_size(run->rows[i].dtype) /
                             (uint64_t)(blocks ? n : 1);
}

static void setup(calib_t *c, const char *list, int fit_bw)
{
    int classes = 1;
    for (int r = 0; r < c->nruns; r++) {
        hccn_topo_t *t = load(c, 0, r);
        hccn_software_t own = {.struct_size = sizeof(own)};
        hccn_topo_software(t, &own);
        /* The run's own: as its output says (nGpus), else its topology. */
        c->per_thread[r] = c->runs[r].gpus > 0 ? c->runs[r].gpus
                                                : own.ranks_per_thread;
        check_ranks(c, r, t);
        set_counts(c, r, hccn_topo_npus(t));
        classes = hccn_topo_nodes(t) > 1 ? 2 : classes;
        hccn_topo_free(t);
    }
    hccn_topo_t *t = load(c, 0, -1);
    c->sw.struct_size = sizeof(c->sw);
    hccn_topo_software(t, &c->sw);
    hccn_topo_free(t);
    choose_params(c, list, fit_bw, classes);
    c->pred = calloc((size_t)c->nruns, sizeof(double *));
    for (int r = 0; c->pred && r < c->nruns; r++)
        if ((c->pred[r] = calloc((size_t)c->runs[r].nrows,
                                 sizeof(double))) == NULL)
            c->pred = NULL;
    if (c->pred == NULL || c->nparams == 0) {
        fprintf(stderr, "hccn-calibrate: %s\n", c->pred == NULL
                ? "out of memory" : "no parameter to fit (--fit names none "
                "of this topology's)");
        exit(1);
    }
}

static void fit(calib_t *c)
{
    double best = objective(c), start = best;
    double *was = malloc((size_t)c->nparams * sizeof(double));
    for (int i = 0; was && i < c->nparams; i++)
        was[i] = *c->params[i].val;
    /* Sweeps until one gains less than 0.1 % (the parameters are
     * correlated: launch and per-step costs trade against each other). */
    for (int s = 0; s < c->sweeps; s++) {
        double before = best;
        for (int i = 0; i < c->nparams; i++)
            best = fit_one(c, &c->params[i], best);
        if (!(best < before * 0.999))
            break;
    }
    printf("# fit: mean squared log time ratio + prior %.4g -> %.4g (%ld "
           "evaluations)\n", start, best, c->evals);
    for (int i = 0; was && i < c->nparams; i++)
        printf("#   %-24s %10.4g -> %.4g\n", c->params[i].name, was[i],
               *c->params[i].val);
    free(was);
}

int main(int argc, char **argv)
{
    static const struct option longs[] = {
        {"topology", required_argument, NULL, 't'},
        {"set", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},
        {"fit", required_argument, NULL, 'f'},
        {"fit-bw", no_argument, NULL, 'b'},
        {"fit-max", required_argument, NULL, 'm'},
        {"sweeps", required_argument, NULL, 'w'},
        {"prior", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    static calib_t c = {.fit_max = 16u << 20, .sweeps = 12,
                        .prior = PRIOR_DEFAULT};
    const char *out = NULL, *list = NULL;
    int opt, fit_bw = 0;
    while ((opt = getopt_long(argc, argv, "t:o:h", longs, NULL)) != -1) {
        if (opt == 't')
            c.topo = optarg;
        else if (opt == 's' && c.nsets < MAX_SETS)
            c.sets[c.nsets++] = optarg;
        else if (opt == 'o')
            out = optarg;
        else if (opt == 'f')
            list = optarg;
        else if (opt == 'b')
            fit_bw = 1;
        else if (opt == 'm' && tool_parse_size(optarg, &c.fit_max) == 0)
            continue;
        else if (opt == 'w' && (c.sweeps = atoi(optarg)) > 0)
            continue;
        else if (opt == 'p' && parse_prior(optarg, &c.prior) == 0)
            continue;
        else
            usage();
    }
    if (c.topo == NULL)
        usage();
    read_runs(&c, argc, argv);
    setup(&c, list, fit_bw);
    int rows = 0;
    for (int r = 0; r < c.nruns; r++) {
        rows += c.runs[r].nrows;
        printf("# run %s: %s %s, %d rows\n", c.runs[r].file,
               c.runs[r].format, hccn_coll_name(c.runs[r].coll),
               c.runs[r].nrows);
    }
    printf("# %d runs, %d rows; fitting %d parameters on the rows up to "
           "%llu B\n", c.nruns, rows, c.nparams,
           (unsigned long long)c.fit_max);
    predict_all(&c, 0);
    calib_print_errors(c.runs, c.nruns, c.pred, "before");
    fit(&c);
    predict_all(&c, 1);
    calib_print_errors(c.runs, c.nruns, c.pred, "after");
    return out != NULL ? write_topology(&c, out) : 0;
}
