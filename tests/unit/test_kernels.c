/*
 * Reduction kernels and fp16/bf16 conversions against scalar references.
 *
 * The references below share no code with runtime/kernels.c: fp16 and bf16
 * are decoded, rounded and encoded with ldexp/frexp/floor arithmetic on
 * doubles, integers wrap through uint64_t, and fp16/bf16 operations follow
 * the contract literally (widen, combine in fp32, round once). The file is
 * longer than most because every check below leans on those references.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels.h"
#include "test_util.h"

/* ------------------------------------------------------------------------ */
/* Reference fp16/bf16: generic IEEE binary formats.                        */

struct half_fmt {
    int ebits; /* exponent bits */
    int mbits; /* stored mantissa bits */
};

static const struct half_fmt FP16 = {5, 10};
static const struct half_fmt BF16 = {8, 7};

static int fmt_bias(const struct half_fmt *f)
{
    return (1 << (f->ebits - 1)) - 1;
}

static uint16_t fmt_inf(const struct half_fmt *f)
{
    return (uint16_t)(((1u << f->ebits) - 1u) << f->mbits);
}

static int ref_is_nan(uint16_t h, const struct half_fmt *f)
{
    uint16_t inf = fmt_inf(f);
    return (h & inf) == inf && (h & ((1u << f->mbits) - 1u)) != 0;
}

/* The exact value of an encoding, as a double. */
static double ref_decode(uint16_t h, const struct half_fmt *f)
{
    int bias = fmt_bias(f);
    unsigned e = (h >> f->mbits) & ((1u << f->ebits) - 1u);
    unsigned m = h & ((1u << f->mbits) - 1u);
    double v;
    if (e == (1u << f->ebits) - 1u)
        v = m != 0 ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - f->mbits);
    else
        v = ldexp((double)(m + (1u << f->mbits)), (int)e - bias - f->mbits);
    return (h >> (f->ebits + f->mbits)) ? -v : v;
}

/* v rounded to the format, ties to even, as a double (inf on overflow). */
static double ref_round(double v, const struct half_fmt *f)
{
    if (isnan(v) || isinf(v) || v == 0)
        return v;
    int bias = fmt_bias(f);
    double a = fabs(v);
    int e;
    frexp(a, &e);
    e -= 1; /* a is in [2^e, 2^(e+1)) */
    if (e < 1 - bias)
        e = 1 - bias; /* subnormal: fixed quantum */
    double q = ldexp(1.0, e - f->mbits);
    double k = a / q; /* exact: q is a power of two */
    double lo = floor(k);
    double frac = k - lo;
    if (frac > 0.5 || (frac == 0.5 && fmod(lo, 2.0) == 1.0))
        lo += 1.0;
    double r = lo * q;
    double max = ldexp(2.0 - ldexp(1.0, -f->mbits), bias);
    if (r > max)
        r = INFINITY;
    return signbit(v) ? -r : r;
}

/* Encoding of a representable value (NaN gives the canonical quiet NaN). */
static uint16_t ref_encode(double r, const struct half_fmt *f)
{
    uint16_t sign = signbit(r) ? (uint16_t)(1u << (f->ebits + f->mbits)) : 0;
    if (isnan(r))
        return (uint16_t)(fmt_inf(f) | (1u << (f->mbits - 1)));
    double a = fabs(r);
    if (isinf(a))
        return (uint16_t)(sign | fmt_inf(f));
    if (a == 0)
        return sign;
    int bias = fmt_bias(f);
    int e;
    frexp(a, &e);
    e -= 1;
    if (e < 1 - bias) {
        double m = a / ldexp(1.0, 1 - bias - f->mbits);
        assert_true(m == floor(m));
        return (uint16_t)(sign | (uint16_t)m);
    }
    double m = a / ldexp(1.0, e - f->mbits) - ldexp(1.0, f->mbits);
    assert_true(m == floor(m));
    return (uint16_t)(sign | (unsigned)(e + bias) << f->mbits | (unsigned)m);
}

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof(u));
    return u;
}

static float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof(x));
    return x;
}

/* ------------------------------------------------------------------------ */
/* Conversions.                                                             */

/* Every encoding widens to its exact value and narrows back to itself;
 * NaNs stay NaN, keep their sign, and come back quiet. */
static void check_all_patterns(const struct half_fmt *f, float (*widen)(uint16_t),
                               uint16_t (*narrow)(float))
{
    uint16_t quiet = (uint16_t)(1u << (f->mbits - 1));
    uint16_t sign = (uint16_t)(1u << (f->ebits + f->mbits));
    for (uint32_t i = 0; i < 65536; i++) {
        uint16_t h = (uint16_t)i;
        float x = widen(h);
        double want = ref_decode(h, f);
        uint16_t back = narrow(x);
        int ok;
        if (isnan(want)) {
            ok = isnan(x) && (float_bits(x) & 0x00400000u) &&
                 !signbit(x) == !(h & sign) && ref_is_nan(back, f) &&
                 (back & quiet) && (back & sign) == (h & sign) &&
                 (!(h & quiet) || back == h);
        } else {
            ok = (double)x == want && !signbit(x) == !signbit(want) &&
                 back == h;
        }
        if (!ok) {
            print_error("pattern 0x%04x: widened 0x%08x, back 0x%04x\n", h,
                        float_bits(x), back);
            fail();
        }
    }
}

