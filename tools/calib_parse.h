/*
 * hccn-calibrate's readers: a benchmark's output as the benchmark prints
 * it (docs/calibrate.md), into (size, count, time) rows.
 *
 *   nccl-tests, rccl-tests, hccn-perf: rows "size count type redop root
 *     time algbw busbw #wrong [time algbw busbw #wrong]"; the in-place
 *     time (the second) where printed, else the first; ranks from the
 *     "#  Rank N ..." lines (or hccn-perf's "# N ranks on ..."); GPUs per
 *     thread from "# nThread T nGpus G" (nccl-tests' -g);
 *   OSU micro-benchmarks: rows "size avg-latency [min max iterations]"
 *     after a "# Size" header; elements of the "# Datatype: MPI_..." line
 *     where there is one, else bytes;
 *   hccl_test: rows "size time bandwidth check" (columns under a
 *     "data_size(Bytes): | aveg_time(us): | ..." header, with or without
 *     the bars); elements of bytes (its output names no type).
 * A line may carry the prefix a launcher or a log collector puts before
 * what the benchmark printed (calib_unprefix). A log of several tests
 * (one job running all_gather_perf, then all_reduce_perf, ...) is read
 * for the collective asked: the tables under "# Collective test starting:
 * NAME_perf" (nccl-tests, rccl-tests) or "# hccn-perf NAME on" of that
 * collective, ranks and GPUs per thread from their own headers. Lines that are none of
 * these are skipped; rows of size 0 are no-ops. A row's type is its own
 * (nccl-tests' -d all prints several): the time depends on the bytes, the
 * type only says how many elements they hold.
 */
#ifndef HCCN_TOOLS_CALIB_PARSE_H
#define HCCN_TOOLS_CALIB_PARSE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"

typedef struct {
    uint64_t bytes, count;       /* size column; elements per call */
    double time_us;
    hccn_dtype_t dtype;          /* the row's element type */
} calib_row_t;

typedef struct {
    const char *file;
    hccn_coll_t coll;
    hccn_dtype_t dtype;          /* of the rows read next (OSU's header) */
    const char *format;          /* "nccl-tests", "osu", "hccl_test" */
    int ranks;                   /* 0: the output does not say */
    int gpus;                    /* GPUs per thread; 0: not said */
    int nrows;
    calib_row_t *rows;
    unsigned long long last_size;  /* the last row read, as read */
    double last_time;
    const char *edits[16];       /* the run's own topology edits */
    int nedits;
} calib_run_t;

/* The element type named s: hccn's names, and the benchmarks' own
 * (nccl-tests' and rccl-tests' -d, OSU's MPI_ types). An 8-bit float,
 * which hccn has no type for, is read as uint8: the same bytes, so the
 * same time. */
static inline int calib_dtype(const char *s, hccn_dtype_t *out)
{
    static const struct {
        const char *name;
        hccn_dtype_t t;
    } alias[] = {{"float", HCCN_FP32}, {"half", HCCN_FP16},
                 {"bfloat16", HCCN_BF16}, {"double", HCCN_FP64},
                 {"char", HCCN_INT8}, {"int", HCCN_INT32},  /* on NCCL 1 */
                 {"f8e4m3", HCCN_UINT8}, {"f8e5m2", HCCN_UINT8},
                 {"fp8_e4m3", HCCN_UINT8}, {"fp8_e5m2", HCCN_UINT8},
                 {"MPI_CHAR", HCCN_INT8}, {"MPI_SIGNED_CHAR", HCCN_INT8},
                 {"MPI_UNSIGNED_CHAR", HCCN_UINT8}, {"MPI_BYTE", HCCN_UINT8},
                 {"MPI_SHORT", HCCN_INT16}, {"MPI_INT", HCCN_INT32},
                 {"MPI_UNSIGNED", HCCN_UINT32}, {"MPI_LONG", HCCN_INT64},
                 {"MPI_LONG_LONG", HCCN_INT64}, {"MPI_FLOAT", HCCN_FP32},
                 {"MPI_DOUBLE", HCCN_FP64}};
    for (size_t i = 0; i < sizeof(alias) / sizeof(*alias); i++)
        if (strcmp(s, alias[i].name) == 0) {
            *out = alias[i].t;
            return 0;
        }
    for (int d = 0; d < HCCN_DTYPE_COUNT; d++)
        if (strcmp(s, hccn_dtype_name((hccn_dtype_t)d)) == 0) {
            *out = (hccn_dtype_t)d;
            return 0;
        }
    return -1;
}

/* Names equal but for underscores ("all_reduce", "allreduce"), up to the
 * end of b; a may go on with "_perf" (a benchmark's binary). */
