"""The "hccn" backend of torch.distributed: making process groups.

init_process_group("hccn") calls create() once for the world: process
rank 0 makes a rendezvous directory and publishes it through torch's
Store; every process then makes hccn.Cluster(topology, proc_rank=rank,
proc_world=world, rendezvous=dir), which joins the processes into one
simulated cluster (docs/processes.md), and starts the rank thread. The
topology comes from pg_options (a path, name, JSON text or dict, or an
object with a ``topology`` attribute), else HCCN_TOPOLOGY, else
configs/default.json. The world size must equal its NPU count.

new_group() calls create() only in the member processes, but hccn makes a
sub-communicator with every rank of the world taking part; so
``import hccn.torch`` wraps torch.distributed.new_group to have the other
processes take part too (as non-members).
"""
import atexit
import ctypes
import os
import shutil
import tempfile

import hccn
from hccn._lib import lib
from hccn.cluster import _find_topology
from hccn.errors import check
from hccn.torch import _service
from hccn.torch._work import Tracker
from hccn.torch.process_group import ProcessGroupHccn

RENDEZVOUS_KEY = "hccn_rendezvous"

_world = None          # the world ProcessGroupHccn of this process


def topology_of(pg_options):
    """The topology a job uses: pg_options, HCCN_TOPOLOGY, or the
    default configuration (found in the source tree or installed)."""
    topo = getattr(pg_options, "topology", pg_options)
    if isinstance(pg_options, dict) and "topology" in pg_options:
        topo = pg_options["topology"]
    if topo is None:
        topo = os.environ.get("HCCN_TOPOLOGY") or hccn.DEFAULT_TOPOLOGY
    if isinstance(topo, (str, os.PathLike)) and not \
            str(topo).lstrip().startswith("{"):
        path = _find_topology(topo)
        if not os.path.exists(path) and topo == hccn.DEFAULT_TOPOLOGY:
            path = "default"        # the installed configs, by name
        return path
    return topo


def npu_count(topology):
    """The number of NPUs of a topology (path, name, JSON text or dict);
    raises the binding's error when it does not load."""
    import json
    L = lib()
    load, load_json = L.dll.hccn_topo_load, L.dll.hccn_topo_load_json
    load.restype = load_json.restype = ctypes.c_int
    load.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int,
                     ctypes.POINTER(ctypes.c_void_p)]
    load_json.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                          ctypes.POINTER(ctypes.c_void_p)]
    L.dll.hccn_topo_npus.restype = ctypes.c_int
    L.dll.hccn_topo_npus.argtypes = [ctypes.c_void_p]
    L.dll.hccn_topo_free.argtypes = [ctypes.c_void_p]
    out = ctypes.c_void_p()
    if isinstance(topology, dict):
        topology = json.dumps(topology)
    if topology.lstrip().startswith("{"):
        rc = load_json(topology.encode(), b"<topology>", ctypes.byref(out))
    else:
        rc = load(os.fspath(topology).encode(), None, 0, ctypes.byref(out))
    check(rc, "hccn_topo_load")
    try:
        return L.dll.hccn_topo_npus(out)
    finally:
        L.dll.hccn_topo_free(out)


def _describe(topology):
    return topology if isinstance(topology, str) and len(topology) < 200 \
        else "<topology text>"


def _rendezvous(store, rank):
    """The rendezvous directory: made by rank 0, read by the others."""
    if rank == 0:
        path = tempfile.mkdtemp(prefix="hccn-torch-")
        store.set(RENDEZVOUS_KEY, path)
        atexit.register(shutil.rmtree, path, True)
        return path
    return store.get(RENDEZVOUS_KEY).decode()


def _make_cluster(topology, rank, world, store):
    if world == 1:
        return hccn.Cluster(topology)
    path = _rendezvous(store, rank)
    try:
        return hccn.Cluster(topology, proc_rank=rank, proc_world=world,
                            rendezvous=path)
    except TypeError as e:
        raise RuntimeError(
            "hccn backend: this hccn build cannot run one cluster across "
            "several processes (Cluster has no proc_rank): %s" % e) from e


def create_world(store, rank, world, pg_options):
    """The world process group of this process (init_process_group)."""
    global _world
    topology = topology_of(pg_options)
    given = getattr(pg_options, "topology", pg_options)
    if isinstance(pg_options, dict):
        given = pg_options.get("topology")
    given = given or os.environ.get("HCCN_TOPOLOGY") or topology
    npus = npu_count(topology)
    if npus != world:
        raise RuntimeError(
            "hccn backend: the world size %d (processes) does not match the "
            "topology %s, which has %d NPUs; one process drives one NPU: "
            "launch %d processes or choose a topology (HCCN_TOPOLOGY or "
            "pg_options) of %d NPUs" % (world, _describe(given), npus,
                                        npus, world))
    if _world is not None:
        _world.service.close()
    service = _service.ThreadService(_make_cluster(topology, rank, world,
                                                   store))
    atexit.register(service.close)
    tracker = Tracker(service)
    group = service.call(lambda: service.state.world)
    service.call(hccn.summary_mark)       # step() works from the start
    _world = ProcessGroupHccn(rank, world, tracker, group)
    return _world


def create(opts, pg_options=None):
    """torch's creator (extended API): the world group, or a new_group's
    sub-group for a member process."""
    ranks = list(opts.global_ranks_in_group)
    if not ranks or _world is None:
        return create_world(opts.store, opts.group_rank, opts.group_size,
                            pg_options)
    return sub_group(_world, ranks)


def sub_group(parent, ranks):
    """The sub-group of world ranks `ranks` (sorted, as torch numbers a
    group's ranks); every process of parent calls it. Returns a
    ProcessGroupHccn for members, None for the others."""
    ranks = sorted(int(r) for r in ranks)
    pg_group = parent._group
    group = parent.service.call(lambda: hccn.new_group(ranks, pg_group))
    if not group.is_member:
        return None
    return ProcessGroupHccn(ranks.index(parent._rank), len(ranks),
                            parent._tracker, group)


def world_group():
    """The world ProcessGroupHccn of this process, or None."""
    return _world


def install_new_group_hook(dist):
    """Wraps dist.new_group so that non-member processes take part in the
    hccn sub-communicator's creation (members do it in create())."""
    c10d = dist.distributed_c10d
    original = c10d.new_group
    if getattr(original, "_hccn_hook", False):
        return

    def new_group(ranks=None, *args, **kwargs):
        # Before torch's new_group: it ends in a store barrier that the
        # members reach only once their hccn_comm_create has returned.
        if _world is not None and ranks is not None and \
                _world._rank not in ranks and _uses_hccn(c10d, args, kwargs):
            sub_group(_world, ranks)
        return original(ranks, *args, **kwargs)
    new_group._hccn_hook = True
    new_group.__doc__ = original.__doc__
    c10d.new_group = new_group
    dist.new_group = new_group


def _uses_hccn(c10d, args, kwargs):
    backend = kwargs.get("backend", args[1] if len(args) > 1 else None)
    if backend is None:
        backend = c10d.get_backend()
    return str(backend).lower() == "hccn"
