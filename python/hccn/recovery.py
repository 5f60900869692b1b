"""Recovery after a failure (docs/faults.md, "Recovery"), in the manner of
MPI's ULFM: revoke a group, agree on a flag among its survivors, shrink it
to them, grow it by spare ranks.

    try:
        hccn.allreduce(grad, group=g)
    except (hccn.RemoteError, hccn.RevokedError):
        hccn.revoke(g)
        g = hccn.shrink(g)      # the survivors, in g's order

A rank whose NPU failed gets hccn.FaultError from these calls.
"""
import ctypes

from hccn import _state
from hccn._lib import lib
from hccn.errors import InvalidArgumentError, check
from hccn.group import _adopt, resolve


def revoke(group=None):
    """Every pending and later operation on group (default: the default
    group) fails at once on every rank with hccn.RevokedError."""
    g = resolve(group, "revoke")
    check(lib().hccn_comm_revoke(g._handle("revoke")), "hccn_comm_revoke")


def agree(flag, group=None):
    """Fault-tolerant agreement: the bitwise AND of the survivors' int
    flags, the same on every survivor."""
    g = resolve(group, "agree")
    v = ctypes.c_int(int(flag))
    check(lib().hccn_comm_agree(g._handle("agree"), ctypes.byref(v)),
          "hccn_comm_agree")
    return v.value


def failed_ranks(group=None):
    """The ranks of group that the calling rank's last agree, shrink or
    grow on it found failed, in increasing order."""
    g = resolve(group, "failed_ranks")
    comm = g._handle("failed_ranks")
    n = ctypes.c_int()
    size = max(g.size(), 1)
    arr = (ctypes.c_int * size)()
    check(lib().hccn_comm_failed(comm, arr, size, ctypes.byref(n)),
          "hccn_comm_failed")
    return list(arr[:n.value])


def shrink(group=None):
    """A new Group of group's survivors, in group's order (C
    hccn_comm_shrink); group itself is left as it is."""
    g = resolve(group, "shrink")
    out = ctypes.c_void_p()
    check(lib().hccn_comm_shrink(g._handle("shrink"), ctypes.byref(out)),
          "hccn_comm_shrink")
    dead = set(failed_ranks(g))
    world = ([w for i, w in enumerate(g.ranks) if i not in dead]
             if g.ranks is not None else None)
    return _adopt(g._st, out, world, "shrunk%s" % (world,))


def grow(ranks, group=None, join=False):
    """A new Group of group's members followed by the listed world ranks
    (C hccn_comm_grow). Every member of group calls it; each listed rank
    calls it with join=True (and no group)."""
    ranks = [int(r) for r in ranks]
    arr = (ctypes.c_int * max(len(ranks), 1))(*ranks)
    out = ctypes.c_void_p()
    if join:
        st = _state.current("grow")
        if group is not None:
            raise InvalidArgumentError("hccn.grow: a joining rank passes no "
                                       "group")
        check(lib().hccn_comm_grow(None, arr, len(ranks), ctypes.byref(out)),
              "hccn_comm_grow")
        return _adopt(st, out, None, "grown")
    g = resolve(group, "grow")
    check(lib().hccn_comm_grow(g._handle("grow"), arr, len(ranks),
                               ctypes.byref(out)), "hccn_comm_grow")
    world = g.ranks + ranks if g.ranks is not None else None
    return _adopt(g._st, out, world, "grown%s" % (world,))