static void test_fp16_all_patterns(void **state)
{
    (void)state;
    check_all_patterns(&FP16, hccn_rt_fp16_to_fp32, hccn_rt_fp32_to_fp16);
}

static void test_bf16_all_patterns(void **state)
{
    (void)state;
    check_all_patterns(&BF16, hccn_rt_bf16_to_fp32, hccn_rt_fp32_to_bf16);
}

static void check_round(float x, const struct half_fmt *f,
                        uint16_t (*narrow)(float))
{
    uint16_t got = narrow(x);
    double want = ref_round((double)x, f);
    double gotv = ref_decode(got, f);
    int ok;
    if (isnan(want))
        ok = isnan(gotv) && (got & (1u << (f->mbits - 1))) &&
             !signbit(gotv) == !signbit(x);
    else
        ok = gotv == want && !signbit(gotv) == !signbit(want);
    if (!ok) {
        print_error("fp32 0x%08x (%a) -> 0x%04x (%a), want %a\n",
                    float_bits(x), (double)x, got, gotv, want);
        fail();
    }
}

/* The exact midpoint above every positive finite encoding, its fp32
 * neighbours, and the encoding's own value; both signs. */
static void check_halfway_cases(const struct half_fmt *f,
                                uint16_t (*narrow)(float))
{
    uint16_t max = (uint16_t)(fmt_inf(f) - 1u);
    for (uint32_t h = 0; h <= max; h++) {
        double lo = ref_decode((uint16_t)h, f);
        double hi = h == max ? ldexp(1.0, fmt_bias(f) + 1)
                             : ref_decode((uint16_t)(h + 1), f);
        float mid = (float)((lo + hi) / 2);
        assert_true((double)mid == (lo + hi) / 2);
        float cases[4] = {mid, nextafterf(mid, 0.0f),
                          nextafterf(mid, INFINITY), (float)lo};
        for (int i = 0; i < 4; i++) {
            check_round(cases[i], f, narrow);
            check_round(-cases[i], f, narrow);
        }
    }
}

static const uint32_t tricky_bits[] = {
    0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
    0x7f800001, 0xff800001, 0x7fa00000, 0x7fffffff, 0x7f7fffff, 0xff7fffff,
    0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x00008000, 0x00008001,
    0x00018000, 0x0000ffff, 0x7f7f0000, 0x7f7f7fff, 0x7f7f8000, 0x7f7f8001,
    0x7f7effff, 0x3f800000, 0x3f808000, 0x3f818000, 0x3f807fff,
};

static const float tricky_values[] = {
    65504.0f,   65519.0f,   65520.0f,  -65520.0f,  65536.0f,   1e6f,
    0x1p-14f,   0x1p-24f,   0x1p-25f,  0x1.8p-24f, 0x1.8p-25f, 0x1.ff8p-15f,
    0x1.ffcp-15f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 2049.0f, 2051.0f,
    0x1.fep127f, 0x1.ffp127f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, FLT_MIN,
    FLT_TRUE_MIN, -FLT_TRUE_MIN, FLT_MAX,
};

/* Random fp32: any bit pattern, or a value near the format's range. */
static float random_float(unsigned long long *rng, const struct half_fmt *f)
{
    uint32_t r = (uint32_t)test_rand_next(rng);
    if (test_rand_next(rng) & 1)
        return bits_float(r);
    int span = (1 << f->ebits) + 30;
    int e = 127 - fmt_bias(f) - f->mbits - 15 + (int)((r >> 8) % (unsigned)span);
    if (e < 0)
        e = 0;
    if (e > 254)
        e = 254;
    return bits_float((r & 0x807fffffu) | (uint32_t)e << 23);
}

static void check_rounding(const struct half_fmt *f, uint16_t (*narrow)(float))
{
    for (size_t i = 0; i < sizeof(tricky_bits) / sizeof(tricky_bits[0]); i++)
        check_round(bits_float(tricky_bits[i]), f, narrow);
    for (size_t i = 0; i < sizeof(tricky_values) / sizeof(tricky_values[0]);
         i++) {
        check_round(tricky_values[i], f, narrow);
        check_round(nextafterf(tricky_values[i], 0.0f), f, narrow);
        check_round(nextafterf(tricky_values[i], INFINITY), f, narrow);
    }
    check_round(NAN, f, narrow);
    check_round(-NAN, f, narrow);
    check_halfway_cases(f, narrow);
    unsigned long long rng = 12345;
    for (int i = 0; i < 2000000; i++)
        check_round(random_float(&rng, f), f, narrow);
}

