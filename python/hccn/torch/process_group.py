"""ProcessGroupHccn: torch.distributed's ProcessGroup on hccn.

Each method checks its tensors on the calling thread, then posts the hccn
operation on the rank thread (see _service.py) and returns a Work that
completes it when waited for (see _work.py). Ranks in arguments (src, dst,
root) are ranks in this group, as torch passes them to a process group.
"""
import ctypes

import hccn
from hccn._lib import lib
from hccn.errors import check
from hccn.torch import _convert as cv
from hccn.torch._convert import HccnBackendError
from hccn.torch._work import done_work
from torch._C._distributed_c10d import ProcessGroup

_P, _I, _Z = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t


def _blocking(name):
    """hccn_gather / hccn_scatter (no asynchronous form in libhccn)."""
    fn = getattr(lib().dll, name)
    fn.restype, fn.argtypes = _I, [_P, _P, _P, _Z, _I, _I]
    return fn


def _waiter(fut, outs=(), dev=None, value=None, keep=()):
    """A finish(): waits for hccn future fut, copies device tensor dev into
    the torch tensors outs, frees the device tensors, returns value."""
    def finish():
        try:
            if fut is not None:
                fut.wait()
            if outs:
                cv.copy_out(dev, outs)
            return value
        finally:
            for t in keep:
                t.free()
    return finish