static inline int calib_same_name(const char *a, const char *b)
{
    for (;; a++, b++) {
        while (*a == '_' && strcmp(a, "_perf") != 0)
            a++;
        while (*b == '_')
            b++;
        if (*b == '\0')
            return *a == '\0' || strcmp(a, "_perf") == 0;
        if (*a != *b)
            return 0;
    }
}

/* Whether list ("a, b, c") holds name as one of its items. */
static inline int calib_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p != '\0'; p += strspn(p, ", ")) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p += len;
    }
    return 0;
}

/* The prefixes launchers and log collectors put before a benchmark's
 * lines, each at most once and in this order: a timestamp
 * ("2024-07-19T12:34:56.123Z ", "2024-07-19 12:34:56 ": kubectl logs
 * --timestamps, journald), then one tag: Open MPI's --tag-output
 * ("[1,0]<stdout>:"), MPICH's -prepend-rank ("[0] "), srun --label or
 * pdsh ("0: ", "node01: "). Returns where the benchmark's text begins. */
static inline const char *calib_unprefix(const char *p)
{
    p += strspn(p, " \t");
    /* YYYY-MM-DD, 'T' or ' ', HH:MM:SS, optional fraction and zone. */
    const char *q = p;
    int ok = 1;
    for (int i = 0; i < 19 && ok; i++) {
        char c = q[i];
        ok = i == 4 || i == 7 ? c == '-' : i == 10 ? c == 'T' || c == ' '
           : i == 13 || i == 16 ? c == ':' : c >= '0' && c <= '9';
    }
    if (ok) {
        q += 19;
        if (*q == '.' || *q == ',')
            q += 1 + strspn(q + 1, "0123456789");
        if (*q == 'Z')
            q++;
        else if ((*q == '+' || *q == '-') && strspn(q + 1, "0123456789:") >= 4)
            q += 1 + strspn(q + 1, "0123456789:");
        if (*q == ' ' || *q == '\t')
            p = q + strspn(q, " \t");
    }
    if (*p == '[') {
        /* [J,R]<stdout>: or [R] */
        size_t d = strspn(p + 1, "0123456789,");
        q = p + 1 + d;
        if (d > 0 && *q == ']') {
            q++;
            if (strncmp(q, "<stdout>:", 9) == 0 || strncmp(q, "<stderr>:", 9) == 0)
                return q + 9;
            if (*q == ' ' || *q == '\t')
                return q + strspn(q, " \t");
        }
        return p;
    }
    /* "0: " or "host-1.x: " (a word, a colon, a blank) */
    size_t w = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                         "0123456789._-");
    if (w > 0 && p[w] == ':' && (p[w + 1] == ' ' || p[w + 1] == '\t'))
        return p + w + 1;
    return p;
}

static inline int calib_add(calib_run_t *run, uint64_t bytes, uint64_t count,
                            double t)
{
    if (bytes == 0)
        return 0;
    calib_row_t *r = realloc(run->rows, (size_t)(run->nrows + 1) * sizeof(*r));
    if (r == NULL)
        return -1;
    run->rows = r;
    r[run->nrows++] = (calib_row_t){bytes, count, t, run->dtype};
    return 0;
}

/* The sane range of a row (docs/calibrate.md): a size of at most 2^48
 * bytes, written without a sign; a time of 0.001 to 1e9 us. 0, or -1 with err
 * naming the file, the line and the value. */
static inline int calib_row_check(const calib_run_t *run, int lineno,
                                  const char *line, unsigned long long size,
                                  double t, char *err, size_t errlen)
{
    const char *s = line + strspn(line, " \t");
    if (*s == '-' || *s == '+' || size > (1ULL << 48))
        snprintf(err, errlen, "%s:%d: the size must be 0 to 2^48 bytes "
                 "(got %.*s)", run->file, lineno, (int)strcspn(s, " \t|\n"),
                 s);
    else if (!(t >= 1e-3 && t <= 1e9))
        snprintf(err, errlen, "%s:%d: the time must be 0.001 to 1e9 us "
                 "(got %g)", run->file, lineno, t);
    else
        return 0;
    for (char *c = err; *c != '\0'; c++)   /* a terminal must not act */
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return -1;
}

/* One row of nccl-tests' table; 1 if line is one. */
static inline int calib_nccl_row(calib_run_t *run, const char *line, int *ok)
{
    unsigned long long size, count;
    char type[32], redop[32], w1[32], w2[32];
    long root;
    double t1, a1, b1, t2 = -1.0, a2, b2;
    int n = sscanf(line, "%llu %llu %31s %31s %ld %lf %lf %lf %31s %lf %lf "
                   "%lf %31s", &size, &count, type, redop, &root, &t1, &a1,
                   &b1, w1, &t2, &a2, &b2, w2);
    hccn_dtype_t dt;
    if (n < 8 || calib_dtype(type, &dt) != 0)
        return 0;
    run->dtype = dt;
    run->format = "nccl-tests";
    /* The in-place time where printed; a row a check refuses is kept for
     * calib_read to report. */
    double t = n >= 10 && t2 != -1.0 ? t2 : t1;
    run->last_size = size;
    run->last_time = t;
    *ok = calib_add(run, size, count, t) == 0;   /* of the row's type */
    return 1;
}

