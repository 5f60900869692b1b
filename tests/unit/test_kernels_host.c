/*
 * The host-specific kernels (F16C for fp16 where the CPU has it) against
 * the portable loops, bit for bit, NaN payloads included.
 *
 * tests/unit/test_kernels.c checks the portable loops and the scalar
 * conversions against independent references; this file checks that the
 * host's instructions give exactly the same bits as those loops, for every
 * fp16 pattern, for the fp32 values where rounding is decided (every fp16
 * value, every tie between neighbours, one fp32 ulp either side), for
 * specials, and at odd lengths and misaligned starts. On a host without
 * the instructions both sides run the portable code and the checks still
 * hold.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels.h"
#include "test_util.h"

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Widens src with the portable loops (host = 0) or the host's (host = 1). */
static void widen(int host, float *dst, const uint16_t *src, size_t n,
                  hccn_dtype_t dt)
{
    hccn_rt_kernels_portable(!host);
    hccn_rt_half_to_fp32_array(dst, src, n, dt);
    hccn_rt_kernels_portable(0);
}

static void narrow(int host, uint16_t *dst, const float *src, size_t n,
                   hccn_dtype_t dt)
{
    hccn_rt_kernels_portable(!host);
    hccn_rt_fp32_to_half_array(dst, src, n, dt);
    hccn_rt_kernels_portable(0);
}

/* Every 16-bit pattern widens to the same fp32 bits both ways, and to the
 * scalar conversion's bits. */
static void test_widen_all_patterns(void **state)
{
    (void)state;
    enum { N = 65536 };
    static uint16_t h[N];
    static float a[N], b[N];
    for (size_t i = 0; i < N; i++)
        h[i] = (uint16_t)i;
    hccn_dtype_t dts[] = {HCCN_FP16, HCCN_BF16};
    for (size_t d = 0; d < 2; d++) {
        widen(0, a, h, N, dts[d]);
        widen(1, b, h, N, dts[d]);
        for (size_t i = 0; i < N; i++) {
            float s = dts[d] == HCCN_FP16 ? hccn_rt_fp16_to_fp32(h[i])
                                          : hccn_rt_bf16_to_fp32(h[i]);
            assert_int_equal(f2u(a[i]), f2u(s));
            assert_int_equal(f2u(b[i]), f2u(s));
        }
    }
}

/* The fp32 inputs where narrowing is decided: each fp16 value, the ties
 * halfway to its neighbour and one fp32 ulp either side of them, both
 * signs, plus signed zeros, infinities, NaNs of several payloads (quiet
 * and signalling), fp32 subnormals and the edges of fp16 overflow. */
static size_t decisive_inputs(float *x, size_t cap)
{
    size_t n = 0;
    for (uint32_t h = 0; h < 0x7c00u && n + 8 <= cap; h++) {
        uint32_t lo = f2u(hccn_rt_fp16_to_fp32((uint16_t)h));
        uint32_t hi = f2u(hccn_rt_fp16_to_fp32((uint16_t)(h + 1)));
        float mid = (u2f(lo) + u2f(hi)) / 2;   /* exact in fp32 */
        float v[4] = {u2f(lo), mid, u2f(f2u(mid) - 1), u2f(f2u(mid) + 1)};
        for (int k = 0; k < 4; k++) {
            x[n++] = v[k];
            x[n++] = -v[k];
        }
    }
    uint32_t specials[] = {
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
        0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fa00000u, 0x7fbfffffu,
        0x7fffffffu, 0x7fc01234u, 0xffd0e000u, 0x00000001u, 0x807fffffu,
        0x00400000u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x477ff001u,
        0x47800000u, 0x33000000u, 0x33000001u, 0x32ffffffu, 0x387fc000u,
        0x38800000u, 0xc77ff000u, 0x7f7fffffu, 0x3f800000u, 0x3f801000u,
    };
    for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]) && n < cap; i++)
        x[n++] = u2f(specials[i]);
    return n;
}

static void check_narrow(hccn_dtype_t dt, const float *x, size_t n)
{
    uint16_t *a = malloc(n * sizeof(*a)), *b = malloc(n * sizeof(*b));
    assert_non_null(a);
    assert_non_null(b);
    narrow(0, a, x, n, dt);
    narrow(1, b, x, n, dt);
    for (size_t i = 0; i < n; i++) {
        uint16_t s = dt == HCCN_FP16 ? hccn_rt_fp32_to_fp16(x[i])
                                     : hccn_rt_fp32_to_bf16(x[i]);
        if (a[i] != s || b[i] != s)
            print_error("%s: 0x%08x narrows to 0x%04x (portable) and 0x%04x "
                        "(host), want 0x%04x\n",
                        hccn_dtype_name(dt), f2u(x[i]), a[i], b[i], s);
        assert_int_equal(a[i], s);
        assert_int_equal(b[i], s);
    }
    free(a);
    free(b);
}

static void test_narrow_decisive(void **state)
{
    (void)state;
    size_t cap = 8 * 0x7c00u + 64;
    float *x = malloc(cap * sizeof(*x));
    assert_non_null(x);
    size_t n = decisive_inputs(x, cap);
    check_narrow(HCCN_FP16, x, n);
    check_narrow(HCCN_BF16, x, n);
    unsigned long long rng = 7;
    for (size_t i = 0; i < cap; i++)
        x[i] = u2f((uint32_t)test_rand_next(&rng));
    check_narrow(HCCN_FP16, x, cap);
    check_narrow(HCCN_BF16, x, cap);
    free(x);
}