static void test_fp16_rounding(void **state)
{
    (void)state;
    check_rounding(&FP16, hccn_rt_fp32_to_fp16);
    /* Spot values written out by hand. */
    assert_int_equal(hccn_rt_fp32_to_fp16(65504.0f), 0x7bff);
    assert_int_equal(hccn_rt_fp32_to_fp16(65520.0f), 0x7c00);
    assert_int_equal(hccn_rt_fp32_to_fp16(0x1p-25f), 0x0000);
    assert_int_equal(hccn_rt_fp32_to_fp16(0x1.8p-24f), 0x0002);
    assert_int_equal(hccn_rt_fp32_to_fp16(0x1.ff8p-15f), 0x03ff);
    assert_int_equal(hccn_rt_fp32_to_fp16(0x1.ffcp-15f), 0x0400); /* tie */
    assert_int_equal(hccn_rt_fp32_to_fp16(-0.0f), 0x8000);
    assert_int_equal(hccn_rt_fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);
}

static void test_bf16_rounding(void **state)
{
    (void)state;
    check_rounding(&BF16, hccn_rt_fp32_to_bf16);
    assert_int_equal(hccn_rt_fp32_to_bf16(FLT_MAX), 0x7f80);
    assert_int_equal(hccn_rt_fp32_to_bf16(0x1.fep127f), 0x7f7f);
    assert_int_equal(hccn_rt_fp32_to_bf16(bits_float(0x00018000)), 0x0002);
    assert_int_equal(hccn_rt_fp32_to_bf16(1.0f + 0x3p-8f), 0x3f82);
    assert_int_equal(hccn_rt_fp32_to_bf16(-0.0f), 0x8000);
}

/* The array conversions agree with the scalar ones, bit for bit. */
static void check_arrays(hccn_dtype_t dt, float (*widen)(uint16_t),
                         uint16_t (*narrow)(float))
{
    size_t n = 65536 + 3;
    uint16_t *h = malloc(n * sizeof(*h));
    float *x = malloc(n * sizeof(*x));
    assert_non_null(h);
    assert_non_null(x);
    for (size_t i = 0; i < n; i++)
        h[i] = (uint16_t)i;
    hccn_rt_half_to_fp32_array(x, h, n, dt);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(float_bits(x[i]), float_bits(widen(h[i])));
    unsigned long long rng = 99;
    for (size_t i = 0; i < n; i++)
        x[i] = bits_float((uint32_t)test_rand_next(&rng));
    hccn_rt_fp32_to_half_array(h + 1, x + 1, n - 1, dt);
    for (size_t i = 1; i < n; i++)
        assert_int_equal(h[i], narrow(x[i]));
    free(h);
    free(x);
}

static void test_array_conversions(void **state)
{
    (void)state;
    check_arrays(HCCN_FP16, hccn_rt_fp16_to_fp32, hccn_rt_fp32_to_fp16);
    check_arrays(HCCN_BF16, hccn_rt_bf16_to_fp32, hccn_rt_fp32_to_bf16);
    uint16_t h[2] = {1, 2};
    float x[2] = {3.0f, 4.0f};
    hccn_rt_fp32_to_half_array(h, x, 2, HCCN_FP32);
    hccn_rt_half_to_fp32_array(x, h, 2, HCCN_INT16);
    assert_int_equal(h[0], 1);
    assert_true(x[1] == 4.0f);
}

/* ------------------------------------------------------------------------ */
/* Reference element operations.                                            */

static int is_signed_int(hccn_dtype_t dt)
{
    return dt == HCCN_INT8 || dt == HCCN_INT16 || dt == HCCN_INT32 ||
           dt == HCCN_INT64;
}

static int is_float(hccn_dtype_t dt)
{
    return dt >= HCCN_FP16;
}

static const struct half_fmt *half_fmt_of(hccn_dtype_t dt)
{
    return dt == HCCN_FP16 ? &FP16 : dt == HCCN_BF16 ? &BF16 : NULL;
}

static uint64_t width_mask(size_t size)
{
    return size == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * size)) - 1;
}

/* Element bits as the low bits of a uint64_t (little-endian host). */
static uint64_t load_bits(const void *p, size_t size)
{
    uint64_t v = 0;
    memcpy(&v, p, size);
    return v;
}

static void store_bits(void *p, size_t size, uint64_t v)
{
    memcpy(p, &v, size);
}

/* The value of a floating-point element. */
static double load_real(hccn_dtype_t dt, const void *p)
{
    if (dt == HCCN_FP32)
        return bits_float((uint32_t)load_bits(p, 4));
    if (dt == HCCN_FP64) {
        double x;
        memcpy(&x, p, 8);
        return x;
    }
    return ref_decode((uint16_t)load_bits(p, 2), half_fmt_of(dt));
}

