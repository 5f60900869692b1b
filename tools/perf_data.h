/*
 * hccn-perf: test data and the result check (included by hccn-perf.c only).
 *
 * Every rank fills its SEND with small integers, value(i, r); every sum of
 * up to 64 ranks is exact in every dtype, so the check needs no tolerance.
 * value() depends on i only through i mod 5, so the expected result of a
 * reduction is taken from a five-entry table instead of being recomputed
 * for every element.
 */
#ifndef HCCN_TOOLS_PERF_DATA_H
#define HCCN_TOOLS_PERF_DATA_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hccn/hccn.h"

typedef enum { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BROADCAST,
               C_REDUCE, C_ALLTOALL, C_SENDRECV, C_SCATTER, C_GATHER,
               C_HYPERCUBE, C_COUNT } coll_t;

/* The collectives "all" runs: the first six. */
#define C_ALL 6

#define PERIOD 5

/* fp32 -> fp16 and bf16, rounding to nearest, ties to even, and back: the
 * tool's own, so that the check does not take the library's word for the
 * values it checks. */
static uint16_t half_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    int e = (int)((x >> 23) & 0xffu) - 127 + 15;
    uint32_t m = x & 0x7fffffu;
    if (((x >> 23) & 0xffu) == 0xffu)
        return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0u));
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    int shift = 13;
    if (e <= 0) {                       /* subnormal or zero */
        if (e < -10)
            return sign;
        m |= 0x800000u;
        shift = 14 - e;
        e = 0;
    }
    uint32_t h = ((uint32_t)e << 10) + (m >> shift);
    uint32_t rem = m & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

static float float_of_half(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    float m = (float)(h & 0x3ff), v;
    if (e == 0)
        v = ldexpf(m, -24);
    else if (e == 31)
        v = m != 0.0f ? NAN : INFINITY;
    else
        v = ldexpf(1024.0f + m, e - 25);
    return (h & 0x8000u) ? -v : v;
}

static uint16_t bf16_of(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof(x));
    if (isnan(f))
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static float float_of_bf16(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, sizeof(f));
    return f;
}

static double value(size_t i, int r)
{
    return (double)((i * 7 + (size_t)r * 3) % PERIOD) - 2.0;
}

static void put(void *buf, hccn_dtype_t dt, size_t i, double v)
{
    switch (dt) {
    case HCCN_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case HCCN_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int8_t)v; break;
    case HCCN_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case HCCN_UINT16: ((uint16_t *)buf)[i] = (uint16_t)(int16_t)v; break;
    case HCCN_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case HCCN_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(int32_t)v; break;
    case HCCN_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case HCCN_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
    case HCCN_FP16: ((uint16_t *)buf)[i] = half_of((float)v); break;
    case HCCN_BF16: ((uint16_t *)buf)[i] = bf16_of((float)v); break;
    case HCCN_FP32: ((float *)buf)[i] = (float)v; break;
    case HCCN_FP64: ((double *)buf)[i] = v; break;
    default: break;
    }
}

/* Element i as the value the test data meant (unsigned types hold negative
 * test values wrapped, so they are read back as signed). */
static double get(const void *buf, hccn_dtype_t dt, size_t i)
{
    switch (dt) {
    case HCCN_INT8: return ((const int8_t *)buf)[i];
    case HCCN_UINT8: return (int8_t)((const uint8_t *)buf)[i];
    case HCCN_INT16: return ((const int16_t *)buf)[i];
    case HCCN_UINT16: return (int16_t)((const uint16_t *)buf)[i];
    case HCCN_INT32: return ((const int32_t *)buf)[i];
    case HCCN_UINT32: return (int32_t)((const uint32_t *)buf)[i];
    case HCCN_INT64: return (double)((const int64_t *)buf)[i];
    case HCCN_UINT64: return (double)(int64_t)((const uint64_t *)buf)[i];
    case HCCN_FP16: return float_of_half(((const uint16_t *)buf)[i]);
    case HCCN_BF16: return float_of_bf16(((const uint16_t *)buf)[i]);
    case HCCN_FP32: return ((const float *)buf)[i];
    case HCCN_FP64: return ((const double *)buf)[i];
    default: return NAN;
    }
}

/* Rank r's SEND: n elements of value(i, r). */
static void fill(void *buf, hccn_dtype_t dt, size_t n, int r)
{
    double v[PERIOD];
    for (size_t k = 0; k < PERIOD; k++)
        v[k] = value(k, r);
    for (size_t i = 0; i < n; i++)
        put(buf, dt, i, v[i % PERIOD]);
}

static int reduces(coll_t c)
{
    return c == C_ALLREDUCE || c == C_REDUCE || c == C_REDUCE_SCATTER;
}

/* Whether the check can judge this call: PROD and AVG are left to the test
 * suite (their results wrap or round in a dtype-specific way). */
static int checkable(coll_t c, hccn_redop_t op)
{
    return !reduces(c) || op == HCCN_SUM || op == HCCN_MAX || op == HCCN_MIN;
}

static int is_unsigned(hccn_dtype_t dt)
{
    return dt == HCCN_UINT8 || dt == HCCN_UINT16 || dt == HCCN_UINT32 ||
           dt == HCCN_UINT64;
}

/* Every rank's value of element i combined with op (SUM, MAX or MIN) in
 * dtype dt. An unsigned type holds a negative test value wrapped, above
 * every positive one, and MAX and MIN compare it so. */
static double combine(hccn_redop_t op, hccn_dtype_t dt, int n, size_t i)
{
    double wrap = is_unsigned(dt) ? 0x1p40 : 0.0;  /* exact in a double */
    double v = value(i, 0);
    for (int r = 1; r < n; r++) {
        double x = value(i, r);
        double kv = v < 0 ? v + wrap : v, kx = x < 0 ? x + wrap : x;
        if (op == HCCN_MAX)
            v = kx > kv ? x : v;
        else if (op == HCCN_MIN)
            v = kx < kv ? x : v;
        else
            v += x;
    }
    return v;
}

/* Number of elements of RECV on rank r that differ from the expected
 * result; cnt is the count passed to the call. */
static long count_wrong(coll_t c, hccn_redop_t op, hccn_dtype_t dt,
                        const void *rb, size_t rn, int n, int r, int root,
                        size_t cnt)
{
    double red[PERIOD];
    for (size_t k = 0; k < PERIOD; k++)
        red[k] = combine(op, dt, n, k);
    long wrong = 0;
    for (size_t i = 0; i < rn; i++) {
        double want;
        switch (c) {
        case C_ALLREDUCE:
        case C_REDUCE:
            want = red[i % PERIOD];
            break;
        case C_REDUCE_SCATTER:
            want = red[((size_t)r * cnt + i) % PERIOD];
            break;
        case C_ALLGATHER:
            want = value(i % cnt, (int)(i / cnt));
            break;
        case C_BROADCAST:
            want = value(i, root);
            break;
        case C_SENDRECV: /* from the previous rank of the ring */
            want = value(i, (r + n - 1) % n);
            break;
        case C_SCATTER: /* block r of the root's SEND */
            want = value((size_t)r * cnt + i, root);
            break;
        case C_GATHER: /* the root's RECV block j is rank j's SEND */
        case C_HYPERCUBE: /* an allgather */
            want = value(i % cnt, (int)(i / cnt));
            break;
        default: /* alltoall: block j of RECV is block r of rank j's SEND */
            want = value((size_t)r * cnt + i % cnt, (int)(i / cnt));
            break;
        }
        wrong += get(rb, dt, i) != want;
    }
    return wrong;
}

#endif /* HCCN_TOOLS_PERF_DATA_H */