/* Lengths 0..40 at element offsets 0..7: the vector body, the scalar tail
 * and unaligned starts; nothing past the end is written. */
static void test_conversion_tails(void **state)
{
    (void)state;
    enum { MAXN = 40, OFFS = 8, PAD = 8 };
    float x[OFFS + MAXN + PAD], y[OFFS + MAXN + PAD];
    uint16_t h[OFFS + MAXN + PAD], g[OFFS + MAXN + PAD];
    unsigned long long rng = 11;
    for (size_t off = 0; off < OFFS; off++)
        for (size_t n = 0; n <= MAXN; n++) {
            for (size_t i = 0; i < OFFS + MAXN + PAD; i++) {
                x[i] = u2f((uint32_t)test_rand_next(&rng));
                h[i] = (uint16_t)test_rand_next(&rng);
            }
            memcpy(g, h, sizeof(g));
            memcpy(y, x, sizeof(y));
            narrow(1, h + off, x + off, n, HCCN_FP16);
            widen(1, y + off, g + off, n, HCCN_FP16);
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(h[off + i], hccn_rt_fp32_to_fp16(x[off + i]));
                assert_int_equal(f2u(y[off + i]),
                                 f2u(hccn_rt_fp16_to_fp32(g[off + i])));
            }
            assert_int_equal(h[off + n], g[off + n]);
            assert_int_equal(f2u(y[off + n]), f2u(x[off + n]));
        }
}

/* fp16 and bf16 values for reductions: random patterns, with NaNs of both
 * kinds, infinities, zeros and subnormals over-represented. */
static uint16_t random_half(unsigned long long *rng)
{
    static const uint16_t pool[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00,
                                    0x7c01, 0xfd55, 0x0001, 0x83ff, 0x7bff,
                                    0x3c00, 0x7f80, 0x7f81, 0xffc1};
    uint64_t r = test_rand_next(rng);
    if (r % 3 == 0)
        return pool[(r >> 8) % (sizeof(pool) / sizeof(pool[0]))];
    return (uint16_t)(r >> 16);
}

static int is_nan(hccn_dtype_t dt, uint16_t h)
{
    uint16_t inf = dt == HCCN_FP16 ? 0x7c00 : 0x7f80;
    return (h & inf) == inf && (h & ~inf & 0x7fff) != 0;
}

/* Reduction of every op, both paths, equal bits, dst apart and equal to
 * either operand, odd lengths and a misaligned start. SUM and PROD of two
 * NaNs return one of them (quieted), and which one is the hardware's and
 * the compiler's choice of operand order, in either path; there any NaN
 * will do. MAX and MIN are selects and must match exactly. */
static void check_reduce(hccn_dtype_t dt, hccn_redop_t op, size_t n,
                         size_t off, unsigned long long *rng)
{
    size_t len = off + n + 1;
    int arith = op == HCCN_SUM || op == HCCN_PROD || op == HCCN_AVG;
    uint16_t *a = malloc(len * 2), *b = malloc(len * 2);
    uint16_t *p = malloc(len * 2), *q = malloc(len * 2);
    assert_true(a && b && p && q);
    for (size_t i = 0; i < len; i++) {
        a[i] = random_half(rng);
        b[i] = random_half(rng);
    }
    for (int mode = 0; mode < 3; mode++) {
        uint16_t *outs[2] = {p, q};
        for (int host = 0; host < 2; host++) {
            uint16_t *d = outs[host];
            memcpy(d, mode == 2 ? b : a, len * 2);
            hccn_rt_kernels_portable(!host);
            if (mode == 0)
                hccn_rt_reduce3(d + off, a + off, b + off, n, dt, op);
            else if (mode == 1)
                hccn_rt_reduce(d + off, b + off, n, dt, op);
            else
                hccn_rt_reduce3(d + off, a + off, d + off, n, dt, op);
            hccn_rt_kernels_portable(0);
        }
        for (size_t i = 0; i < len; i++)
            if (p[i] != q[i] && !(arith && is_nan(dt, p[i]) && is_nan(dt, q[i]))) {
                print_error("%s %s n=%zu off=%zu mode %d: element %zu is "
                            "0x%04x (host), 0x%04x (portable)\n",
                            hccn_dtype_name(dt), hccn_redop_name(op), n, off,
                            mode, i, q[i], p[i]);
                fail();
            }
    }
    free(a), free(b), free(p), free(q);
}

static void test_half_reductions(void **state)
{
    (void)state;
    static const size_t lengths[] = {0, 1, 3, 7, 8, 9, 15, 17, 255, 256, 257,
                                     1000, 4099};
    unsigned long long rng = 23;
    hccn_dtype_t dts[] = {HCCN_FP16, HCCN_BF16};
    for (size_t d = 0; d < 2; d++)
        for (int op = 0; op < HCCN_REDOP_COUNT; op++)
            for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++)
                for (size_t off = 0; off < 3; off++)
                    check_reduce(dts[d], (hccn_redop_t)op, lengths[l], off,
                                 &rng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_widen_all_patterns),
        cmocka_unit_test(test_narrow_decisive),
        cmocka_unit_test(test_conversion_tails),
        cmocka_unit_test(test_half_reductions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
