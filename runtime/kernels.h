/*
 * Reduction kernels and element conversions (runtime layer).
 *
 * Arithmetic rules (docs/api.md repeats them for users):
 * - Integers wrap (two's complement for signed types, computed in the
 *   unsigned type of the same width so there is no undefined behaviour).
 * - fp16 and bf16: both operands are widened to fp32, combined in fp32, and
 *   the result is rounded back to the nearest representable value, ties to
 *   even; NaN stays NaN, overflow gives infinity.
 * - MAX and MIN propagate NaN: if either operand is NaN the result is NaN.
 * - AVG reduces like SUM; hccn_rt_avg_finish() then divides by the number of
 *   ranks: floats (fp16/bf16 via fp32) by true division, integers by C
 *   division (truncation toward zero) of the wrapped sum.
 *
 * All kernels accept n == 0 and overlapping dst/src only when they are equal.
 */
#ifndef HCCN_RUNTIME_KERNELS_H
#define HCCN_RUNTIME_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "hccn/hccn.h"

/* dst[i] = dst[i] op src[i], i < n. */
void hccn_rt_reduce(void *dst, const void *src, size_t n, hccn_dtype_t dtype,
                    hccn_redop_t op);

/* dst[i] = a[i] op b[i], i < n; dst may equal a or b. */
void hccn_rt_reduce3(void *dst, const void *a, const void *b, size_t n,
                     hccn_dtype_t dtype, hccn_redop_t op);

/* buf[i] = buf[i] / nranks for AVG (see above); a no-op for nranks <= 1. */
void hccn_rt_avg_finish(void *buf, size_t n, hccn_dtype_t dtype, int nranks);

/* Scalar conversions, round to nearest even. */
float hccn_rt_fp16_to_fp32(uint16_t h);
uint16_t hccn_rt_fp32_to_fp16(float f);
float hccn_rt_bf16_to_fp32(uint16_t h);
uint16_t hccn_rt_fp32_to_bf16(float f);

/* Array conversions fp32 <-> fp16/bf16 (dtype is HCCN_FP16 or HCCN_BF16),
 * used by compressed transfers. */
void hccn_rt_fp32_to_half_array(uint16_t *dst, const float *src, size_t n,
                                hccn_dtype_t dtype);
void hccn_rt_half_to_fp32_array(float *dst, const uint16_t *src, size_t n,
                                hccn_dtype_t dtype);

/* on = 1: only the portable loops from now on; on = 0: the host's own
 * instructions where it has them (F16C for fp16; the default). Both give
 * the same bits; tests compare them. Returns 1 if host instructions are in
 * use afterwards. Not for use while kernels run on other threads. */
int hccn_rt_kernels_portable(int on);

#endif /* HCCN_RUNTIME_KERNELS_H */