static int64_t sign_extend(uint64_t v, size_t size)
{
    uint64_t mask = width_mask(size);
    uint64_t sign = UINT64_C(1) << (8 * size - 1);
    return (v & sign) ? -(int64_t)(~v & mask & ~sign) - 1
                      : (int64_t)(v & mask);
}

static uint64_t ref_int(hccn_dtype_t dt, hccn_redop_t op, uint64_t a,
                        uint64_t b)
{
    size_t size = hccn_dtype_size(dt);
    int a_less;
    if (is_signed_int(dt))
        a_less = sign_extend(a, size) < sign_extend(b, size);
    else
        a_less = a < b;
    switch (op) {
    case HCCN_SUM:
    case HCCN_AVG: return (a + b) & width_mask(size);
    case HCCN_PROD: return (a * b) & width_mask(size);
    case HCCN_MAX: return a_less ? b : a;
    default: return a_less ? a : b;
    }
}

/* MAX/MIN per the kernels' documented rules: NaN wins; MAX of zeros is -0
 * only if both are -0, MIN of zeros is +0 only if both are +0. */
static double ref_maxmin(double a, double b, int is_max)
{
    if (isnan(a) || isnan(b))
        return NAN;
    if (a == 0 && b == 0) {
        int neg = is_max ? signbit(a) && signbit(b) : signbit(a) || signbit(b);
        return neg ? -0.0 : 0.0;
    }
    if (is_max)
        return a > b ? a : b;
    return a < b ? a : b;
}

/* fp32 sums and products are computed exactly or once-rounded in double,
 * then rounded to float: the same as correctly rounded fp32 arithmetic. */
static double ref_double(hccn_redop_t op, double a, double b)
{
    switch (op) {
    case HCCN_SUM:
    case HCCN_AVG: return a + b;
    case HCCN_PROD: return a * b;
    case HCCN_MAX: return ref_maxmin(a, b, 1);
    default: return ref_maxmin(a, b, 0);
    }
}

static uint16_t ref_half(const struct half_fmt *f, hccn_redop_t op,
                         uint16_t a, uint16_t b)
{
    float fa = (float)ref_decode(a, f);
    float fb = (float)ref_decode(b, f);
    float r;
    if (op == HCCN_SUM || op == HCCN_AVG)
        r = fa + fb;
    else if (op == HCCN_PROD)
        r = fa * fb;
    else
        r = (float)ref_maxmin(fa, fb, op == HCCN_MAX);
    return ref_encode(ref_round(r, f), f);
}

static void ref_elem(hccn_dtype_t dt, hccn_redop_t op, const void *a,
                     const void *b, void *out)
{
    size_t size = hccn_dtype_size(dt);
    if (dt == HCCN_FP32) {
        float r = (float)ref_double(op, load_real(dt, a), load_real(dt, b));
        memcpy(out, &r, 4);
    } else if (dt == HCCN_FP64) {
        double r = ref_double(op, load_real(dt, a), load_real(dt, b));
        memcpy(out, &r, 8);
    } else if (half_fmt_of(dt) != NULL) {
        uint16_t r = ref_half(half_fmt_of(dt), op, (uint16_t)load_bits(a, 2),
                              (uint16_t)load_bits(b, 2));
        store_bits(out, 2, r);
    } else {
        store_bits(out, size,
                   ref_int(dt, op, load_bits(a, size), load_bits(b, size)));
    }
}

static int elem_is_nan(hccn_dtype_t dt, const void *p)
{
    return is_float(dt) && isnan(load_real(dt, p));
}

/* Equal bits, except that any NaN matches an expected NaN. */
static int elem_matches(hccn_dtype_t dt, const void *got, const void *want)
{
    if (elem_is_nan(dt, want))
        return elem_is_nan(dt, got);
    return memcmp(got, want, hccn_dtype_size(dt)) == 0;
}

/* ------------------------------------------------------------------------ */
/* Random inputs: full-range bits plus edge values, so that sums and
 * products wrap or overflow, MAX/MIN meet ties, NaN, inf and signed zeros. */

static uint64_t random_int_bits(hccn_dtype_t dt, unsigned long long *rng)
{
    size_t size = hccn_dtype_size(dt);
    uint64_t sign = UINT64_C(1) << (8 * size - 1);
    uint64_t pool[] = {0, 1, 2, ~UINT64_C(0), sign, sign - 1, sign + 1};
    uint64_t r = test_rand_next(rng);
    if (r % 4 == 0)
        return pool[(r >> 8) % (sizeof(pool) / sizeof(pool[0]))];
    return test_rand_next(rng);
}

