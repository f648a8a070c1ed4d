"""Concord started after mpi4py initialised MPI (MPI_THREAD_MULTIPLE by mpi4py's default):
init() must reuse MPI, agree with mpi4py on rank and size, run collectives, and leave MPI
usable for mpi4py after shutdown(). Run under mpirun with any number of ranks."""

import sys

from mpi4py import MPI

import torch

import concord.torch as hvd


def main():
    world = MPI.COMM_WORLD
    hvd.init()
    assert hvd.rank() == world.Get_rank(), f"rank {hvd.rank()} != mpi4py rank {world.Get_rank()}"
    assert hvd.size() == world.Get_size(), f"size {hvd.size()} != mpi4py size {world.Get_size()}"
    result = hvd.allreduce(torch.full((5,), float(hvd.rank())), name="mpi4py.x", op=hvd.Sum)
    expected = float(sum(range(hvd.size())))
    assert torch.equal(result, torch.full((5,), expected)), f"rank {hvd.rank()}: got {result}, want {expected}"
    hvd.shutdown()
    total = world.allreduce(1, op=MPI.SUM)  # MPI still usable by its owner
    assert total == world.Get_size(), f"rank {world.Get_rank()}: mpi4py allreduce gave {total}"
    print(f"rank {world.Get_rank()}: mpi4py interop ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
