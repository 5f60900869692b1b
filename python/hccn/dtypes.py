"""numpy dtypes <-> hccn dtypes, reduction operators, compression modes.

numpy has no bfloat16: a bfloat16 tensor is stored in a uint16 array of raw
bits and named with dtype="bfloat16"; to_bfloat16 and from_bfloat16 convert
float arrays to and from such bits (round to nearest, ties to even).
"""
import enum

import numpy as np

from hccn.errors import InvalidArgumentError

INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64, UINT64 = range(8)
FP16, BF16, FP32, FP64 = range(8, 12)

BFLOAT16 = "bfloat16"

_FROM_NUMPY = {
    np.dtype(np.int8): INT8, np.dtype(np.uint8): UINT8,
    np.dtype(np.int16): INT16, np.dtype(np.uint16): UINT16,
    np.dtype(np.int32): INT32, np.dtype(np.uint32): UINT32,
    np.dtype(np.int64): INT64, np.dtype(np.uint64): UINT64,
    np.dtype(np.float16): FP16, np.dtype(np.float32): FP32,
    np.dtype(np.float64): FP64,
}

NAMES = {INT8: "int8", UINT8: "uint8", INT16: "int16", UINT16: "uint16",
         INT32: "int32", UINT32: "uint32", INT64: "int64", UINT64: "uint64",
         FP16: "float16", BF16: BFLOAT16, FP32: "float32", FP64: "float64"}


def code_of(dtype):
    """The hccn dtype code of a name ("float32", "bfloat16", "bf16", ...), a
    numpy dtype or a code."""
    if isinstance(dtype, int):
        return dtype
    if is_bfloat16(dtype):
        return BF16
    try:
        return _FROM_NUMPY[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise InvalidArgumentError("unknown dtype %r" % (dtype,))


class ReduceOp(enum.IntEnum):
    """Reduction operators (hccn_redop_t). AVG divides the sum by the number
    of ranks (integers: truncated toward zero)."""
    SUM = 0
    PROD = 1
    MAX = 2
    MIN = 3
    AVG = 4


def is_bfloat16(dtype):
    return isinstance(dtype, str) and dtype.lower() in ("bfloat16", "bf16")


def resolve(array, dtype=None):
    """Returns (numpy array, hccn dtype) for data and a requested dtype
    (a numpy dtype, "bfloat16" or None for the array's own). Raises
    InvalidArgumentError for a dtype hccn has no counterpart for."""
    if is_bfloat16(dtype):
        array = np.asarray(array)
        if array.dtype != np.uint16:
            raise InvalidArgumentError(
                "dtype='bfloat16' takes a uint16 array of raw bfloat16 bits "
                "(got %s); convert floats with hccn.to_bfloat16(x)"
                % array.dtype)
        return array, BF16
    try:
        array = np.asarray(array, dtype=dtype)
    except TypeError as e:
        raise InvalidArgumentError("invalid dtype %r: %s" % (dtype, e))
    code = _FROM_NUMPY.get(array.dtype)
    if code is None:
        raise InvalidArgumentError(
            "numpy dtype %s has no hccn counterpart (use int8..uint64, "
            "float16, float32, float64, or uint16 bits with "
            "dtype='bfloat16')" % array.dtype)
    return array, code


def storage_dtype(code):
    """The numpy dtype that holds elements of hccn dtype code."""
    if code == BF16:
        return np.dtype(np.uint16)
    for np_dtype, c in _FROM_NUMPY.items():
        if c == code:
            return np_dtype
    raise InvalidArgumentError("invalid hccn dtype %r" % (code,))


def redop(op):
    """A ReduceOp from a ReduceOp, its int value or its name ("sum")."""
    if isinstance(op, str):
        try:
            return ReduceOp[op.upper()]
        except KeyError:
            pass
    else:
        try:
            return ReduceOp(op)
        except ValueError:
            pass
    raise InvalidArgumentError(
        "invalid reduction op %r (use hccn.ReduceOp.SUM, PROD, MAX, MIN or "
        "AVG)" % (op,))


COMPRESS_DEFAULT = -1     # the communicator's setting
COMPRESS_NONE, COMPRESS_FP16, COMPRESS_BF16 = 0, 1, 2


def compression(dtype):
    """HCCN_COMPRESS_* for a wire dtype: None -> the communicator's
    setting, False/"none" -> none, np.float16 -> FP16, "bfloat16" -> BF16."""
    if dtype is None:
        return COMPRESS_DEFAULT
    if dtype is False or (isinstance(dtype, str) and dtype.lower() == "none"):
        return COMPRESS_NONE
    if is_bfloat16(dtype):
        return COMPRESS_BF16
    try:
        if np.dtype(dtype) == np.float16:
            return COMPRESS_FP16
    except TypeError:
        pass
    raise InvalidArgumentError(
        "compress_dtype must be np.float16, 'bfloat16' or None (got %r)"
        % (dtype,))


def to_bfloat16(x):
    """Raw bfloat16 bits (uint16 array) of float data, rounded to nearest
    with ties to even; NaN stays a quiet NaN."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(f)
    out[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return out


def from_bfloat16(bits):
    """float32 values of raw bfloat16 bits (a uint16 array)."""
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)