static uint64_t random_float_bits(hccn_dtype_t dt, unsigned long long *rng)
{
    int ebits = dt == HCCN_FP16 ? 5 : dt == HCCN_BF16 || dt == HCCN_FP32 ? 8 : 11;
    int mbits = dt == HCCN_FP16 ? 10 : dt == HCCN_BF16 ? 7 : dt == HCCN_FP32 ? 23 : 52;
    uint64_t bias = (UINT64_C(1) << (ebits - 1)) - 1;
    uint64_t inf = ((UINT64_C(1) << ebits) - 1) << mbits;
    uint64_t sign = UINT64_C(1) << (ebits + mbits);
    uint64_t pool[] = {0, sign, inf, inf | sign, inf | (UINT64_C(1) << (mbits - 1)),
                       inf | 1, inf - 1, (inf - 1) | sign, 1, bias << mbits,
                       (bias << mbits) | sign};
    uint64_t r = test_rand_next(rng);
    uint64_t bits = test_rand_next(rng) & (sign | (sign - 1));
    if (r % 8 == 0)
        return pool[(r >> 8) % (sizeof(pool) / sizeof(pool[0]))];
    if (r % 8 <= 2)
        return bits;
    /* A value within 2^+-12 of 1, so that sums actually round. */
    uint64_t e = bias - 12 + (r >> 8) % 25;
    return (bits & (sign | ((UINT64_C(1) << mbits) - 1))) | e << mbits;
}

static void fill_random(hccn_dtype_t dt, void *buf, size_t n,
                        unsigned long long *rng)
{
    size_t size = hccn_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        uint64_t v = is_float(dt) ? random_float_bits(dt, rng)
                                  : random_int_bits(dt, rng);
        store_bits((char *)buf + i * size, size, v);
    }
}

/* ------------------------------------------------------------------------ */
/* Reduce and reduce3 for every dtype x op x length.                        */

enum { GUARD = 32 };

static const size_t lengths[] = {0, 1, 7, 64, 1000, 4099};

/* A buffer of n elements followed by a guard zone of known bytes. */
static void *alloc_guarded(size_t bytes)
{
    unsigned char *p = malloc(bytes + GUARD);
    assert_non_null(p);
    memset(p + bytes, 0xa5, GUARD);
    return p;
}

static void check_result(hccn_dtype_t dt, hccn_redop_t op, size_t n,
                         const char *how, const void *got, const void *want)
{
    size_t size = hccn_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        const char *g = (const char *)got + i * size;
        const char *w = (const char *)want + i * size;
        if (!elem_matches(dt, g, w)) {
            print_error("%s %s %s n=%zu: element %zu is 0x%llx, want 0x%llx\n",
                        how, hccn_dtype_name(dt), hccn_redop_name(op), n, i,
                        (unsigned long long)load_bits(g, size),
                        (unsigned long long)load_bits(w, size));
            fail();
        }
    }
    const unsigned char *guard = (const unsigned char *)got + n * size;
    for (size_t i = 0; i < GUARD; i++)
        assert_int_equal(guard[i], 0xa5);
}

static void run_case(hccn_dtype_t dt, hccn_redop_t op, size_t n,
                     unsigned long long *rng)
{
    size_t bytes = n * hccn_dtype_size(dt);
    void *a = alloc_guarded(bytes), *b = alloc_guarded(bytes);
    void *a0 = alloc_guarded(bytes), *b0 = alloc_guarded(bytes);
    void *want = alloc_guarded(bytes), *dst = alloc_guarded(bytes);
    size_t size = hccn_dtype_size(dt);
    fill_random(dt, a, n, rng);
    fill_random(dt, b, n, rng);
    memcpy(a0, a, bytes);
    memcpy(b0, b, bytes);
    for (size_t i = 0; i < n; i++)
        ref_elem(dt, op, (char *)a + i * size, (char *)b + i * size,
                 (char *)want + i * size);

    memcpy(dst, a, bytes);
    hccn_rt_reduce(dst, b, n, dt, op);
    check_result(dt, op, n, "reduce", dst, want);

    memset(dst, 0x5a, bytes);
    hccn_rt_reduce3(dst, a, b, n, dt, op);
    check_result(dt, op, n, "reduce3", dst, want);

    memcpy(dst, a, bytes);
    hccn_rt_reduce3(dst, dst, b, n, dt, op);
    check_result(dt, op, n, "reduce3 dst=a", dst, want);

    memcpy(dst, b, bytes);
    hccn_rt_reduce3(dst, a, dst, n, dt, op);
    check_result(dt, op, n, "reduce3 dst=b", dst, want);

    /* Sources are read-only. */
    assert_memory_equal(a, a0, bytes + GUARD);
    assert_memory_equal(b, b0, bytes + GUARD);
    free(a), free(b), free(a0), free(b0), free(want), free(dst);
}

