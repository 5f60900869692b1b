"""Groups: Python handles on hccn communicators.

The world group holds every NPU of the cluster. new_group() (C
hccn_comm_create) and split_group() (C hccn_comm_split) make
sub-communicators; both are collective: every rank of the parent group
calls them alike. A rank outside the new group gets a Group that is not a
member (``is_member`` False, rank() -1); collectives on it raise.

Ranks passed to collectives (src, dst, peers) are ranks in the group the
call uses, as in HCCL and NCCL; ``g.ranks`` lists the members' world ranks
(device ids) when known.
"""
import ctypes

from hccn import _state
from hccn import dtypes
from hccn._lib import lib
from hccn.errors import InvalidArgumentError, check

SPLIT_NOCOLOR = -1


class Group:
    """One rank's handle on a communicator (or a non-member's placeholder).
    Only the rank that made it may use it."""

    def __init__(self, st, comm, ranks, name):
        self._st = st
        self.comm = comm            # c_void_p, or None for a non-member
        self.ranks = ranks          # world ranks of the members, or None
        self.name = name
        self._owned = False

    @classmethod
    def _world(cls, st):
        comm = ctypes.c_void_p(lib().hccn_comm_world(st.ctx))
        return cls(st, comm, list(range(st.nranks)), "world")

    @property
    def is_member(self):
        return self.comm is not None

    def rank(self):
        """The calling rank's index in the group, -1 if not a member."""
        return lib().hccn_comm_rank(self.comm) if self.comm is not None else -1

    def size(self):
        """Number of ranks in the group (-1 for a non-member whose group's
        membership is unknown)."""
        if self.comm is not None:
            return lib().hccn_comm_size(self.comm)
        return len(self.ranks) if self.ranks is not None else -1

    def set_algo(self, spec):
        """Forces an algorithm on this group, in HCCN_ALGO's grammar
        ("ring", "mesh", ...); None returns to the default selection.
        Every member sets it alike."""
        arg = spec.encode() if spec is not None else None
        check(lib().hccn_comm_set_algo(self._handle("set_algo"), arg),
              "hccn_comm_set_algo")

    def set_compression(self, dtype):
        """Sends fp32 allreduce/reduce_scatter/allgather data as fp16
        (np.float16) or bf16 ("bfloat16") on this group's links; None or
        False turns compression off. Every member sets it alike."""
        mode = dtypes.compression(dtype)
        if mode == dtypes.COMPRESS_DEFAULT:
            mode = dtypes.COMPRESS_NONE
        check(lib().hccn_comm_set_compression(self._handle("set_compression"),
                                              mode),
              "hccn_comm_set_compression")

    def destroy(self):
        """Frees this rank's handle (not the world's). Idempotent."""
        if self.name == "world":
            raise InvalidArgumentError("the world group cannot be destroyed")
        if self.comm is None or not self._owned:
            return
        comm, self.comm = self.comm, None
        if self in self._st.groups:
            self._st.groups.remove(self)
        check(lib().hccn_comm_destroy(comm), "hccn_comm_destroy")

    def _release(self):
        """destroy() at the end of a run, ignoring errors."""
        if self.comm is not None and self._owned:
            comm, self.comm = self.comm, None
            if lib().has("hccn_comm_destroy"):
                lib().hccn_comm_destroy(comm)

    def _handle(self, what):
        """The C communicator for a call by the owning rank."""
        st = _state.current(what)
        if st is not self._st:
            raise InvalidArgumentError(
                "hccn.%s: group %s belongs to another rank or run" %
                (what, self.name))
        if self.comm is None:
            raise InvalidArgumentError(
                "hccn.%s: rank %d is not a member of group %s (ranks %s)" %
                (what, st.device, self.name, self.ranks))
        return self.comm

    def __repr__(self):
        return "hccn.Group(%s, ranks=%s, rank=%d)" % (self.name, self.ranks,
                                                      self.rank())


def resolve(group, what):
    """The Group a call uses: group, or the calling rank's default group."""
    st = _state.current(what)
    g = st.default if group is None else group
    if not isinstance(g, Group):
        raise InvalidArgumentError("hccn.%s: group must be a hccn.Group "
                                   "(got %r)" % (what, group))
    return g


def _adopt(st, comm, ranks, name):
    g = Group(st, comm if comm.value else None, ranks, name)
    if g.comm is not None:
        g._owned = True
        st.groups.append(g)
    return g


def new_group(ranks, group=None):
    """A sub-communicator of the listed ranks of group (default: the world),
    in list order (C hccn_comm_create). Every rank of group calls it with
    the same list; the others get a non-member Group."""
    parent = resolve(group, "new_group")
    pcomm = parent._handle("new_group")
    ranks = [int(r) for r in ranks]
    n = parent.size()
    bad = [r for r in ranks if not 0 <= r < n]
    if bad or len(set(ranks)) != len(ranks) or not ranks:
        raise InvalidArgumentError(
            "hccn.new_group: ranks %s must be distinct ranks of the parent "
            "group, in [0, %d)" % (ranks, n))
    arr = (ctypes.c_int * len(ranks))(*ranks)
    out = ctypes.c_void_p()
    check(lib().hccn_comm_create(pcomm, arr, len(ranks), ctypes.byref(out)),
          "hccn_comm_create")
    world = ([parent.ranks[r] for r in ranks] if parent.ranks is not None
             else None)
    return _adopt(parent._st, out, world, "group%s" % (world or ranks,))


def split_group(color, key=None, group=None):
    """Splits group (default: the world) like NCCL's ncclCommSplit: ranks
    with the same color >= 0 form a group ordered by (key, parent rank);
    color None gives a non-member. Every rank of group calls it."""
    parent = resolve(group, "split_group")
    pcomm = parent._handle("split_group")
    c = SPLIT_NOCOLOR if color is None else int(color)
    if c < 0 and c != SPLIT_NOCOLOR:
        raise InvalidArgumentError("hccn.split_group: color must be >= 0 or "
                                   "None (got %d)" % c)
    k = parent.rank() if key is None else int(key)
    out = ctypes.c_void_p()
    check(lib().hccn_comm_split(pcomm, c, k, ctypes.byref(out)),
          "hccn_comm_split")
    return _adopt(parent._st, out, None, "split(color=%s)" % color)


def init(device_ids=None):
    """Selects the calling rank's context and its default group: the world,
    or the sub-group of the listed NPUs (device ids = world ranks) when
    device_ids is given, in which case every rank must call init alike.
    Returns the default group."""
    st = _state.current("init")
    if device_ids is None:
        st.default = st.world
        return st.default
    ids = [int(d) for d in device_ids]
    bad = [d for d in ids if not 0 <= d < st.nranks]
    if bad or len(set(ids)) != len(ids) or not ids:
        raise InvalidArgumentError(
            "hccn.init: device_ids %s must be distinct NPU indices in "
            "[0, %d) (the cluster has %d NPUs)" % (ids, st.nranks, st.nranks))
    if ids == list(range(st.nranks)):
        st.default = st.world
    else:
        st.default = new_group(ids, st.world)
    return st.default
