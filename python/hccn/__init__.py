"""hccn: Python binding of the hccn simulated-NPU collective runtime.

    import numpy as np
    import hccn

    def main():
        hccn.init()
        t = hccn.Tensor(np.full(4, hccn.get_rank(), np.float32))
        hccn.allreduce(t)
        return t.cpu().numpy()

    print(hccn.run(main, topology="configs/laptop-4.json"))

See docs/python.md for the whole API.
"""
import sys

try:
    import numpy  # noqa: F401
except ImportError as e:
    raise ImportError(
        "hccn needs numpy, which this interpreter (%s) cannot import: use "
        "Debian's /usr/bin/python3 (apt-get install -y python3-numpy)"
        % sys.executable) from e

from hccn._lib import has  # noqa: E402
from hccn.cluster import summary, summary_mark  # noqa: E402
from hccn.cluster import (DEFAULT_TOPOLOGY, Cluster, compute, compute_flops,
                          device_id, get_rank, get_world_size, last_duration,
                          local_rank, mem_info, node, run, time)
from hccn.collectives import (Future, allgather, allgatherv, allreduce,
                              alltoall, alltoallv, barrier, broadcast,
                              group_end, group_start, grouped, irecv, isend,
                              recv, reduce, reduce_scatter, reduce_scatterv,
                              send)
from hccn.dtypes import BFLOAT16, ReduceOp, from_bfloat16, to_bfloat16
from hccn.errors import (AbortedError, FaultError, HccnError, HccnIOError,
                         HccnTimeoutError, InProgressError, InternalError,
                         InvalidArgumentError, MismatchError,
                         OutOfMemoryError, RemoteError, RevokedError,
                         TopologyError, UnsupportedError)
from hccn.group import Group, init, new_group, split_group
from hccn.recovery import agree, failed_ranks, grow, revoke, shrink
from hccn.tensor import Tensor, empty, zeros

__all__ = [
    "has", "DEFAULT_TOPOLOGY", "Cluster", "run", "compute", "compute_flops",
    "device_id", "get_rank", "get_world_size", "last_duration", "local_rank",
    "mem_info", "node", "time", "Future", "allgather", "allreduce",
    "alltoall", "barrier", "broadcast", "group_end", "group_start",
    "grouped", "irecv", "isend", "recv", "reduce", "reduce_scatter", "send",
    "alltoallv", "allgatherv", "reduce_scatterv",
    "BFLOAT16", "ReduceOp", "from_bfloat16", "to_bfloat16", "AbortedError",
    "FaultError", "HccnError", "HccnIOError", "HccnTimeoutError",
    "InProgressError", "InternalError", "InvalidArgumentError",
    "MismatchError", "OutOfMemoryError", "RemoteError", "TopologyError",
    "UnsupportedError", "Group", "init", "new_group", "split_group",
    "Tensor", "empty", "zeros", "all_reduce", "all_gather", "all_to_all",
    "summary", "summary_mark", "RevokedError", "revoke", "agree",
    "failed_ranks", "shrink", "grow",
]

# torch.distributed spellings.
all_reduce = allreduce
all_gather = allgather
all_to_all = alltoall

__version__ = "0.1.0"
