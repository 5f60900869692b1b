/*
 * Reference fp16 and bf16 conversions for tests, written from the formats'
 * definitions (round to nearest even), independent of runtime/kernels.c.
 */
#ifndef HCCN_TEST_HALF_H
#define HCCN_TEST_HALF_H

#include <stdint.h>

/* fp32 -> fp16, round to nearest even; NaN stays a (quiet) NaN. */
uint16_t test_f32_to_f16(float f);
float test_f16_to_f32(uint16_t h);
/* fp32 -> bf16, round to nearest even; NaN stays a (quiet) NaN. */
uint16_t test_f32_to_bf16(float f);
float test_bf16_to_f32(uint16_t h);

#endif /* HCCN_TEST_HALF_H */
