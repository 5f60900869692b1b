"""Loading libhccn and declaring its C functions for ctypes.

The library is found, in order, through the HCCN_LIB environment variable
(a path), next to an installed package (the path that _installed.py, which
the install writes, gives relative to this directory: a moved prefix still
works), at ../../build/libhccn.so relative to this package (a source-tree
build), and through the system loader (libhccn.so.0).

Functions declared in include/hccn/hccn.h but missing from the loaded
library (an older build) are left out; ``has(name)`` says which are there,
and calling a missing one raises UnsupportedError.
"""
import ctypes
import ctypes.util
import os
import threading

c_int_p = ctypes.POINTER(ctypes.c_int)
c_void_pp = ctypes.POINTER(ctypes.c_void_p)
c_double_p = ctypes.POINTER(ctypes.c_double)

RANK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


class ClusterOpts(ctypes.Structure):
    """hccn_cluster_opts_t."""
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("bind_threads", ctypes.c_int),
                ("timeout_s", ctypes.c_double),
                ("drive_bytes", ctypes.c_longlong),
                ("jitter_us", ctypes.c_int),
                ("proc_rank", ctypes.c_int),
                ("proc_world", ctypes.c_int),
                ("rendezvous", ctypes.c_char_p)]


class CollOpts(ctypes.Structure):
    """hccn_coll_opts_t."""
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("compress", ctypes.c_int),
                ("algo", ctypes.c_char_p)]


class MemInfo(ctypes.Structure):
    """hccn_mem_info_t."""
    _fields_ = [("total", ctypes.c_size_t),
                ("used", ctypes.c_size_t),
                ("largest_free", ctypes.c_size_t),
                ("allocations", ctypes.c_size_t)]


class CommSummary(ctypes.Structure):
    """hccn_comm_summary_t."""
    _fields_ = [("struct_size", ctypes.c_size_t),
                ("ops", ctypes.c_int),
                ("comm_s", ctypes.c_double),
                ("hidden_s", ctypes.c_double),
                ("exposed_s", ctypes.c_double),
                ("compute_s", ctypes.c_double),
                ("since_s", ctypes.c_double),
                ("until_s", ctypes.c_double)]


_P, _I, _Z, _D = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_double
_S = ctypes.c_char_p
_COLL_OPTS_P = ctypes.POINTER(CollOpts)

# name: (restype, argtypes). Statuses are plain ints (hccn_status_t).
_PROTOTYPES = {
    "hccn_status_name": (_S, [_I]),
    "hccn_strerror": (_S, [_I]),
    "hccn_last_error": (_S, []),
    "hccn_dtype_size": (_Z, [_I]),
    "hccn_dtype_name": (_S, [_I]),
    "hccn_redop_name": (_S, [_I]),
    "hccn_cluster_create": (_I, [_S, ctypes.POINTER(ClusterOpts), c_void_pp]),
    "hccn_cluster_create_json": (_I, [_S, _S, ctypes.POINTER(ClusterOpts),
                                      c_void_pp]),
    "hccn_cluster_destroy": (None, [_P]),
    "hccn_cluster_size": (_I, [_P]),
    "hccn_cluster_nodes": (_I, [_P]),
    "hccn_cluster_proc_rank": (_I, [_P]),
    "hccn_cluster_proc_world": (_I, [_P]),
    "hccn_cluster_rank_local": (_I, [_P, _I]),
    "hccn_cluster_run": (_I, [_P, RANK_FN, _P, c_int_p]),
    "hccn_rank": (_I, [_P]),
    "hccn_nranks": (_I, [_P]),
    "hccn_node": (_I, [_P]),
    "hccn_local_rank": (_I, [_P]),
    "hccn_malloc": (_I, [_P, _Z, c_void_pp]),
    "hccn_free": (_I, [_P, _P]),
    "hccn_mem_info": (_I, [_P, ctypes.POINTER(MemInfo)]),
    "hccn_time": (_D, [_P]),
    "hccn_last_duration": (_D, [_P]),
    "hccn_compute": (_I, [_P, _D]),
    "hccn_compute_flops": (_I, [_P, _D]),
    "hccn_compute_flops_dtype": (_I, [_P, _D, _I]),
    "hccn_comm_world": (_P, [_P]),
    "hccn_comm_rank": (_I, [_P]),
    "hccn_comm_size": (_I, [_P]),
    "hccn_comm_split": (_I, [_P, _I, _I, c_void_pp]),
    "hccn_comm_create": (_I, [_P, c_int_p, _I, c_void_pp]),
    "hccn_comm_destroy": (_I, [_P]),
    "hccn_comm_set_algo": (_I, [_P, _S]),
    "hccn_comm_set_compression": (_I, [_P, _I]),
    "hccn_send": (_I, [_P, _P, _Z, _I, _I]),
    "hccn_recv": (_I, [_P, _P, _Z, _I, _I]),
    "hccn_isend": (_I, [_P, _P, _Z, _I, _I, c_void_pp]),
    "hccn_irecv": (_I, [_P, _P, _Z, _I, _I, c_void_pp]),
    "hccn_wait": (_I, [_P]),
    "hccn_test": (_I, [_P, c_int_p]),
    "hccn_future_times": (_I, [_P, c_double_p, c_double_p]),
    "hccn_future_free": (_I, [_P]),
    "hccn_group_start": (_I, [_P]),
    "hccn_group_end": (_I, [_P]),
    "hccn_allreduce": (_I, [_P, _P, _P, _Z, _I, _I]),
    "hccn_reduce_scatter": (_I, [_P, _P, _P, _Z, _I, _I]),
    "hccn_allgather": (_I, [_P, _P, _P, _Z, _I]),
    "hccn_broadcast": (_I, [_P, _P, _P, _Z, _I, _I]),
    "hccn_reduce": (_I, [_P, _P, _P, _Z, _I, _I, _I]),
    "hccn_alltoall": (_I, [_P, _P, _P, _Z, _I]),
    "hccn_barrier": (_I, [_P]),
    "hccn_iallreduce": (_I, [_P, _P, _P, _Z, _I, _I, c_void_pp]),
    "hccn_ireduce_scatter": (_I, [_P, _P, _P, _Z, _I, _I, c_void_pp]),
    "hccn_iallgather": (_I, [_P, _P, _P, _Z, _I, c_void_pp]),
    "hccn_ibroadcast": (_I, [_P, _P, _P, _Z, _I, _I, c_void_pp]),
    "hccn_ireduce": (_I, [_P, _P, _P, _Z, _I, _I, _I, c_void_pp]),
    "hccn_ialltoall": (_I, [_P, _P, _P, _Z, _I, c_void_pp]),
    "hccn_ibarrier": (_I, [_P, c_void_pp]),
    "hccn_allreduce_opts": (_I, [_P, _P, _P, _Z, _I, _I, _COLL_OPTS_P,
                                 c_void_pp]),
    "hccn_reduce_scatter_opts": (_I, [_P, _P, _P, _Z, _I, _I, _COLL_OPTS_P,
                                      c_void_pp]),
    "hccn_allgather_opts": (_I, [_P, _P, _P, _Z, _I, _COLL_OPTS_P,
                                 c_void_pp]),
    "hccn_alltoallv": (_I, [_P, _P, _P, _P, _P, _P, _P, _I]),
    "hccn_ialltoallv": (_I, [_P, _P, _P, _P, _P, _P, _P, _I, c_void_pp]),
    "hccn_allgatherv": (_I, [_P, _P, _Z, _P, _P, _P, _I]),
    "hccn_iallgatherv": (_I, [_P, _P, _Z, _P, _P, _P, _I, c_void_pp]),
    "hccn_reduce_scatterv": (_I, [_P, _P, _P, _P, _I, _I]),
    "hccn_ireduce_scatterv": (_I, [_P, _P, _P, _P, _I, _I, c_void_pp]),
    "hccn_summary_mark": (_I, [_P]),
    "hccn_summary": (_I, [_P, _P, _I, ctypes.POINTER(CommSummary)]),
}


