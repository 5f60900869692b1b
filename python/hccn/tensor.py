"""Tensors: numpy data in a rank's device memory (or on the host).

hccn.Tensor(array) copies the array into the calling rank's arena
(hccn_malloc); collectives work on such device tensors in place or write
new ones. t.cpu() copies back to a host tensor whose .numpy() is a numpy
array. Device memory lives until the tensor is garbage-collected, freed
with t.free(), or the rank function returns, whichever comes first.
"""
import ctypes

import numpy as np

from hccn import _state
from hccn import dtypes
from hccn._lib import lib
from hccn.errors import InvalidArgumentError, check


def _parse_device(device, st):
    """'cpu', or the calling rank's NPU for None, 'npu', 'npu:N' or N."""
    if isinstance(device, str) and device.lower() == "cpu":
        return "cpu"
    if device is None or (isinstance(device, str) and device.lower() == "npu"):
        return None
    index = device
    if isinstance(device, str) and device.lower().startswith("npu:"):
        index = device[4:]
    try:
        index = int(index)
    except (TypeError, ValueError):
        raise InvalidArgumentError(
            "invalid device %r (use 'cpu', 'npu', 'npu:N' or N)" % (device,))
    if st is not None and index != st.device:
        raise InvalidArgumentError(
            "device npu:%d is not the calling rank's NPU (npu:%d): a rank "
            "allocates only in its own device memory" % (index, st.device))
    return None


class Tensor:
    """A dense array on the calling rank's NPU or on the host ("cpu").

    Tensor(data, device=None, dtype=None): data is anything numpy.asarray
    takes; dtype a numpy dtype or "bfloat16" (data then holds the raw bits
    as uint16). device None / "npu" / "npu:<this rank>" copies the data to
    the calling rank's device memory; "cpu" keeps it on the host.
    """

    def __init__(self, data, device=None, dtype=None):
        st = _state.current_or_none()
        where = _parse_device(device, st)
        array, code = dtypes.resolve(data, dtype)
        self.shape = tuple(array.shape)
        self._code = code
        self._storage = dtypes.storage_dtype(code)
        self._ptr = None
        self._host = None
        self._state = None
        if where == "cpu":
            self._host = np.array(array, dtype=self._storage, order="C")
            return
        if st is None:
            st = _state.current("Tensor")
        self._alloc(st)
        self._device_view()[...] = array

    @classmethod
    def _empty(cls, shape, code, st):
        """An uninitialised device tensor of rank st (internal)."""
        t = cls.__new__(cls)
        t.shape = tuple(shape)
        t._code = code
        t._storage = dtypes.storage_dtype(code)
        t._ptr = t._host = t._state = None
        t._alloc(st)
        return t

    def _alloc(self, st):
        out = ctypes.c_void_p()
        check(lib().hccn_malloc(st.ctx, max(self.nbytes, 1),
                                ctypes.byref(out)), "hccn_malloc")
        self._ptr = out.value
        self._state = st
        st.tensors[id(self)] = self

    def _device_view(self):
        """A numpy array aliasing the device memory (no copy)."""
        if self._ptr is None:
            raise InvalidArgumentError(
                "this tensor's device memory was freed (by free() or when "
                "its rank function returned); copy results out with "
                "t.cpu() inside the rank function")
        raw = (ctypes.c_char * max(self.nbytes, 1)).from_address(self._ptr)
        flat = np.frombuffer(raw, dtype=self._storage, count=self.numel())
        return flat.reshape(self.shape)

    # ---------------------------------------------------------- queries

    @property
    def dtype(self):
        """The numpy dtype of the elements, or "bfloat16"."""
        return dtypes.BFLOAT16 if self._code == dtypes.BF16 else self._storage

    @property
    def device(self):
        if self._host is not None:
            return "cpu"
        return "npu:%d" % self._state.device if self._state else "npu:freed"

    @property
    def is_cpu(self):
        return self._host is not None

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self):
        return self.numel() * self._storage.itemsize

    def element_size(self):
        return self._storage.itemsize

    def data_ptr(self):
        """The device address (an int), or None for a host tensor."""
        return self._ptr

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        return "hccn.Tensor(shape=%s, dtype=%s, device=%s)" % (
            self.shape, dtypes.NAMES[self._code], self.device)

    # -------------------------------------------------------- transfers

    def cpu(self):
        """A host copy of the tensor (the tensor itself if on the host)."""
        if self._host is not None:
            return self
        return Tensor(self._device_view(), device="cpu", dtype=self._dtype_arg())

    def numpy(self):
        """The host tensor's numpy array (shared, not copied). A device
        tensor must be copied first: t.cpu().numpy()."""
        if self._host is None:
            raise TypeError("can't convert a device tensor (%s) to numpy; "
                            "use t.cpu().numpy()" % self.device)
        return self._host

    def copy_(self, src):
        """Copies src (a Tensor or array of the same number of elements)
        into this tensor; returns self."""
        data = src.cpu().numpy() if isinstance(src, Tensor) else src
        data = np.asarray(data)
        if data.size != self.numel():
            raise InvalidArgumentError(
                "copy_: %d elements into a tensor of %d" %
                (data.size, self.numel()))
        dst = self._host if self._host is not None else self._device_view()
        dst[...] = data.reshape(self.shape)
        return self

    def _dtype_arg(self):
        return dtypes.BFLOAT16 if self._code == dtypes.BF16 else self._storage

    # ---------------------------------------------------------- lifetime

    def free(self):
        """Releases the device memory now (idempotent)."""
        self._release()

    def _release(self):
        st, ptr = self._state, self._ptr
        if ptr is None or st is None:
            return
        self._ptr = None
        st.tensors.pop(id(self), None)
        if st.alive:
            lib().hccn_free(st.ctx, ptr)

    def __del__(self):
        try:
            self._release()
        except Exception:
            pass


def empty(shape, dtype=np.float32):
    """An uninitialised device tensor on the calling rank."""
    st = _state.current("empty")
    _, code = dtypes.resolve(np.empty(0, dtype=np.uint16 if
                                      dtypes.is_bfloat16(dtype) else dtype),
                             dtype)
    if isinstance(shape, int):
        shape = (shape,)
    return Tensor._empty(shape, code, st)


def zeros(shape, dtype=np.float32):
    """A device tensor of zeros on the calling rank."""
    t = empty(shape, dtype)
    t._device_view()[...] = 0
    return t