static void test_reduce(void **state)
{
    hccn_dtype_t dt = *(hccn_dtype_t *)*state;
    unsigned long long rng = 1000 + (unsigned long long)dt;
    for (int op = 0; op < HCCN_REDOP_COUNT; op++)
        for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++)
            run_case(dt, (hccn_redop_t)op, lengths[i], &rng);
}

/* ------------------------------------------------------------------------ */
/* AVG finish.                                                              */

static void ref_avg_elem(hccn_dtype_t dt, void *p, int nranks)
{
    size_t size = hccn_dtype_size(dt);
    uint64_t v = load_bits(p, size);
    if (dt == HCCN_FP32) {
        float r = (float)(load_real(dt, p) / nranks); /* rounded once */
        memcpy(p, &r, 4);
    } else if (dt == HCCN_FP64) {
        double r = load_real(dt, p) / nranks;
        memcpy(p, &r, 8);
    } else if (half_fmt_of(dt) != NULL) {
        const struct half_fmt *f = half_fmt_of(dt);
        float q = (float)ref_decode((uint16_t)v, f) / (float)nranks;
        store_bits(p, 2, ref_encode(ref_round(q, f), f));
    } else if (is_signed_int(dt)) {
        int64_t q = sign_extend(v, size) / nranks;
        store_bits(p, size, (uint64_t)q & width_mask(size));
    } else {
        store_bits(p, size, v / (uint64_t)nranks);
    }
}

