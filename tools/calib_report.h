/*
 * hccn-calibrate's report: the median |busbw error| of the predictions per
 * run and per size band (<= 64 KiB, 64 KiB..64 MiB, >= 64 MiB), the
 * bands of docs/validation.md. busbw is proportional to 1 / time, so the
 * busbw error is measured time / predicted time - 1.
 */
#ifndef HCCN_TOOLS_CALIB_REPORT_H
#define HCCN_TOOLS_CALIB_REPORT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/calib_parse.h"

static inline double calib_median(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n == 0 ? NAN : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline int calib_band(uint64_t b)
{
    return b <= 65536 ? 0 : b < (64ull << 20) ? 1 : 2;
}

/* Median |busbw error| (measured time / predicted time - 1) of run r (or
 * of all runs, r < 0) in band (3: every row) into *out; rows counted. */
static inline int calib_band_error(const calib_run_t *runs, int nruns,
                                   double *const *pred, int r, int band,
                                   double *out)
{
    double *v = malloc(4096 * sizeof(double));
    int n = 0;
    for (int q = r < 0 ? 0 : r; q < (r < 0 ? nruns : r + 1); q++)
        for (int i = 0; i < runs[q].nrows && n < 4096 && v; i++)
            if (band == 3 || calib_band(runs[q].rows[i].bytes) == band)
                v[n++] = fabs(runs[q].rows[i].time_us * 1e-6 / pred[q][i] -
                              1.0);
    *out = v ? calib_median(v, n) : NAN;
    free(v);
    return n;
}

/* The table of errors per run and band, before or after the fit. */
static inline void calib_print_errors(const calib_run_t *runs, int nruns,
                                      double *const *pred, const char *when)
{
    printf("# %s: median |busbw error| by size band\n", when);
    printf("#   %-40s %8s %10s %8s %8s\n", "run", "<=64K", "64K..64M",
           ">=64M", "all");
    for (int r = -1; r < nruns; r++) {
        char cell[4][16];
        for (int b = 0; b < 4; b++) {
            double e;
            if (calib_band_error(runs, nruns, pred, r, b, &e) == 0)
                snprintf(cell[b], sizeof(cell[b]), "-");
            else
                snprintf(cell[b], sizeof(cell[b]), "%.1f%%", 100 * e);
        }
        printf("    %-40s %8s %10s %8s %8s\n",
               r < 0 ? "(all runs)" : runs[r].file, cell[0], cell[1],
               cell[2], cell[3]);
    }
}

#endif /* HCCN_TOOLS_CALIB_REPORT_H */