class _Missing:
    """Stands for a C function the loaded library does not export."""

    def __init__(self, name, path):
        self.name, self.path = name, path

    def __call__(self, *args):
        from hccn.errors import UnsupportedError
        raise UnsupportedError(
            "%s is not in %s (the library predates it; rebuild libhccn)"
            % (self.name, self.path))


class Library:
    """The loaded libhccn with every prototype declared (attribute per C
    function). Ordinary CDLL calls release the GIL while they run."""

    def __init__(self, path):
        self.path = path
        self.dll = ctypes.CDLL(path)
        self.missing = set()
        for name, (restype, argtypes) in _PROTOTYPES.items():
            try:
                fn = getattr(self.dll, name)
            except AttributeError:
                self.missing.add(name)
                setattr(self, name, _Missing(name, path))
                continue
            fn.restype, fn.argtypes = restype, argtypes
            setattr(self, name, fn)

    def has(self, name):
        return name in _PROTOTYPES and name not in self.missing

    def last_error(self):
        """hccn_last_error() of the calling thread, as str."""
        return self.hccn_last_error().decode("utf-8", "replace")


_lock = threading.Lock()
_library = None


def _candidates():
    env = os.environ.get("HCCN_LIB")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(here, "..", "..", "build", "libhccn.so")]
    try:
        from hccn._installed import LIBHCCN
        paths.insert(0, os.path.join(here, LIBHCCN))
    except ImportError:
        pass
    paths = [os.path.normpath(p) for p in paths if os.path.exists(p)]
    found = ctypes.util.find_library("hccn")
    paths += [found] if found else ["libhccn.so.0", "libhccn.so"]
    return paths, False


def lib():
    """The process's Library, loaded on first use. Raises OSError naming
    every place tried when libhccn cannot be loaded."""
    global _library
    with _lock:
        if _library is not None:
            return _library
        paths, from_env = _candidates()
        errors = []
        for p in paths:
            try:
                _library = Library(p)
                return _library
            except OSError as e:
                errors.append("%s: %s" % (p, e))
        hint = ("HCCN_LIB=%s cannot be loaded" % paths[0] if from_env else
                "set HCCN_LIB to the path of libhccn.so, or build it in "
                "build/ of the source tree")
        raise OSError("hccn: cannot load libhccn (%s); tried: %s"
                      % (hint, "; ".join(errors)))


def has(name):
    """True if the loaded libhccn exports the C function name."""
    return lib().has(name)
