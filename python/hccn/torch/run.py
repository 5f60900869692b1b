"""A one-host launcher for torch programs on the hccn backend.

    /usr/bin/python3 -m hccn.torch.run --nproc_per_node 16 train.py ARGS...
    /usr/bin/python3 -m hccn.torch.run -n 4 -m package.module ARGS...

Starts N copies of the program with torchrun's environment (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
MASTER_PORT: a free port on 127.0.0.1), so init_process_group("hccn")
finds the job through env://. It waits for them, and when one fails it
stops the others (SIGTERM, then SIGKILL after --grace seconds) and exits
with the first failure's code (128 + signal for a signal); SIGINT or
SIGTERM to the launcher stops them all. The child
processes run the interpreter that runs the launcher.

This exists because Debian's torchrun (torch 1.13 on Python 3.11) fails at
start with its default flags; `torchrun --redirects 1 --tee 2 --log_dir DIR
--nproc_per_node N train.py` is the equivalent that works (docs/torch.md).
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(argv):
    p = argparse.ArgumentParser(
        prog="/usr/bin/python3 -m hccn.torch.run",
        description="Run N processes of a torch program (one simulated NPU "
        "each) on this host.")
    p.add_argument("-n", "--nproc_per_node", "--nproc-per-node", type=int,
                   required=True, help="number of processes (the world size)")
    p.add_argument("-m", "--module", action="store_true",
                   help="the program is a module name (python -m)")
    p.add_argument("--master_port", "--master-port", type=int, default=0,
                   help="rendezvous port (default: a free one)")
    p.add_argument("--grace", type=float, default=5.0,
                   help="seconds between SIGTERM and SIGKILL of the others "
                   "after a failure")
    p.add_argument("program", help="script path (or module with -m)")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.nproc_per_node < 1:
        p.error("--nproc_per_node must be at least 1")
    return a


def child_env(rank, world, port):
    env = dict(os.environ)
    env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
               LOCAL_WORLD_SIZE=str(world), GROUP_RANK="0",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               TORCHELASTIC_RUN_ID="hccn")
    return env


def start(a):
    port = a.master_port or free_port()
    cmd = [sys.executable] + (["-m"] if a.module else []) + \
        [a.program] + a.args
    return [subprocess.Popen(cmd, env=child_env(r, a.nproc_per_node, port))
            for r in range(a.nproc_per_node)]


def stop(procs, grace):
    """SIGTERM to the running ones, SIGKILL to those left after grace."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def exit_code(rc):
    return 128 - rc if rc < 0 else rc


def supervise(procs, grace):
    """Waits for every process; on the first failure stops the others.
    Returns the launcher's exit code."""
    while True:
        running = False
        for rank, p in enumerate(procs):
            rc = p.poll()
            if rc is None:
                running = True
            elif rc != 0:
                print("hccn.torch.run: rank %d exited with %s; stopping the "
                      "others" % (rank, rc if rc > 0 else
                                  "signal %d" % -rc), file=sys.stderr)
                stop(procs, grace)
                return exit_code(rc)
        if not running:
            return 0
        time.sleep(0.05)


class _Terminated(Exception):
    pass


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv=None):
    """Launches and supervises; SIGINT or SIGTERM to the launcher stops
    every process it started."""
    a = parse(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    procs = start(a)
    try:
        return supervise(procs, a.grace)
    except KeyboardInterrupt:
        stop(procs, a.grace)
        return 130
    except _Terminated:
        stop(procs, a.grace)
        return 143


if __name__ == "__main__":
    sys.exit(main())
