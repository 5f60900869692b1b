"""Collectives, point-to-point and futures on device tensors.

Every call takes device tensors of the calling rank and a group (default:
the rank's default group, see hccn.init). With async_op=False a call
returns when the operation is done, with its output tensor; with
async_op=True it returns a Future at once, whose wait() returns that
output. allreduce, broadcast and reduce work in place; allgather,
reduce_scatter and alltoall write a new tensor (or `out=`).
"""
import contextlib
import ctypes

from hccn import _state
from hccn import dtypes
from hccn._lib import CollOpts, lib
from hccn.dtypes import ReduceOp
from hccn.errors import InProgressError, InvalidArgumentError, check, \
    make_error
from hccn.group import resolve
from hccn.tensor import Tensor


class Future:
    """A posted operation (C hccn_future_t). Only its rank may wait for it.
    Futures a rank never waited for are waited for when it returns."""

    def __init__(self, st, handle, result, keep, name):
        self._st = st
        self._h = handle
        self._result = result
        self._keep = keep            # tensors the operation reads or writes
        self._times = None
        self._error = None
        self._done = False
        self.name = name
        st.futures.append(self)

    def wait(self):
        """Blocks until the operation completes (the rank's simulated clock
        moves to its end); returns its output tensor (None for barrier and
        send). Raises the operation's error; waiting again is a no-op."""
        self._owner("wait")
        self._finish(raise_error=True)
        return self._result

    def is_completed(self):
        """True if the operation has completed by the rank's current
        simulated time (never advances the clock)."""
        self._owner("is_completed")
        if self._done:
            return True
        done = ctypes.c_int(0)
        check(lib().hccn_test(self._h, ctypes.byref(done)), "hccn_test")
        return bool(done.value)

    def times(self):
        """(start, end) simulated seconds of the operation: when it was
        called and when it completed."""
        if self._times is not None:
            return self._times
        if self._done:
            raise InProgressError("%s failed; it has no times" % self.name)
        self._owner("times")
        s, e = ctypes.c_double(), ctypes.c_double()
        rc = lib().hccn_future_times(self._h, ctypes.byref(s),
                                     ctypes.byref(e))
        check(rc, "hccn_future_times")
        return (s.value, e.value)

    def duration(self):
        """Simulated seconds from the call to completion."""
        start, end = self.times()
        return end - start

    def _owner(self, what):
        if _state.current("Future." + what) is not self._st:
            raise InvalidArgumentError("Future.%s: the future of %s belongs "
                                       "to another rank" % (what, self.name))

    def _finish(self, raise_error):
        if not self._done:
            L = lib()
            rc = L.hccn_wait(self._h)
            if rc != 0:
                self._error = make_error(rc, L.last_error())
            else:
                s, e = ctypes.c_double(), ctypes.c_double()
                if L.hccn_future_times(self._h, ctypes.byref(s),
                                       ctypes.byref(e)) == 0:
                    self._times = (s.value, e.value)
            L.hccn_future_free(self._h)
            self._h, self._keep, self._done = None, None, True
            if self in self._st.futures:
                self._st.futures.remove(self)
        if self._error is not None and raise_error:
            raise self._error

    def __repr__(self):
        state = "done" if self._done else "pending"
        return "hccn.Future(%s, %s)" % (self.name, state)


# ------------------------------------------------------------- helpers


def _dev(t, st, what, name="tensor"):
    """Checks that t is a live device tensor of rank st."""
    if not isinstance(t, Tensor):
        raise InvalidArgumentError("hccn.%s: %s must be a hccn.Tensor (got "
                                   "%s)" % (what, name, type(t).__name__))
    if t.is_cpu:
        raise InvalidArgumentError(
            "hccn.%s: %s is on the host (cpu); collectives take device "
            "tensors: hccn.Tensor(array)" % (what, name))
    if t._state is not st or t._ptr is None:
        raise InvalidArgumentError(
            "hccn.%s: %s is not live device memory of the calling rank "
            "(npu:%d); it is %s" % (what, name, st.device, t.device))
    return t


