"""Helpers shared by the torch benchmarks in tools/ (iteration_bench.py, latency_bench.py):
rank and size from the MPI launcher's environment, and the slowest rank's value."""

import os

import torch
import torch.distributed as dist


def launched_by_mpi():
    """True under an MPI launcher (Open MPI's or a PMI one): mpi4py then joins the job's
    world; elsewhere (torchrun, concord-run --launcher local) it would be a world of one."""
    return "OMPI_COMM_WORLD_RANK" in os.environ or "PMI_RANK" in os.environ


def launcher_rank_size():
    """(rank, size) from the launcher's environment: an MPI launcher's (Open MPI, PMI) first,
    then RANK/WORLD_SIZE (torchrun, concord-run --launcher local); (0, 1) without one."""
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                               ("RANK", "WORLD_SIZE")):
        if rank_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def init_gloo(port):
    """Initialises torch.distributed on Gloo over 127.0.0.1:`port` (unless MASTER_ADDR/PORT are
    set) with the launcher's rank and size; returns (rank, size)."""
    rank, size = launcher_rank_size()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=size)
    return rank, size


def slowest(seconds):
    """The largest of every rank's value (Gloo allreduce max); needs an initialised process group."""
    value = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return value.item()
