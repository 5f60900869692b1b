"""Clusters and the SPMD launch: hccn.run(fn) calls fn on every simulated
NPU thread and returns the list of their return values.

The rank function runs inside a ctypes callback on a C thread (ctypes takes
the GIL for it); every blocking hccn call releases the GIL, so ranks wait
for each other in C, not in Python. An exception in a rank function makes
that rank return an error status; run() then re-raises it with ``rank``
set. The other ranks may be left waiting for the failed one until the
runtime's wall-clock timeout (HCCN_TIMEOUT seconds, or timeout=).
"""
import ctypes
import json
import os
import traceback

from hccn import _state, dtypes
from hccn._lib import RANK_FN, ClusterOpts, CommSummary, MemInfo, lib
from hccn.errors import (ERR_INTERNAL, AbortedError, HccnError,
                         HccnTimeoutError, InvalidArgumentError, RemoteError,
                         check, make_error)
from hccn.tensor import Tensor

DEFAULT_TOPOLOGY = "configs/default.json"
_SOURCE_ROOT = os.path.normpath(os.path.join(os.path.dirname(
    os.path.abspath(__file__)), "..", ".."))


def _find_topology(path):
    """path as given if it exists, else relative to the source tree (so
    "configs/default.json" works from any directory of a checkout)."""
    path = os.fspath(path)
    if os.path.exists(path) or os.path.isabs(path):
        return path
    alt = os.path.join(_SOURCE_ROOT, path)
    return alt if os.path.exists(alt) else path


class Cluster:
    """A simulated cluster made from a topology: a file path, a JSON text,
    or a dict in the topology format (docs/topology.md).

    timeout: wall-clock seconds a rank waits for its peers before
    HCCN_ERR_TIMEOUT (default: HCCN_TIMEOUT or 300). bind_threads: pin NPU
    threads to host cores. proc_rank, proc_world, rendezvous: one cluster
    across several processes of this host (docs/processes.md; default:
    HCCN_PROC_RANK, HCCN_PROC_WORLD, HCCN_RENDEZVOUS); run() then calls fn
    for this process's ranks only (local_ranks)."""

    def __init__(self, topology=DEFAULT_TOPOLOGY, timeout=None,
                 bind_threads=False, proc_rank=0, proc_world=0,
                 rendezvous=None):
        L = lib()
        opts = ClusterOpts(ctypes.sizeof(ClusterOpts), int(bool(bind_threads)),
                           float(timeout) if timeout else 0.0)
        opts.proc_rank = int(proc_rank)
        opts.proc_world = int(proc_world)
        opts.rendezvous = (os.fsencode(rendezvous) if rendezvous is not None
                           else None)
        out = ctypes.c_void_p()
        if isinstance(topology, dict):
            text = json.dumps(topology).encode()
            name = str(topology.get("name", "<dict>")).encode()
            rc = L.hccn_cluster_create_json(text, name, ctypes.byref(opts),
                                            ctypes.byref(out))
        elif isinstance(topology, str) and topology.lstrip().startswith("{"):
            rc = L.hccn_cluster_create_json(topology.encode(), b"<string>",
                                            ctypes.byref(opts),
                                            ctypes.byref(out))
        else:
            path = _find_topology(topology)
            rc = L.hccn_cluster_create(path.encode(), ctypes.byref(opts),
                                       ctypes.byref(out))
        check(rc, "hccn_cluster_create")
        self._cl = out
        self.size = L.hccn_cluster_size(out)
        self.nodes = L.hccn_cluster_nodes(out)
        self.proc_rank = L.hccn_cluster_proc_rank(out)
        self.proc_world = L.hccn_cluster_proc_world(out)
        self.local_ranks = [r for r in range(self.size)
                            if L.hccn_cluster_rank_local(out, r)]

    def run(self, fn, args=(), kwargs=None):
        """Calls fn(*args, **kwargs) on every NPU thread of this process
        (every NPU, unless the cluster spans processes: local_ranks);
        returns the list of return values by rank (None for ranks of
        other processes; device tensors among them, also inside
        lists, tuples and dicts, are copied to the host). Re-raises the
        exception of the failed rank most likely to be the cause (the
        lowest rank with an error of its own, else with a timeout, else
        with a remote or abort error), with its ``rank`` and
        ``rank_errors`` (all ranks' exceptions) attributes set."""
        if self._cl is None:
            raise InvalidArgumentError("Cluster.run: the cluster is closed")
        if _state.current_or_none() is not None:
            raise InvalidArgumentError("hccn.run cannot be nested inside a "
                                       "rank function")
        kwargs = kwargs or {}
        results = [None] * self.size
        errors = {}

        def trampoline(ctx, _arg):
            return _rank_main(self, ctx, fn, args, kwargs, results, errors)

        cb = RANK_FN(trampoline)     # must outlive the C call
        status = (ctypes.c_int * self.size)()
        L = lib()
        rc = L.hccn_cluster_run(self._cl, cb, None, status)
        if errors:
            raise _pick(errors)
        if rc != 0:
            raise make_error(rc, L.last_error())
        return results

    def close(self):
        """Destroys the cluster (its device memory goes). Idempotent."""
        if getattr(self, "_cl", None) is not None:
            lib().hccn_cluster_destroy(self._cl)
            self._cl = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _rank_main(cluster, ctx, fn, args, kwargs, results, errors):
    """The body of the C callback: never lets an exception escape."""
    rank = -1
    try:
        st = _state.RankState(cluster, ctx)
        rank = st.device
        _state.enter(st)
        try:
            results[rank] = _to_host(fn(*args, **kwargs))
            return 0
        finally:
            st.close()
            _state.leave()
    except BaseException as e:     # reported by run(), on the main thread
        e.__traceback_text__ = traceback.format_exc()
        errors[rank] = e
        if isinstance(e, HccnError) and e.status < 0:
            return e.status
        return ERR_INTERNAL


