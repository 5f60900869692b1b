/* Sizes and names of the public data types and reduction operators. */
#include "hccn/hccn.h"

static const size_t dtype_sizes[HCCN_DTYPE_COUNT] = {
    [HCCN_INT8] = 1,  [HCCN_UINT8] = 1,  [HCCN_INT16] = 2, [HCCN_UINT16] = 2,
    [HCCN_INT32] = 4, [HCCN_UINT32] = 4, [HCCN_INT64] = 8, [HCCN_UINT64] = 8,
    [HCCN_FP16] = 2,  [HCCN_BF16] = 2,   [HCCN_FP32] = 4,  [HCCN_FP64] = 8,
};

static const char *const dtype_names[HCCN_DTYPE_COUNT] = {
    [HCCN_INT8] = "int8",     [HCCN_UINT8] = "uint8",
    [HCCN_INT16] = "int16",   [HCCN_UINT16] = "uint16",
    [HCCN_INT32] = "int32",   [HCCN_UINT32] = "uint32",
    [HCCN_INT64] = "int64",   [HCCN_UINT64] = "uint64",
    [HCCN_FP16] = "fp16",     [HCCN_BF16] = "bf16",
    [HCCN_FP32] = "fp32",     [HCCN_FP64] = "fp64",
};

static const char *const redop_names[HCCN_REDOP_COUNT] = {
    [HCCN_SUM] = "sum", [HCCN_PROD] = "prod", [HCCN_MAX] = "max",
    [HCCN_MIN] = "min", [HCCN_AVG] = "avg",
};

/* The casts to unsigned also reject negative values of the enums. */
size_t hccn_dtype_size(hccn_dtype_t dtype)
{
    return (unsigned)dtype < HCCN_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

const char *hccn_dtype_name(hccn_dtype_t dtype)
{
    return (unsigned)dtype < HCCN_DTYPE_COUNT ? dtype_names[dtype] : "invalid";
}

const char *hccn_redop_name(hccn_redop_t op)
{
    return (unsigned)op < HCCN_REDOP_COUNT ? redop_names[op] : "invalid";
}
