"""torch tensors <-> hccn device tensors, reduction operators, errors.

Every operation copies its torch (CPU) inputs into the rank's NPU arena
(hccn.Tensor), runs the collective there, and copies the results back into
the torch outputs. bfloat16 travels as its raw bits (hccn's BF16); bool as
uint8, with SUM as logical OR and PRODUCT as logical AND (MAX and MIN are
the same on 0/1). Non-contiguous tensors are copied (inputs) and written
back element by element (outputs); sparse tensors and tensors on any device
but the CPU are rejected with an error naming the rank and the operation.
"""
import numpy as np
import torch

import hccn
from hccn import dtypes
from hccn.errors import HccnError

# torch dtype -> (hccn dtype code, numpy storage dtype, torch view dtype).
_DTYPES = {
    torch.float32: (dtypes.FP32, np.float32, None),
    torch.float64: (dtypes.FP64, np.float64, None),
    torch.float16: (dtypes.FP16, np.float16, None),
    torch.bfloat16: (dtypes.BF16, np.uint16, torch.int16),
    torch.int8: (dtypes.INT8, np.int8, None),
    torch.uint8: (dtypes.UINT8, np.uint8, None),
    torch.int16: (dtypes.INT16, np.int16, None),
    torch.int32: (dtypes.INT32, np.int32, None),
    torch.int64: (dtypes.INT64, np.int64, None),
    torch.bool: (dtypes.UINT8, np.uint8, torch.uint8),
}

_REDOPS = {"SUM": hccn.ReduceOp.SUM, "AVG": hccn.ReduceOp.AVG,
           "PRODUCT": hccn.ReduceOp.PROD, "MAX": hccn.ReduceOp.MAX,
           "MIN": hccn.ReduceOp.MIN}


class HccnBackendError(RuntimeError):
    """An operation of the hccn torch backend failed. ``rank`` is the
    calling process's rank in the group, ``op`` the operation's name and
    ``hccn_error`` the binding's exception (None for argument errors)."""

    def __init__(self, rank, op, message, hccn_error=None):
        super().__init__("hccn backend, rank %d, %s: %s" % (rank, op, message))
        self.rank, self.op, self.hccn_error = rank, op, hccn_error


def wrap_error(rank, op, e):
    """e as an HccnBackendError (HccnErrors keep their message and status
    name; other exceptions pass through unchanged)."""
    if isinstance(e, HccnBackendError) or not isinstance(e, HccnError):
        return e
    return HccnBackendError(rank, op, str(e), e)


def check_tensor(t, rank, op, name="tensor"):
    """Raises HccnBackendError unless t is a dense CPU tensor of a dtype
    hccn carries."""
    if not isinstance(t, torch.Tensor):
        raise HccnBackendError(rank, op, "%s must be a torch.Tensor (got %s)"
                               % (name, type(t).__name__))
    if t.device.type != "cpu":
        raise HccnBackendError(
            rank, op, "%s is on device %s; the hccn backend takes CPU tensors "
            "(the simulated NPUs' memory is filled from host memory)"
            % (name, t.device))
    if t.layout != torch.strided:
        raise HccnBackendError(rank, op, "%s has layout %s; only dense "
                               "(strided) tensors are supported"
                               % (name, t.layout))
    if t.dtype not in _DTYPES:
        raise HccnBackendError(
            rank, op, "%s has dtype %s; supported: float32, float64, float16, "
            "bfloat16, int8, uint8, int16, int32, int64, bool"
            % (name, t.dtype))
    return t


def check_list(ts, rank, op, name, count=None):
    """Checks a list of tensors (and its length when count is given)."""
    if count is not None and len(ts) != count:
        raise HccnBackendError(rank, op, "%s must hold %d tensors (got %d)"
                               % (name, count, len(ts)))
    for i, t in enumerate(ts):
        check_tensor(t, rank, op, "%s[%d]" % (name, i))
    return ts


def code(t):
    """The hccn dtype code that carries torch tensor t."""
    return _DTYPES[t.dtype][0]


def host_array(t):
    """A contiguous numpy array of t's elements (raw bits for bfloat16,
    0/1 bytes for bool); shares memory with t when t is contiguous."""
    _, storage, view = _DTYPES[t.dtype]
    src = t.detach()
    if view is not None:
        src = src.contiguous().view(view)
    arr = src.contiguous().numpy()
    return arr.view(storage) if arr.dtype != storage else arr


def to_device(ts):
    """One hccn device tensor (on the calling rank) holding the tensors of
    the list ts one after another, flat; they share one dtype."""
    if len(ts) == 1:
        arr = host_array(ts[0]).reshape(-1)
    else:
        arr = np.concatenate([host_array(t).reshape(-1) for t in ts])
    c = code(ts[0])
    return hccn.Tensor(arr, dtype="bfloat16" if c == dtypes.BF16 else None)


def empty_device(numel, like):
    """An uninitialised flat device tensor of numel elements of like's
    dtype."""
    c = code(like)
    storage = _DTYPES[like.dtype][1]
    return hccn.empty((numel,), "bfloat16" if c == dtypes.BF16 else storage)


def copy_out(dev, outs, offset=0):
    """Copies consecutive elements of device tensor dev, from element
    offset on, into the torch tensors outs (any strides). Returns the
    offset after the last one copied."""
    flat = dev.cpu().numpy().reshape(-1)
    for t in outs:
        n = t.numel()
        part = np.array(flat[offset:offset + n])
        if part.dtype == np.uint16:          # bfloat16 bits
            part = part.view(np.int16)
        chunk = torch.from_numpy(part)
        view = _DTYPES[t.dtype][2]
        if view is not None:
            chunk = chunk.view(view).view(t.dtype)
        with torch.no_grad():
            t.copy_(chunk.view(t.shape))
        offset += n
    return offset


def redop(op, t, rank, what):
    """The hccn ReduceOp for a torch ReduceOp on tensor t (bool: SUM is OR,
    PRODUCT is AND); raises HccnBackendError for BAND/BOR/BXOR/PREMUL_SUM
    and for AVG of bool."""
    kind = op.op if hasattr(op, "op") else op
    name = getattr(kind, "name", str(kind)).upper()
    if name not in _REDOPS:
        raise HccnBackendError(rank, what, "reduction %s is not supported "
                               "(SUM, AVG, PRODUCT, MIN, MAX are)" % name)
    if t.dtype == torch.bool:
        if name == "AVG":
            raise HccnBackendError(rank, what, "AVG of bool tensors is not "
                                   "defined")
        name = {"SUM": "MAX", "PRODUCT": "MIN"}.get(name, name)
    return _REDOPS[name]


def same_dtype(ts, rank, op, name):
    """Raises unless every tensor of ts has ts[0]'s dtype."""
    for i, t in enumerate(ts):
        if t.dtype != ts[0].dtype:
            raise HccnBackendError(rank, op, "%s[%d] has dtype %s, %s[0] %s"
                                   % (name, i, t.dtype, name, ts[0].dtype))