/* Reads path; 0, or -1 with err set (naming the file and the line). */
static inline int calib_read(const char *path, hccn_coll_t coll,
                             calib_run_t *run, char *err, size_t errlen)
{
    memset(run, 0, sizeof(*run));
    run->file = path;
    run->coll = coll;
    run->dtype = HCCN_FP32;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    char line[1024], others[160] = "";
    int mode = 0, ok = 1, rank_lines = 0, stated = 0;   /* 1 osu, 2 hccl */
    int lineno = 0, bad = 0, typed = 0;
    /* A log's tests: rows are read in those of run->coll (sel), or in
     * every one where no test names itself (marked 0); ranks per test. */
    int sel = 1, marked = 0, found = 0, test_ranks = 0;
    while (ok && !bad && fgets(line, sizeof(line), f) != NULL) {
        const char *p = calib_unprefix(line);
        int before = run->nrows;
        lineno++;
        unsigned long long size;
        double t;
        int n;
        char name[32];
        if (sscanf(p, "# Collective test starting: %31s", name) == 1 ||
            sscanf(p, "# hccn-perf %31s on", name) == 1) {
            marked = 1;
            sel = calib_same_name(name, hccn_coll_name(run->coll));
            found |= sel;
            test_ranks = 0;
            size_t used = strlen(others);
            if (!sel && !calib_listed(others, name) &&
                used + strlen(name) + 3 < sizeof(others))
                snprintf(others + used, sizeof(others) - used, "%s%s",
                         used ? ", " : "", name);
            continue;
        }
        if (!sel)
            continue;
        if (strncmp(p, "#  Rank", 7) == 0 || strncmp(p, "# Rank", 6) == 0) {
            test_ranks++;
            rank_lines = test_ranks > rank_lines ? test_ranks : rank_lines;
        } else if (sscanf(p, "# %d ranks on", &n) == 1)
            stated = n;
        else if (sscanf(p, "# nThread %*d nGpus %d", &n) == 1 && n > 0) {
            run->gpus = n;
            test_ranks = 0;     /* a test's header: its ranks follow */
        } else if (sscanf(p, "# Datatype: %31[A-Za-z_]", name) == 1)
            typed = calib_dtype(name, &run->dtype) == 0;
        else if (strncmp(p, "# Size", 6) == 0) {
            mode = 1;
            if (strstr(p, "Bandwidth") != NULL || strstr(p, "MB/s") != NULL ||
                strstr(p, "Messages/s") != NULL) {
                snprintf(err, errlen, "%s:%d: an OSU bandwidth or message "
                         "rate table: hccn-calibrate reads the latency of "
                         "collectives (osu_allreduce, osu_alltoall, ...)",
                         path, lineno);
                bad = 1;
                break;
            }
            if (!typed)         /* sizes in bytes, whatever the elements */
                run->dtype = HCCN_UINT8;
        } else if (strstr(p, "data_size") != NULL) {
            mode = 2;
            run->dtype = HCCN_UINT8;
        }
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0')
            continue;
        if (calib_nccl_row(run, p, &ok)) {
            size = run->last_size;
            t = run->last_time;
        } else if (mode == 1 && sscanf(p, "%llu %lf", &size, &t) == 2) {
            run->format = "osu";
            ok = calib_add(run, size, size, t) == 0;
        } else if (mode == 2 && (sscanf(p, "%llu | %lf", &size, &t) == 2 ||
                                 sscanf(p, "%llu %lf", &size, &t) == 2)) {
            run->format = "hccl_test";
            ok = calib_add(run, size, size, t) == 0;
        } else {
            continue;
        }
        /* A row of size 0 is a no-op: skipped, whatever its time. */
        bad = ok && (run->nrows > before || size != 0) &&
              calib_row_check(run, lineno, p, size, t, err, errlen) != 0;
    }
    fclose(f);
    run->ranks = rank_lines > 0 ? rank_lines : stated;
    if (bad)
        return -1;
    if (ok && marked && !found) {
        snprintf(err, errlen, "%s: no %s test in this log (its tests: %s)",
                 path, hccn_coll_name(run->coll), others);
        return -1;
    }
    if (!ok)
        snprintf(err, errlen, "%s: out of memory", path);
    else if (run->nrows == 0)
        snprintf(err, errlen, "%s: no result rows (nccl-tests, rccl-tests, "
                 "OSU or hccl_test output expected)", path);
    return ok && run->nrows > 0 ? 0 : -1;
}

#endif /* HCCN_TOOLS_CALIB_PARSE_H */
