"""Shared setup of the torch.distributed backend tests: the default process group on the
``"concord"`` backend, started from a file:// store (its path chosen by rank 0 and
broadcast with Concord) under the MPI launcher that started the suite, and a Gloo group of
the same ranks to compare with.
"""

import os
import tempfile

import pytest
import torch.distributed as dist

import concord.torch as hvd


def init_concord_world():
    """``dist.init_process_group("concord", init_method="file://...", rank, world_size)``
    with MPI's rank and size (once per process)."""
    if dist.is_initialized():
        return
    path = os.path.join(tempfile.mkdtemp(prefix="concord-c10d-"), "store") if hvd.rank() == 0 else None
    path = hvd.broadcast_object(path, 0, name="c10d_store_path")
    dist.init_process_group("concord", init_method=f"file://{path}", rank=hvd.rank(), world_size=hvd.size())


@pytest.fixture(scope="module")
def world():
    """The default group (concord) and a Gloo group of every rank: ``(None, gloo_group)``."""
    init_concord_world()
    return None, dist.new_group(backend="gloo")


def where(what, **extra):
    """``rank R/N <what> k=v ...``, the start of every failure message."""
    details = " ".join(f"{k}={v}" for k, v in extra.items())
    return f"rank {dist.get_rank()}/{dist.get_world_size()} {what} {details}".rstrip()