def _to_host(value):
    """value with device tensors (also inside lists, tuples and dicts)
    replaced by host copies: device memory goes when the rank returns."""
    if isinstance(value, Tensor):
        return value.cpu()
    if type(value) in (list, tuple):
        return type(value)(_to_host(v) for v in value)
    if type(value) is dict:
        return {k: _to_host(v) for k, v in value.items()}
    return value


def _cause_order(e):
    """0 for an error of the rank's own, 1 for a timeout, 2 for a remote or
    abort error (a consequence of another rank's failure)."""
    if isinstance(e, (RemoteError, AbortedError)):
        return 2
    return 1 if isinstance(e, HccnTimeoutError) else 0


def _pick(errors):
    """The exception to re-raise: the lowest rank's among those most likely
    to be the cause (own errors, then timeouts, then remote errors)."""
    rank = min(errors, key=lambda r: (_cause_order(errors[r]), r))
    e = errors[rank]
    e.rank = rank
    e.rank_errors = dict(errors)
    if hasattr(e, "add_note"):
        others = sorted(r for r in errors if r != rank)
        e.add_note("raised on rank %d%s" % (rank, (
            "; ranks %s failed too" % others) if others else ""))
    return e


def run(fn, topology=DEFAULT_TOPOLOGY, args=(), kwargs=None, timeout=None,
        bind_threads=False):
    """Makes a Cluster from topology, runs fn on every NPU (see
    Cluster.run) and destroys the cluster. Returns fn's values by rank."""
    cl = Cluster(topology, timeout=timeout, bind_threads=bind_threads)
    try:
        return cl.run(fn, args=args, kwargs=kwargs)
    finally:
        cl.close()


# ------------------------------------------------- the calling rank


def get_rank(group=None):
    """The calling rank's index in group (default: its default group, see
    init); -1 if it is not a member."""
    from hccn.group import resolve
    return resolve(group, "get_rank").rank()


