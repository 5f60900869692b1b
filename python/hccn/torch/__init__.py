"""hccn.torch: a torch.distributed backend on the simulated cluster.

    import torch.distributed as dist
    import hccn.torch                       # registers backend "hccn"

    dist.init_process_group("hccn")         # under torchrun, one NPU a process
    dist.all_reduce(t)
    print(hccn.torch.last_duration(), hccn.torch.clock())

The rank's simulated time: last_duration() (the last operation waited
for), clock(), compute(seconds=None, flops=None) to declare compute that
communication overlaps, summary_mark() / summary() / step() for the
compute, exposed and hidden communication of a step. See docs/torch.md.
"""
import sys

try:
    import torch
    import torch.distributed as dist
except ImportError as e:       # pragma: no cover - depends on the host
    raise ImportError(
        "hccn.torch needs PyTorch, which this interpreter (%s) cannot "
        "import: use Debian's /usr/bin/python3 with python3-torch installed "
        "(apt-get install -y python3-torch)" % sys.executable) from e

import hccn
from hccn import _state
from hccn.torch import _backend, _service
from hccn.torch._convert import HccnBackendError
from hccn.torch._work import HccnFuture, HccnWork, Tracker
from hccn.torch.process_group import ProcessGroupHccn

__all__ = ["ProcessGroupHccn", "HccnBackendError", "HccnFuture", "HccnWork",
           "last_duration", "clock", "compute", "summary_mark", "summary",
           "step", "synchronize", "new_process_group", "world_group"]

BACKEND = "hccn"


def _register():
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _backend.create,
                                      extended_api=True)
    _backend.install_new_group_hook(dist)


_register()


def new_process_group():
    """A ProcessGroupHccn of the world made on the calling hccn rank thread
    (inside hccn.run), without init_process_group: N of them, one per
    rank thread, run the backend inside one process (used by the tests).
    """
    st = _state.current("hccn.torch.new_process_group")
    hccn.summary_mark()                   # step() works from the start
    tracker = Tracker(_service.InlineService())
    return ProcessGroupHccn(st.device, st.nranks, tracker, st.world)


def world_group():
    """The world ProcessGroupHccn of this process (init_process_group), or
    None."""
    return _backend.world_group()


def _service_here(what):
    """The service that runs the calling rank's hccn calls: the calling
    thread itself inside hccn.run, else the process's rank thread."""
    if _state.current_or_none() is not None:
        return _service.InlineService()
    pg = _backend.world_group()
    if pg is None:
        raise RuntimeError("hccn.torch.%s: no hccn process group; call "
                           "torch.distributed.init_process_group('hccn') "
                           "first" % what)
    return pg.service


def _call(what, fn, *args):
    return _service_here(what).call(fn, *args)


def last_duration():
    """Simulated seconds of the rank's last operation waited for (a
    blocking call's, or the last Work waited for)."""
    return _call("last_duration", hccn.last_duration)


def clock():
    """The rank's simulated clock, in seconds since the cluster began."""
    return _call("clock", hccn.time)


def compute(seconds=None, flops=None, dtype=None):
    """Declares compute of the rank: `seconds`, or `flops` at the NPU's
    peak rate (dtype: "float32", "bfloat16", ... for that dtype's rate).
    Operations posted before keep running meanwhile (overlap)."""
    if (seconds is None) == (flops is None):
        raise ValueError("hccn.torch.compute: give seconds or flops (one)")
    if seconds is not None:
        return _call("compute", hccn.compute, float(seconds))
    return _call("compute", hccn.compute_flops, float(flops), dtype)


def synchronize():
    """Completes every operation this process has posted and not yet
    waited for (for futures that only C++ code waits for)."""
    pg = _backend.world_group()
    if pg is not None:
        err = pg._tracker.flush()
        if err is not None:
            raise err


def summary_mark():
    """Starts the rank's communication summary at its clock now."""
    return _call("summary_mark", hccn.summary_mark)


def summary(kind=None):
    """The rank's communication since summary_mark(): dict of ops, comm_s,
    hidden_s, exposed_s, compute_s, since_s, until_s (simulated seconds);
    kind: one collective's name ("allreduce", ...), "p2p" or None."""
    return _call("summary", lambda: hccn.summary(kind=kind))


def step():
    """Ends a training step: completes pending operations, returns the
    summary since the last step() (or summary_mark()) with step_s (its
    simulated length) added, and starts the next step's summary."""
    synchronize()

    def end():
        s = hccn.summary()
        s["step_s"] = s["until_s"] - s["since_s"]
        hccn.summary_mark()
        return s
    return _call("step", end)