static void test_avg(void **state)
{
    hccn_dtype_t dt = *(hccn_dtype_t *)*state;
    static const int nranks[] = {-1, 0, 1, 2, 3, 7, 300, 70000};
    unsigned long long rng = 2000 + (unsigned long long)dt;
    size_t size = hccn_dtype_size(dt);
    for (size_t l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
        size_t n = lengths[l], bytes = n * size;
        for (size_t k = 0; k < sizeof(nranks) / sizeof(nranks[0]); k++) {
            void *buf = alloc_guarded(bytes), *want = alloc_guarded(bytes);
            fill_random(dt, buf, n, &rng);
            memcpy(want, buf, bytes);
            if (nranks[k] > 1)
                for (size_t i = 0; i < n; i++)
                    ref_avg_elem(dt, (char *)want + i * size, nranks[k]);
            hccn_rt_avg_finish(buf, n, dt, nranks[k]);
            check_result(dt, HCCN_AVG, n, "avg_finish", buf, want);
            free(buf), free(want);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Hand-written cases.                                                      */

static void test_int_wrap(void **state)
{
    (void)state;
    int8_t i8[2] = {127, -128}, i8b[2] = {1, -1};
    hccn_rt_reduce(i8, i8b, 2, HCCN_INT8, HCCN_SUM);
    assert_int_equal(i8[0], -128);
    assert_int_equal(i8[1], 127);

    uint64_t u64[3] = {UINT64_MAX, UINT64_MAX, UINT64_C(1) << 32};
    uint64_t u64b[3] = {1, UINT64_MAX, UINT64_C(1) << 32};
    hccn_rt_reduce(u64, u64b, 2, HCCN_UINT64, HCCN_SUM);
    hccn_rt_reduce(u64 + 2, u64b + 2, 1, HCCN_UINT64, HCCN_PROD);
    assert_true(u64[0] == 0);
    assert_true(u64[1] == UINT64_MAX - 1);
    assert_true(u64[2] == 0);

    int32_t i32[4] = {65536, INT32_MAX, INT32_MIN, 46341};
    int32_t i32b[4] = {65536, 2, -1, 46341};
    hccn_rt_reduce(i32, i32b, 4, HCCN_INT32, HCCN_PROD);
    assert_int_equal(i32[0], 0);
    assert_int_equal(i32[1], -2);
    assert_int_equal(i32[2], INT32_MIN);
    assert_int_equal(i32[3], -2147479015); /* 2147488281 - 2^32 */

    uint16_t u16 = 65535, u16b = 65535; /* would overflow int if promoted */
    hccn_rt_reduce(&u16, &u16b, 1, HCCN_UINT16, HCCN_PROD);
    assert_int_equal(u16, 1);

    int64_t i64[2] = {INT64_MIN, INT64_MAX}, i64b[2] = {INT64_MAX, INT64_MIN};
    int64_t i64r[2];
    hccn_rt_reduce3(i64r, i64, i64b, 2, HCCN_INT64, HCCN_MAX);
    assert_true(i64r[0] == INT64_MAX && i64r[1] == INT64_MAX);
    hccn_rt_reduce3(i64r, i64, i64b, 2, HCCN_INT64, HCCN_MIN);
    assert_true(i64r[0] == INT64_MIN && i64r[1] == INT64_MIN);
}

static void test_float_nan_and_zeros(void **state)
{
    (void)state;
    float a[8] = {NAN, 1.0f, NAN, -INFINITY, -0.0f, 0.0f, -0.0f, 0.0f};
    float b[8] = {1.0f, NAN, NAN, NAN, 0.0f, -0.0f, -0.0f, 0.0f};
    float mx[8], mn[8];
    hccn_rt_reduce3(mx, a, b, 8, HCCN_FP32, HCCN_MAX);
    hccn_rt_reduce3(mn, a, b, 8, HCCN_FP32, HCCN_MIN);
    for (int i = 0; i < 4; i++)
        assert_true(isnan(mx[i]) && isnan(mn[i]));
    /* MAX of opposite zeros is +0, MIN is -0, in either order. */
    assert_true(mx[4] == 0 && !signbit(mx[4]) && !signbit(mx[5]));
    assert_true(mn[4] == 0 && signbit(mn[4]) && signbit(mn[5]));
    assert_true(signbit(mx[6]) && signbit(mn[6]));
    assert_true(!signbit(mx[7]) && !signbit(mn[7]));

    double d[2] = {NAN, 2.0}, e[2] = {-INFINITY, NAN};
    hccn_rt_reduce(d, e, 2, HCCN_FP64, HCCN_MIN);
    assert_true(isnan(d[0]) && isnan(d[1]));

    uint16_t h[3] = {0x7e00, 0x3c00, 0x8000}, g[3] = {0x3c00, 0xfe00, 0x0000};
    hccn_rt_reduce(h, g, 3, HCCN_FP16, HCCN_MAX);
    assert_true(ref_is_nan(h[0], &FP16) && ref_is_nan(h[1], &FP16));
    assert_int_equal(h[2], 0x0000);
    uint16_t bf[2] = {0x7fc1, 0x3f80}, bg[2] = {0x3f80, 0x7f81};
    hccn_rt_reduce(bf, bg, 2, HCCN_BF16, HCCN_MIN);
    assert_true(ref_is_nan(bf[0], &BF16) && ref_is_nan(bf[1], &BF16));
}

static void test_avg_values(void **state)
{
    (void)state;
    int32_t i32[5] = {-7, 7, -1, 5, -6};
    hccn_rt_avg_finish(i32, 5, HCCN_INT32, 2);
    assert_int_equal(i32[0], -3);
    assert_int_equal(i32[1], 3);
    assert_int_equal(i32[2], 0);
    assert_int_equal(i32[3], 2);
    assert_int_equal(i32[4], -3);

    int8_t s8 = 100, t8 = 100; /* wraps to -56 before dividing */
    hccn_rt_reduce(&s8, &t8, 1, HCCN_INT8, HCCN_AVG);
    hccn_rt_avg_finish(&s8, 1, HCCN_INT8, 2);
    assert_int_equal(s8, -28);
    uint8_t u8 = 200, v8 = 100;
    hccn_rt_reduce(&u8, &v8, 1, HCCN_UINT8, HCCN_AVG);
    hccn_rt_avg_finish(&u8, 1, HCCN_UINT8, 2);
    assert_int_equal(u8, 22);
    int64_t i64 = -9;
    hccn_rt_avg_finish(&i64, 1, HCCN_INT64, 4);
    assert_true(i64 == -2);
    int16_t i16 = -32768;
    hccn_rt_avg_finish(&i16, 1, HCCN_INT16, 300);
    assert_int_equal(i16, -109);

    float f[2] = {1.0f, 2.0f}, g[2] = {2.0f, -3.0f};
    hccn_rt_reduce(f, g, 2, HCCN_FP32, HCCN_AVG);
    hccn_rt_avg_finish(f, 2, HCCN_FP32, 2);
    assert_true(f[0] == 1.5f && f[1] == -0.5f);
    uint16_t h[2] = {0x3c00, 0x3c00}, k[2] = {0x4000, 0x0000};
    hccn_rt_reduce(h, k, 2, HCCN_FP16, HCCN_AVG);
    hccn_rt_avg_finish(h, 2, HCCN_FP16, 2);
    assert_int_equal(h[0], 0x3e00); /* 1.5 */
    hccn_rt_avg_finish(h + 1, 1, HCCN_FP16, 3);
    assert_int_equal(h[1], 0x3155); /* 0.5 / 3 rounded */
    uint16_t bf = 0x4040; /* 3.0 */
    hccn_rt_avg_finish(&bf, 1, HCCN_BF16, 2);
    assert_int_equal(bf, 0x3fc0);
}

static void test_invalid_is_noop(void **state)
{
    (void)state;
    int32_t a[2] = {1, 2}, b[2] = {3, 4};
    hccn_rt_reduce(a, b, 2, HCCN_DTYPE_COUNT, HCCN_SUM);
    hccn_rt_reduce(a, b, 2, (hccn_dtype_t)-1, HCCN_SUM);
    hccn_rt_reduce(a, b, 2, HCCN_INT32, HCCN_REDOP_COUNT);
    hccn_rt_reduce3(a, a, b, 2, HCCN_INT32, (hccn_redop_t)-1);
    hccn_rt_avg_finish(a, 2, HCCN_DTYPE_COUNT, 2);
    assert_int_equal(a[0], 1);
    assert_int_equal(a[1], 2);
}

/* ------------------------------------------------------------------------ */
/* Sizes and names.                                                         */

static void test_dtype_info(void **state)
{
    (void)state;
    static const struct {
        hccn_dtype_t dt;
        size_t size;
        const char *name;
    } want[] = {
        {HCCN_INT8, 1, "int8"},     {HCCN_UINT8, 1, "uint8"},
        {HCCN_INT16, 2, "int16"},   {HCCN_UINT16, 2, "uint16"},
        {HCCN_INT32, 4, "int32"},   {HCCN_UINT32, 4, "uint32"},
        {HCCN_INT64, 8, "int64"},   {HCCN_UINT64, 8, "uint64"},
        {HCCN_FP16, 2, "fp16"},     {HCCN_BF16, 2, "bf16"},
        {HCCN_FP32, 4, "fp32"},     {HCCN_FP64, 8, "fp64"},
    };
    assert_int_equal(sizeof(want) / sizeof(want[0]), HCCN_DTYPE_COUNT);
    for (size_t i = 0; i < HCCN_DTYPE_COUNT; i++) {
        assert_int_equal(hccn_dtype_size(want[i].dt), want[i].size);
        assert_string_equal(hccn_dtype_name(want[i].dt), want[i].name);
    }
    hccn_dtype_t bad[] = {HCCN_DTYPE_COUNT, (hccn_dtype_t)-1, (hccn_dtype_t)99};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(hccn_dtype_size(bad[i]), 0);
        assert_string_equal(hccn_dtype_name(bad[i]), "invalid");
    }
}

static void test_redop_names(void **state)
{
    (void)state;
    assert_string_equal(hccn_redop_name(HCCN_SUM), "sum");
    assert_string_equal(hccn_redop_name(HCCN_PROD), "prod");
    assert_string_equal(hccn_redop_name(HCCN_MAX), "max");
    assert_string_equal(hccn_redop_name(HCCN_MIN), "min");
    assert_string_equal(hccn_redop_name(HCCN_AVG), "avg");
    assert_string_equal(hccn_redop_name(HCCN_REDOP_COUNT), "invalid");
    assert_string_equal(hccn_redop_name((hccn_redop_t)-1), "invalid");
}

/* ------------------------------------------------------------------------ */

static hccn_dtype_t dtypes[HCCN_DTYPE_COUNT] = {
    HCCN_INT8,  HCCN_UINT8, HCCN_INT16, HCCN_UINT16, HCCN_INT32, HCCN_UINT32,
    HCCN_INT64, HCCN_UINT64, HCCN_FP16, HCCN_BF16,   HCCN_FP32,  HCCN_FP64,
};

#define PER_DTYPE(prefix, fn)                                                 \
    {prefix "_int8", fn, NULL, NULL, &dtypes[HCCN_INT8]},                     \
    {prefix "_uint8", fn, NULL, NULL, &dtypes[HCCN_UINT8]},                   \
    {prefix "_int16", fn, NULL, NULL, &dtypes[HCCN_INT16]},                   \
    {prefix "_uint16", fn, NULL, NULL, &dtypes[HCCN_UINT16]},                 \
    {prefix "_int32", fn, NULL, NULL, &dtypes[HCCN_INT32]},                   \
    {prefix "_uint32", fn, NULL, NULL, &dtypes[HCCN_UINT32]},                 \
    {prefix "_int64", fn, NULL, NULL, &dtypes[HCCN_INT64]},                   \
    {prefix "_uint64", fn, NULL, NULL, &dtypes[HCCN_UINT64]},                 \
    {prefix "_fp16", fn, NULL, NULL, &dtypes[HCCN_FP16]},                     \
    {prefix "_bf16", fn, NULL, NULL, &dtypes[HCCN_BF16]},                     \
    {prefix "_fp32", fn, NULL, NULL, &dtypes[HCCN_FP32]},                     \
    {prefix "_fp64", fn, NULL, NULL, &dtypes[HCCN_FP64]}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_info),
        cmocka_unit_test(test_redop_names),
        cmocka_unit_test(test_fp16_all_patterns),
        cmocka_unit_test(test_bf16_all_patterns),
        cmocka_unit_test(test_fp16_rounding),
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_array_conversions),
        PER_DTYPE("reduce", test_reduce),
        PER_DTYPE("avg", test_avg),
        cmocka_unit_test(test_int_wrap),
        cmocka_unit_test(test_float_nan_and_zeros),
        cmocka_unit_test(test_avg_values),
        cmocka_unit_test(test_invalid_is_noop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