def _out(out, shape, like, st, what):
    """The output tensor: out checked against shape and dtype, or new."""
    if out is None:
        return Tensor._empty(shape, like._code, st)
    _dev(out, st, what, "out")
    n = 1
    for d in shape:
        n *= d
    if out.numel() != n or out._code != like._code:
        raise InvalidArgumentError(
            "hccn.%s: out must hold %d elements of %s (got %d of %s)" %
            (what, n, dtypes.NAMES[like._code], out.numel(),
             dtypes.NAMES[out._code]))
    return out


def _blocks(t, n, what):
    """Elements per rank when t is cut into n equal blocks."""
    if t.numel() % n != 0:
        raise InvalidArgumentError(
            "hccn.%s: the tensor's %d elements do not split into %d equal "
            "blocks (one per rank of the group)" % (what, t.numel(), n))
    return t.numel() // n


def _block_shape(t, n):
    """Shape of one of n blocks of t: first dimension divided if it can
    be, else flat."""
    if t.shape and t.shape[0] % n == 0:
        return (t.shape[0] // n,) + t.shape[1:]
    return (t.numel() // n,)


def _post(st, cname, args, async_op, result, keep):
    """Calls the blocking C form, or its i-form with a future."""
    L = lib()
    if not async_op:
        check(getattr(L, cname)(*args), cname)
        return result
    iname = "hccn_i" + cname[len("hccn_"):]
    h = ctypes.c_void_p()
    check(getattr(L, iname)(*args, ctypes.byref(h)), iname)
    return Future(st, h, result, keep, cname[len("hccn_"):])


def _post_opts(st, cname, args, compress, algo, async_op, result, keep):
    """Calls an hccn_*_opts form (compression or a per-call algorithm)."""
    opts = CollOpts(ctypes.sizeof(CollOpts), compress,
                    algo.encode() if algo is not None else None)
    fn = getattr(lib(), cname)
    name = cname[len("hccn_"):-len("_opts")]
    if not async_op:
        check(fn(*args, ctypes.byref(opts), None), cname)
        return result
    h = ctypes.c_void_p()
    check(fn(*args, ctypes.byref(opts), ctypes.byref(h)), cname)
    return Future(st, h, result, keep, name)


def _reducing(what, tensor, op, group, async_op, compress_dtype, algo,
              cname, out_of):
    """allreduce and reduce_scatter: out_of(tensor, n) gives the output."""
    g = resolve(group, what)
    comm = g._handle(what)
    st = g._st
    _dev(tensor, st, what)
    op = dtypes.redop(op)
    compress = dtypes.compression(compress_dtype)
    out, count = out_of(tensor, g.size())
    args = (comm, tensor._ptr, out._ptr, count, tensor._code, int(op))
    keep = (tensor, out)
    if compress == dtypes.COMPRESS_DEFAULT and algo is None:
        return _post(st, cname, args, async_op, out, keep)
    return _post_opts(st, cname + "_opts", args, compress, algo, async_op,
                      out, keep)


# --------------------------------------------------------- collectives


def allreduce(tensor, op=ReduceOp.SUM, group=None, async_op=False,
              compress_dtype=None, algo=None):
    """Reduces tensor over the group, in place; returns tensor (or a
    Future). compress_dtype=np.float16 or "bfloat16" sends fp32 data at
    that precision on the links; algo forces an algorithm for this call."""
    return _reducing("allreduce", tensor, op, group, async_op,
                     compress_dtype, algo, "hccn_allreduce",
                     lambda t, n: (t, t.numel()))


def reduce_scatter(tensor, op=ReduceOp.SUM, group=None, async_op=False,
                   out=None, compress_dtype=None, algo=None):
    """Reduces tensor over the group and leaves block r (1/n of it) on
    rank r; returns that block as a new tensor (or out)."""
    def out_of(t, n):
        count = _blocks(t, n, "reduce_scatter")
        st = _state.current("reduce_scatter")
        return (_out(out, _block_shape(t, n), t, st, "reduce_scatter"),
                count)
    return _reducing("reduce_scatter", tensor, op, group, async_op,
                     compress_dtype, algo, "hccn_reduce_scatter", out_of)


def allgather(tensor, group=None, async_op=False, out=None,
              compress_dtype=None, algo=None):
    """Gathers every rank's tensor; returns a new tensor (or out) of shape
    (group size,) + tensor.shape, block r from rank r."""
    what = "allgather"
    g = resolve(group, what)
    comm = g._handle(what)
    st = g._st
    _dev(tensor, st, what)
    compress = dtypes.compression(compress_dtype)
    res = _out(out, (g.size(),) + tensor.shape, tensor, st, what)
    args = (comm, tensor._ptr, res._ptr, tensor.numel(), tensor._code)
    if compress == dtypes.COMPRESS_DEFAULT and algo is None:
        return _post(st, "hccn_allgather", args, async_op, res, (tensor, res))
    return _post_opts(st, "hccn_allgather_opts", args, compress, algo,
                      async_op, res, (tensor, res))


def broadcast(tensor, src=0, group=None, async_op=False):
    """Copies tensor of group rank src to every rank, in place."""
    g = resolve(group, "broadcast")
    comm = g._handle("broadcast")
    _dev(tensor, g._st, "broadcast")
    args = (comm, tensor._ptr, tensor._ptr, tensor.numel(), tensor._code,
            int(src))
    return _post(g._st, "hccn_broadcast", args, async_op, tensor, (tensor,))


def reduce(tensor, dst=0, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces tensor over the group into tensor of group rank dst (in
    place; the other ranks' tensors are left as they were)."""
    g = resolve(group, "reduce")
    comm = g._handle("reduce")
    _dev(tensor, g._st, "reduce")
    op = dtypes.redop(op)
    args = (comm, tensor._ptr, tensor._ptr, tensor.numel(), tensor._code,
            int(op), int(dst))
    return _post(g._st, "hccn_reduce", args, async_op, tensor, (tensor,))


def alltoall(tensor, group=None, async_op=False, out=None):
    """Sends block j (1/n of tensor) to rank j; returns a new tensor (or
    out) of tensor's shape whose block i came from rank i."""
    g = resolve(group, "alltoall")
    comm = g._handle("alltoall")
    st = g._st
    _dev(tensor, st, "alltoall")
    count = _blocks(tensor, g.size(), "alltoall")
    res = _out(out, tensor.shape, tensor, st, "alltoall")
    args = (comm, tensor._ptr, res._ptr, count, tensor._code)
    return _post(st, "hccn_alltoall", args, async_op, res, (tensor, res))


def _sizes(counts, n, what, name):
    """counts as a C size_t array of n entries (kept alive by the caller)."""
    counts = [int(c) for c in counts]
    if len(counts) != n or min(counts, default=0) < 0:
        raise InvalidArgumentError(
            "hccn.%s: %s must have %d non-negative entries, one per rank of "
            "the group (got %r)" % (what, name, n, counts))
    return (ctypes.c_size_t * n)(*counts)


def _packed(counts):
    """Displacements of blocks laid one after another."""
    d, off = [], 0
    for c in counts:
        d.append(off)
        off += c
    return d


def alltoallv(tensor, send_counts, recv_counts, group=None, async_op=False,
              out=None):
    """Sends the next send_counts[j] elements of tensor (blocks packed in
    rank order) to rank j; returns a new 1-D tensor (or out) of
    sum(recv_counts) elements whose block i came from rank i."""
    what = "alltoallv"
    g = resolve(group, what)
    comm = g._handle(what)
    st = g._st
    n = g.size()
    _dev(tensor, st, what)
    sc = _sizes(send_counts, n, what, "send_counts")
    rc = _sizes(recv_counts, n, what, "recv_counts")
    if sum(sc) != tensor.numel():
        raise InvalidArgumentError(
            "hccn.alltoallv: send_counts add up to %d but the tensor has %d "
            "elements" % (sum(sc), tensor.numel()))
    sd = _sizes(_packed(sc), n, what, "sdispls")
    rd = _sizes(_packed(rc), n, what, "rdispls")
    res = _out(out, (sum(rc),), tensor, st, what)
    args = (comm, tensor._ptr, sc, sd, res._ptr, rc, rd, tensor._code)
    return _post(st, "hccn_alltoallv", args, async_op, res,
                 (tensor, res, sc, rc, sd, rd))


def allgatherv(tensor, counts, group=None, async_op=False, out=None):
    """Gathers every rank's tensor (counts[r] elements on rank r) into a
    new 1-D tensor (or out) of sum(counts) elements, block r from rank r."""
    what = "allgatherv"
    g = resolve(group, what)
    comm = g._handle(what)
    st = g._st
    n = g.size()
    _dev(tensor, st, what)
    cnt = _sizes(counts, n, what, "counts")
    d = _sizes(_packed(cnt), n, what, "displs")
    res = _out(out, (sum(cnt),), tensor, st, what)
    args = (comm, tensor._ptr, tensor.numel(), res._ptr, cnt, d,
            tensor._code)
    return _post(st, "hccn_allgatherv", args, async_op, res,
                 (tensor, res, cnt, d))


def reduce_scatterv(tensor, counts, op=ReduceOp.SUM, group=None,
                    async_op=False, out=None):
    """Reduces tensor (sum(counts) elements) over the group and leaves
    block r (counts[r] elements) on rank r; returns it as a new tensor (or
    out)."""
    what = "reduce_scatterv"
    g = resolve(group, what)
    comm = g._handle(what)
    st = g._st
    n = g.size()
    _dev(tensor, st, what)
    op = dtypes.redop(op)
    cnt = _sizes(counts, n, what, "counts")
    if sum(cnt) != tensor.numel():
        raise InvalidArgumentError(
            "hccn.reduce_scatterv: counts add up to %d but the tensor has "
            "%d elements" % (sum(cnt), tensor.numel()))
    res = _out(out, (cnt[g.rank()],), tensor, st, what)
    args = (comm, tensor._ptr, res._ptr, cnt, tensor._code, int(op))
    return _post(st, "hccn_reduce_scatterv", args, async_op, res,
                 (tensor, res, cnt))


def barrier(group=None, async_op=False):
    """Returns when every rank of the group has entered the barrier."""
    g = resolve(group, "barrier")
    return _post(g._st, "hccn_barrier", (g._handle("barrier"),), async_op,
                 None, ())


# ------------------------------------------------------ point-to-point


def _p2p(cname, tensor, peer, group, async_op, result):
    what = cname[len("hccn_"):]
    g = resolve(group, what)
    comm = g._handle(what)
    _dev(tensor, g._st, what)
    args = (comm, tensor._ptr, tensor.numel(), tensor._code, int(peer))
    return _post(g._st, cname, args, async_op, result, (tensor,))


def send(tensor, dst, group=None):
    """Sends tensor to group rank dst (matched in posting order)."""
    _p2p("hccn_send", tensor, dst, group, False, None)


def recv(tensor, src, group=None):
    """Receives into tensor from group rank src; returns tensor."""
    return _p2p("hccn_recv", tensor, src, group, False, tensor)


def isend(tensor, dst, group=None):
    """send() that returns a Future at once."""
    return _p2p("hccn_send", tensor, dst, group, True, None)


def irecv(tensor, src, group=None):
    """recv() that returns a Future at once; wait() returns tensor."""
    return _p2p("hccn_recv", tensor, src, group, True, tensor)


# ---------------------------------------------------------- op groups


def group_start():
    """Starts an operation group (NCCL's ncclGroupStart): until the
    matching group_end(), blocking calls of this rank only post their
    operation. Groups nest."""
    check(lib().hccn_group_start(_state.current("group_start").ctx),
          "hccn_group_start")


def group_end():
    """Ends an operation group; the outermost end waits for every posted
    operation and raises the first error."""
    check(lib().hccn_group_end(_state.current("group_end").ctx),
          "hccn_group_end")


@contextlib.contextmanager
def grouped():
    """with hccn.grouped(): ... — group_start() and group_end() around a
    block (group_end runs even if the block raises)."""
    group_start()
    try:
        yield
    finally:
        group_end()
