"""The calling rank's state: which NPU thread we are on, its context, its
default group, and what it owns (tensors, futures, sub-communicators).

hccn.run() calls the user's function on every simulated NPU thread through
a ctypes callback; the callback puts a RankState in a threading.local so
module-level calls (hccn.allreduce(...)) find their rank's context. A
RankState is used only by its own thread, except Tensor.__del__, which may
run on any thread (the C arena is locked).
"""
import ctypes
import threading
import weakref

from hccn._lib import lib
from hccn.errors import InvalidArgumentError

_tls = threading.local()


class RankState:
    """One rank's view of a run: the C context and what the rank created.
    close() releases all of it when the rank function returns."""

    def __init__(self, cluster, ctx):
        L = lib()
        self.cluster = cluster
        self.ctx = ctypes.c_void_p(ctx)
        self.device = L.hccn_rank(self.ctx)
        self.nranks = L.hccn_nranks(self.ctx)
        self.alive = True
        self.tensors = weakref.WeakValueDictionary()  # id -> live Tensor
        self.futures = []          # posted, not waited
        self.groups = []           # sub-communicators to destroy
        from hccn.group import Group
        self.world = Group._world(self)
        self.default = self.world

    def close(self):
        """Waits for unfinished futures, destroys this rank's
        sub-communicator handles and frees its device tensors. Errors here
        are not raised: the run already reports the rank's outcome."""
        for fut in list(self.futures):
            fut._finish(raise_error=False)
        for g in reversed(self.groups):
            g._release()
        for t in list(self.tensors.values()):
            t._release()
        self.alive = False


def current(what):
    """The calling thread's RankState; raises InvalidArgumentError naming
    the API function `what` when called outside a rank function."""
    st = getattr(_tls, "state", None)
    if st is None:
        raise InvalidArgumentError(
            "hccn.%s: not on a simulated NPU thread; call it inside the "
            "function passed to hccn.run()" % what)
    return st


def current_or_none():
    return getattr(_tls, "state", None)


def enter(st):
    _tls.state = st


def leave():
    _tls.state = None