def get_world_size(group=None):
    """The number of ranks in group (default: the default group)."""
    from hccn.group import resolve
    return resolve(group, "get_world_size").size()


def device_id():
    """The calling rank's NPU index in the cluster (its world rank)."""
    return _state.current("device_id").device


def node():
    """The calling rank's node (server) index."""
    return lib().hccn_node(_state.current("node").ctx)


def local_rank():
    """The calling rank's index inside its node."""
    return lib().hccn_local_rank(_state.current("local_rank").ctx)


def mem_info():
    """The calling rank's arena: dict of total, used, largest_free and
    allocations (bytes, bytes, bytes, count)."""
    info = MemInfo()
    check(lib().hccn_mem_info(_state.current("mem_info").ctx,
                              ctypes.byref(info)), "hccn_mem_info")
    return {name: getattr(info, name) for name, _ in MemInfo._fields_}


# ------------------------------------------------------ simulated time


def time():
    """The calling rank's simulated clock, in seconds since the run began."""
    return lib().hccn_time(_state.current("time").ctx)


def last_duration():
    """Simulated seconds of the rank's last blocking operation (or of the
    last future it waited for)."""
    return lib().hccn_last_duration(_state.current("last_duration").ctx)


def compute(seconds):
    """Advances the rank's compute timeline by simulated seconds; async
    operations posted before keep running meanwhile (overlap)."""
    check(lib().hccn_compute(_state.current("compute").ctx, float(seconds)),
          "hccn_compute")


def compute_flops(flops, dtype=None):
    """compute() for a FLOP count at the NPU's peak_TFLOPS: its fp16 rate
    (or its one number), or with dtype ("float32", "bfloat16", a numpy
    dtype, ...) that dtype's rate."""
    ctx = _state.current("compute_flops").ctx
    if dtype is None:
        check(lib().hccn_compute_flops(ctx, float(flops)),
              "hccn_compute_flops")
        return
    code = dtypes.code_of(dtype)
    check(lib().hccn_compute_flops_dtype(ctx, float(flops), code),
          "hccn_compute_flops_dtype")


# ---------------------------------------------- communication summary

# hccn_coll_t, in include/hccn/hccn_sim.h's order.
_COLL_KINDS = ("allreduce", "reduce_scatter", "allgather", "broadcast",
               "reduce", "alltoall", "scatter", "gather", "barrier",
               "alltoallv", "allgatherv", "reduce_scatterv")


def summary_mark():
    """Starts (or restarts) the calling rank's communication summary at its
    clock now (docs/sim_api.md); nothing is recorded before the first."""
    check(lib().hccn_summary_mark(_state.current("summary_mark").ctx),
          "hccn_summary_mark")


def summary(group=None, kind=None):
    """The calling rank's communication since summary_mark(): a dict of
    ops, comm_s (time with an operation in flight), hidden_s (of it, time
    spent computing), exposed_s, compute_s, since_s and until_s (simulated
    seconds). group: one communicator (default: every one); kind: a
    collective's name ("allreduce", ...), "p2p", or None for all."""
    from hccn.group import resolve
    ctx = _state.current("summary").ctx
    comm = None
    if group is not None:
        comm = resolve(group, "summary")._handle("summary")
    if kind is None:
        code = -1
    elif kind == "p2p":
        code = -2
    elif kind in _COLL_KINDS:
        code = _COLL_KINDS.index(kind)
    else:
        raise InvalidArgumentError("summary: unknown kind %r (a collective's "
                                   "name, 'p2p' or None)" % (kind,))
    out = CommSummary(struct_size=ctypes.sizeof(CommSummary))
    check(lib().hccn_summary(ctx, comm, code, ctypes.byref(out)),
          "hccn_summary")
    return {name: getattr(out, name) for name, _ in CommSummary._fields_
            if name != "struct_size"}
