#include "test_half.h"

#include <math.h>
#include <string.h>

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

uint16_t test_f32_to_f16(float f)
{
    uint16_t sign = (uint16_t)((f32_bits(f) >> 16) & 0x8000u);
    double a = fabs((double)f);
    if (isnan(f))
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 65520.0)            /* halfway to 2^16 and up: infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x1p-14)             /* subnormal: units of 2^-24 */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
    int e;
    double m = frexp(a, &e);     /* a = m * 2^e, m in [0.5, 1) */
    double q = nearbyint((m * 2.0 - 1.0) * 1024.0);
    /* q == 1024 carries into the exponent, as the encoding allows. */
    return (uint16_t)(sign + (((unsigned)(e - 1 + 15) << 10) + (unsigned)q));
}

float test_f16_to_f32(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float sign = h & 0x8000u ? -1.0f : 1.0f;
    if (e == 0x1f)
        return m != 0 ? NAN : sign * INFINITY;
    if (e == 0)                  /* subnormal: m units of 2^-24 */
        return sign * ldexpf((float)m, -24);
    return sign * ldexpf((float)(m + 1024), e - 25);
}

uint16_t test_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if (isnan(f))
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

float test_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}
