#!/usr/bin/python3
"""DDP training of a small MLP on synthetic data, on 16 simulated NPUs.

    /usr/bin/python3 examples/torch_ddp.py            # both topologies
    /usr/bin/python3 -m hccn.torch.run -n 16 examples/torch_ddp.py --worker

Without --worker the script launches itself twice with hccn.torch.run, one
process a rank: on configs/default.json and on a what-if copy of it with
half the NIC bandwidth. Each run trains for --steps steps, prints the loss
of every step and its simulated time (compute, exposed and hidden
communication), and checks that every rank ends with bit-identical
parameters. The model's real arithmetic is small; the compute declared to
the simulator is that of --sim-batch samples per rank (at the NPU's peak
FLOP rate), so that the allreduces of DDP's buckets overlap backward
compute as in a real job. --backend gloo runs the same training on torch's
gloo backend (no simulated time), for a wall-clock comparison.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

WIDTH = 512
LAYERS = 4


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", action="store_true",
                   help="be one rank (under a launcher)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--nproc", type=int, default=16,
                   help="processes (must match the topology's NPUs)")
    p.add_argument("--batch", type=int, default=32,
                   help="real samples per rank and step")
    p.add_argument("--sim-batch", type=int, default=65536,
                   help="samples per rank whose compute is simulated")
    p.add_argument("--backend", default="hccn", choices=["hccn", "gloo"])
    p.add_argument("--topology", default=None,
                   help="topology (default: configs/default.json and its "
                   "half-NIC what-if)")
    return p.parse_args()


# ------------------------------------------------------------ one rank


def model():
    import torch
    torch.manual_seed(0)
    layers = []
    for i in range(LAYERS):
        layers.append(torch.nn.Linear(WIDTH, WIDTH if i < LAYERS - 1 else 8))
        if i < LAYERS - 1:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def declare_compute(net, sim_batch, hccn_torch):
    """Declares each Linear's simulated compute: forward (2 flops per
    weight and sample) before it runs, backward (twice that) when autograd
    reaches it, so DDP's bucket allreduces overlap the rest of backward."""
    import torch

    def forward_hook(mod, inputs):
        hccn_torch.compute(flops=2.0 * sim_batch * mod.weight.numel())

    def backward_hook(mod, grad_in, grad_out):
        hccn_torch.compute(flops=4.0 * sim_batch * mod.weight.numel())
    for mod in net.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.register_forward_pre_hook(forward_hook)
            mod.register_full_backward_hook(backward_hook)


def worker(a):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    ht = None
    if a.backend == "hccn":
        import hccn.torch as ht
    dist.init_process_group(a.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    net = model()
    if ht is not None:
        declare_compute(net, a.sim_batch, ht)
    ddp = DDP(net, bucket_cap_mb=1)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    target = torch.nn.Linear(WIDTH, 8)
    wall = time.perf_counter()
    if ht is not None:
        ht.step()
    steps = []
    for s in range(a.steps):
        x = torch.randn(a.batch, WIDTH, generator=g)
        with torch.no_grad():
            y = target(x)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        avg = loss.detach().clone()
        dist.all_reduce(avg)
        step = ht.step() if ht is not None else {}
        step["loss"] = avg.item() / world
        steps.append(step)
        if rank == 0:
            report_step(s, step)
    wall = time.perf_counter() - wall
    identical = check_identical(net, world)
    if rank == 0:
        print(json.dumps({"steps": steps, "identical": identical,
                          "wall_s": wall}), flush=True)
    dist.destroy_process_group()
    return 0 if identical else 1


def report_step(s, step):
    line = "step %d  loss %.6f" % (s, step["loss"])
    if "step_s" in step:
        line += ("  simulated %.1f us (compute %.1f, comm exposed %.1f, "
                 "hidden %.1f)" % tuple(1e6 * step[k] for k in (
                     "step_s", "compute_s", "exposed_s", "hidden_s")))
    print(line, flush=True)


def check_identical(net, world):
    """True if every rank's parameters equal rank 0's, bit for bit."""
    import torch
    import torch.distributed as dist
    flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    mine = flat.view(torch.int32).to(torch.int64)
    lo, hi = mine.clone(), mine.clone()
    dist.all_reduce(lo, dist.ReduceOp.MIN)
    dist.all_reduce(hi, dist.ReduceOp.MAX)
    return bool(torch.equal(lo, hi))


# ------------------------------------------------------------- driver


def half_nic_topology(path):
    """A what-if copy of a topology with every NIC's bandwidth halved,
    written to a temporary file; returns its path."""
    with open(path) as f:
        topo = json.load(f)
    for nt in topo["node_types"]:
        if "nics" in nt:
            nt["nics"]["bw_GBps"] /= 2.0
    topo["name"] = topo.get("name", "topology") + "-half-nic"
    fd, out = tempfile.mkstemp(prefix="hccn-whatif-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(topo, f)
    return out


def launch(a, topology):
    """Runs the training in a.nproc processes; returns rank 0's report."""
    env = dict(os.environ)
    env["HCCN_TOPOLOGY"] = topology
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(HERE, "..", "python"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "hccn.torch.run", "-n", str(a.nproc),
           os.path.abspath(__file__), "--worker", "--steps", str(a.steps),
           "--batch", str(a.batch), "--sim-batch", str(a.sim_batch),
           "--backend", a.backend]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    sys.stdout.write("".join(l + "\n" for l in p.stdout.splitlines()
                             if not l.startswith("{")))
    if p.returncode != 0:
        raise SystemExit("torch_ddp: the run on %s failed (exit %d)"
                         % (topology, p.returncode))
    return json.loads([l for l in p.stdout.splitlines()
                       if l.startswith("{")][-1])


def driver(a):
    base = os.path.join(HERE, "..", "configs", "default.json")
    runs = [("default", a.topology or base)]
    whatif = None
    if a.topology is None and a.backend == "hccn":
        whatif = half_nic_topology(base)
        runs.append(("half NIC bandwidth", whatif))
    results = []
    try:
        for name, topo in runs:
            print("== %s (%s), %d ranks, backend %s"
                  % (name, os.path.basename(topo), a.nproc, a.backend))
            results.append((name, launch(a, topo)))
    finally:
        if whatif:
            os.unlink(whatif)
    for name, r in results:
        sim = [s["step_s"] for s in r["steps"] if "step_s" in s]
        mean = " simulated step %.1f us," % (1e6 * sum(sim) / len(sim)) \
            if sim else ""
        print("%-20s%s wall %.2f s for %d steps, parameters identical on "
              "all ranks: %s" % (name + ":", mean, r["wall_s"],
                                 len(r["steps"]), r["identical"]))
    return 0 if all(r["identical"] for _, r in results) else 1


def main():
    a = parse()
    return worker(a) if a.worker else driver(a)


if __name__ == "__main__":
    sys.exit(main())