class ProcessGroupHccn(ProcessGroup):
    """A torch process group whose collectives run on one hccn
    communicator (the world, or a sub-communicator for new_group).

    Made by the backend (hccn.torch registers it) or directly on a rank
    thread of hccn.run, for tests: ProcessGroupHccn.on_rank_thread()."""

    def __init__(self, rank, size, tracker, group):
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._tracker = tracker
        self._group = group           # hccn.Group, used on the rank thread

    @property
    def service(self):
        return self._tracker.service

    def getBackendName(self):
        return "hccn"

    def __repr__(self):
        return "ProcessGroupHccn(rank=%d, size=%d)" % (self._rank, self._size)

    # ------------------------------------------------------------ posting

    def _post(self, op, post):
        """Runs post() on the rank thread; it returns a finish() that the
        Work runs when waited for. Errors raise here, torch-style."""
        try:
            finish = self.service.call(post)
        except BaseException as e:
            raise cv.wrap_error(self._rank, op, e) from e
        return self._tracker.add(self._rank, op, finish)

    def _one(self, tensors, op, name="tensors"):
        cv.check_list(tensors, self._rank, op, name)
        if len(tensors) != 1:
            raise HccnBackendError(self._rank, op, "%s must hold one tensor "
                                   "(one device per process; got %d)"
                                   % (name, len(tensors)))
        return tensors[0]

    def _root(self, root, op):
        if not 0 <= root < self._size:
            raise HccnBackendError(self._rank, op, "root rank %d is not in "
                                   "[0, %d)" % (root, self._size))
        return root

    # -------------------------------------------------------- reductions

    def allreduce(self, tensors, opts=None):
        t = self._one(tensors, "allreduce")
        op = cv.redop(opts.reduceOp if opts is not None else
                      hccn_sum(), t, self._rank, "allreduce")
        g = self._group

        def post():
            dev = cv.to_device([t])
            fut = hccn.allreduce(dev, op=op, group=g, async_op=True)
            return _waiter(fut, [t], dev, [t], [dev])
        return self._post("allreduce", post)

    def allreduce_coalesced(self, tensors, opts=None):
        cv.check_list(tensors, self._rank, "allreduce_coalesced", "tensors")
        cv.same_dtype(tensors, self._rank, "allreduce_coalesced", "tensors")
        op = cv.redop(opts.reduceOp if opts is not None else hccn_sum(),
                      tensors[0], self._rank, "allreduce_coalesced")
        g = self._group

        def post():
            dev = cv.to_device(tensors)
            fut = hccn.allreduce(dev, op=op, group=g, async_op=True)
            return _waiter(fut, tensors, dev, list(tensors), [dev])
        return self._post("allreduce_coalesced", post)

    def reduce(self, tensors, opts):
        t = self._one(tensors, "reduce")
        root = self._root(opts.rootRank, "reduce")
        op = cv.redop(opts.reduceOp, t, self._rank, "reduce")
        g, mine = self._group, self._rank == root

        def post():
            dev = cv.to_device([t])
            fut = hccn.reduce(dev, dst=root, op=op, group=g, async_op=True)
            return _waiter(fut, [t] if mine else [], dev, [t], [dev])
        return self._post("reduce", post)

    def _reduce_scatter_base(self, output, input, opts=None):
        what = "reduce_scatter"
        cv.check_tensor(output, self._rank, what, "output")
        cv.check_tensor(input, self._rank, what, "input")
        if input.numel() != output.numel() * self._size or \
                input.dtype != output.dtype:
            raise HccnBackendError(
                self._rank, what, "input must hold group size (%d) x output's "
                "%d elements of output's dtype %s (got %d of %s)"
                % (self._size, output.numel(), output.dtype, input.numel(),
                   input.dtype))
        return self._reduce_scatter([input], output, opts, what)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        what = "reduce_scatter"
        out = self._one(output_tensors, what, "output_tensors")
        if len(input_tensors) != 1:
            raise HccnBackendError(self._rank, what, "input_tensors must "
                                   "hold one list")
        ins = cv.check_list(input_tensors[0], self._rank, what,
                            "input_tensors[0]", self._size)
        for i, t in enumerate(ins):
            if t.numel() != out.numel() or t.dtype != out.dtype:
                raise HccnBackendError(
                    self._rank, what, "input_tensors[0][%d] has %d elements "
                    "of %s, the output %d of %s" % (i, t.numel(), t.dtype,
                                                    out.numel(), out.dtype))
        return self._reduce_scatter(ins, out, opts, what)

    def _reduce_scatter(self, ins, out, opts, what):
        op = cv.redop(opts.reduceOp if opts is not None else hccn_sum(),
                      out, self._rank, what)
        g = self._group

        def post():
            dev = cv.to_device(ins)
            fut = hccn.reduce_scatter(dev, op=op, group=g, async_op=True)
            res = fut._result
            return _waiter(fut, [out], res, [out], [dev, res])
        return self._post(what, post)

    # ----------------------------------------------------------- gathers

    def allgather(self, output_tensors, input_tensors, opts=None):
        what = "allgather"
        t = self._one(input_tensors, what, "input_tensors")
        if len(output_tensors) != 1:
            raise HccnBackendError(self._rank, what, "output_tensors must "
                                   "hold one list")
        outs = cv.check_list(output_tensors[0], self._rank, what,
                             "output_tensors[0]", self._size)
        self._same_as(outs, t, what, "output_tensors[0]")
        return self._allgather(t, outs, output_tensors, what)

    def _allgather_base(self, output, input, opts=None):
        what = "allgather"
        cv.check_tensor(output, self._rank, what, "output")
        cv.check_tensor(input, self._rank, what, "input")
        if output.numel() != input.numel() * self._size or \
                input.dtype != output.dtype:
            raise HccnBackendError(
                self._rank, what, "output must hold group size (%d) x "
                "input's %d elements of input's dtype %s (got %d of %s)"
                % (self._size, input.numel(), input.dtype, output.numel(),
                   output.dtype))
        return self._allgather(input, [output], [output], what)

    def _allgather(self, t, outs, value, what):
        g = self._group

        def post():
            dev = cv.to_device([t])
            fut = hccn.allgather(dev, group=g, async_op=True)
            res = fut._result
            return _waiter(fut, outs, res, value, [dev, res])
        return self._post(what, post)

    def _same_as(self, ts, like, what, name):
        for i, t in enumerate(ts):
            if t.numel() != like.numel() or t.dtype != like.dtype:
                raise HccnBackendError(
                    self._rank, what, "%s[%d] has %d elements of %s, the "
                    "input %d of %s" % (name, i, t.numel(), t.dtype,
                                        like.numel(), like.dtype))

    def broadcast(self, tensors, opts):
        t = self._one(tensors, "broadcast")
        root = self._root(opts.rootRank, "broadcast")
        g = self._group

        def post():
            dev = cv.to_device([t])
            fut = hccn.broadcast(dev, src=root, group=g, async_op=True)
            return _waiter(fut, [t], dev, [t], [dev])
        return self._post("broadcast", post)

    def gather(self, output_tensors, input_tensors, opts):
        what = "gather"
        t = self._one(input_tensors, what, "input_tensors")
        root = self._root(opts.rootRank, what)
        mine = self._rank == root
        outs = []
        if mine:
            if len(output_tensors) != 1:
                raise HccnBackendError(self._rank, what, "output_tensors "
                                       "must hold one list on the root")
            outs = cv.check_list(output_tensors[0], self._rank, what,
                                 "output_tensors[0]", self._size)
            self._same_as(outs, t, what, "output_tensors[0]")
        elif output_tensors and output_tensors != [[]]:
            raise HccnBackendError(self._rank, what, "output_tensors must "
                                   "be empty on a rank that is not the root")
        return self._rooted("hccn_gather", t, outs, root, output_tensors)

    def scatter(self, output_tensors, input_tensors, opts):
        what = "scatter"
        t = self._one(output_tensors, what, "output_tensors")
        root = self._root(opts.rootRank, what)
        ins = []
        if self._rank == root:
            if len(input_tensors) != 1:
                raise HccnBackendError(self._rank, what, "input_tensors "
                                       "must hold one list on the root")
            ins = cv.check_list(input_tensors[0], self._rank, what,
                                "input_tensors[0]", self._size)
            self._same_as(ins, t, what, "input_tensors[0]")
        elif input_tensors and input_tensors != [[]]:
            raise HccnBackendError(self._rank, what, "input_tensors must be "
                                   "empty on a rank that is not the root")
        return self._rooted("hccn_scatter", t, ins, root, output_tensors)

    def _rooted(self, cname, t, lst, root, value):
        """gather (lst: the root's outputs) or scatter (lst: the root's
        inputs): libhccn has them blocking only, so they run when posted
        and the Work is complete at once."""
        g, n, gather = self._group, self._size, cname == "hccn_gather"
        what = cname[len("hccn_"):]

        def post():
            fn = _blocking(cname)
            comm = g._handle(what)
            big = cv.to_device(lst) if lst else cv.empty_device(t.numel() * n,
                                                               t)
            small = cv.to_device([t]) if gather else cv.empty_device(
                t.numel(), t)
            try:
                args = ((small, big) if gather else (big, small))
                check(fn(comm, args[0]._ptr, args[1]._ptr, t.numel(),
                         cv.code(t), root), cname)
                if gather and lst:
                    cv.copy_out(big, lst)
                if not gather:
                    cv.copy_out(small, [t])
            finally:
                big.free()
                small.free()
            return lambda: value
        return self._post(what, post)

    # ------------------------------------------------------------- alltoall

    def alltoall_base(self, output, input, output_split_sizes,
                      input_split_sizes, opts=None):
        what = "alltoall"
        cv.check_tensor(output, self._rank, what, "output")
        cv.check_tensor(input, self._rank, what, "input")
        if input.dtype != output.dtype:
            raise HccnBackendError(self._rank, what, "input is %s, output %s"
                                   % (input.dtype, output.dtype))
        sc = self._splits(input, input_split_sizes, "input_split_sizes")
        rc = self._splits(output, output_split_sizes, "output_split_sizes")
        return self._alltoallv([input], [output], sc, rc, [output], what)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        what = "alltoall"
        ins = cv.check_list(input_tensors, self._rank, what, "input_tensors",
                            self._size)
        outs = cv.check_list(output_tensors, self._rank, what,
                             "output_tensors", self._size)
        cv.same_dtype(ins + outs, self._rank, what, "tensors")
        return self._alltoallv(ins, outs, [t.numel() for t in ins],
                               [t.numel() for t in outs], output_tensors,
                               what)

    def _splits(self, t, sizes, name):
        """Element counts per rank from row splits (empty: equal rows)."""
        rows = t.shape[0] if t.dim() else 1
        row = t.numel() // rows if rows else 0
        if not sizes:
            if rows % self._size:
                raise HccnBackendError(
                    self._rank, "alltoall", "%d rows do not split into %d "
                    "equal parts; give %s" % (rows, self._size, name))
            return [t.numel() // self._size] * self._size
        if len(sizes) != self._size or sum(sizes) != rows:
            raise HccnBackendError(
                self._rank, "alltoall", "%s %s must have %d entries adding "
                "up to the %d rows" % (name, list(sizes), self._size, rows))
        return [s * row for s in sizes]

    def _alltoallv(self, ins, outs, sc, rc, value, what):
        g = self._group

        def post():
            dev = cv.to_device(ins)
            fut = hccn.alltoallv(dev, sc, rc, group=g, async_op=True)
            res = fut._result
            return _waiter(fut, outs, res, value, [dev, res])
        return self._post(what, post)

    # ------------------------------------------------------ p2p, barrier

    def send(self, tensors, dst, tag=0):
        t = self._one(tensors, "send")
        self._root(dst, "send")
        g = self._group

        def post():
            dev = cv.to_device([t])
            fut = hccn.isend(dev, dst, group=g)
            return _waiter(fut, (), None, [t], [dev])
        return self._post("send", post)

    def recv(self, tensors, src, tag=0):
        t = self._one(tensors, "recv")
        self._root(src, "recv")
        g = self._group

        def post():
            dev = cv.empty_device(t.numel(), t)
            fut = hccn.irecv(dev, src, group=g)
            return _waiter(fut, [t], dev, [t], [dev])
        return self._post("recv", post)

    def recv_anysource(self, tensors, tag=0):
        raise HccnBackendError(self._rank, "recv", "receiving from any "
                               "source is not supported; name the source")

    def barrier(self, opts=None):
        g = self._group

        def post():
            return _waiter(hccn.barrier(group=g, async_op=True))
        return self._post("barrier", post)

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        self.barrier().wait()

    def completed_work(self, op, value):
        """A Work already complete with value (internal)."""
        return done_work(self._tracker, self._rank, op, value)


def hccn_sum():
    """torch's ReduceOp.SUM."""
    from torch.distributed import ReduceOp
    return ReduceOp.SUM
