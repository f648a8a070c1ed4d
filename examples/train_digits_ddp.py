#!/usr/bin/env python3
"""The digits MLP of train_digits.py trained with PyTorch's DistributedDataParallel on the
torch.distributed backend named by ``--backend``: ``gloo`` or ``concord`` (Concord's
runtime: ``import concord.torch`` registers it), from the same script.

Each rank trains on its own shard; DDP averages the gradients (bucketed allreduce) and
broadcasts rank 0's initial parameters. At the end every rank checks its parameters are
bit-identical to every other rank's and the script exits non-zero if not (or if the test
accuracy is below ``--min-accuracy``). ``--compare`` trains on both backends in one launch
(the default group on concord, a Gloo group of the same ranks beside it), from the same
initial parameters and batches, and prints both loss curves' largest difference.

    scripts/mpirun.sh -np 4 python3 examples/train_digits_ddp.py --backend concord
    scripts/mpirun.sh -np 4 python3 examples/train_digits_ddp.py --backend gloo
    scripts/mpirun.sh -np 2 python3 examples/train_digits_ddp.py --compare

The rank and world size come from the MPI launcher (``OMPI_COMM_WORLD_RANK`` / ``_SIZE``,
``PMI_RANK`` / ``PMI_SIZE``) or from torchrun's ``RANK`` / ``WORLD_SIZE``; the store is
``env://`` (``MASTER_ADDR``, default 127.0.0.1, and ``MASTER_PORT``, default ``--port``).
Under torchrun (no MPI launcher) the concord backend needs Concord's store transport
(docs/torch_distributed.md); Gloo runs there as usual.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import concord.torch  # noqa: F401  registers the "concord" backend
from train_digits import accuracy, load_data, make_model


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["gloo", "concord"], default="concord")
    parser.add_argument("--compare", action="store_true", help="train on concord and on gloo and compare")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate (of the averaged gradient)")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--port", type=int, default=29511, help="MASTER_PORT when the environment has none")
    parser.add_argument("--min-accuracy", type=float, default=0.0)
    return parser.parse_args()


def launcher_rank_and_size():
    """(rank, world size) from the MPI launcher's or torchrun's environment; (0, 1) alone."""
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                               ("RANK", "WORLD_SIZE")):
        if rank_var in os.environ and size_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def train(args, data, group):
    """DDP training on ``group`` (None: the default group); returns (losses per step,
    test accuracy, flat parameters, samples/s)."""
    x_train, x_test, y_train, y_test = data
    rank, size = dist.get_rank(), dist.get_world_size()
    x_shard, y_shard = x_train[rank::size], y_train[rank::size]
    torch.manual_seed(args.seed)
    model = make_model(args.hidden)
    ddp = DDP(model, process_group=group)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    steps = len(x_train) // size // args.batch_size  # the same on every rank
    generator = torch.Generator().manual_seed(args.seed + rank)
    losses, start = [], time.perf_counter()
    for _ in range(args.epochs):
        order = torch.randperm(len(x_shard), generator=generator)
        for step in range(steps):
            index = order[step * args.batch_size:(step + 1) * args.batch_size]
            loss = loss_fn(ddp(x_shard[index]), y_shard[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    rate = args.epochs * steps * args.batch_size * size / (time.perf_counter() - start)
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    return losses, accuracy(model, x_test, y_test), params, rate


def identical_on_all_ranks(params):
    """True on every rank iff ``params`` is bit-identical on every rank."""
    gathered = [torch.empty_like(params) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, params)
    return all(torch.equal(other, params) for other in gathered)


def main():
    args = parse_args()
    rank, size = launcher_rank_and_size()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    backend = "concord" if args.compare else args.backend
    dist.init_process_group(backend, init_method="env://", rank=rank, world_size=size)
    data = load_data(args.seed)
    runs = {backend: None}
    if args.compare:
        runs["gloo"] = dist.new_group(backend="gloo")
    results = {name: train(args, data, group) for name, group in runs.items()}
    status = 0
    for name, (losses, final_accuracy, params, rate) in results.items():
        identical = identical_on_all_ranks(params)
        if rank == 0:
            print(f"{name}: final loss {losses[-1]:.4f}, test accuracy {final_accuracy:.4f}, {rate:.0f} samples/s; "
                  f"parameters bit-identical on all {size} ranks: {identical}")
        if not identical:
            status = 1
        elif final_accuracy < args.min_accuracy and not status:
            status = 2
    if args.compare and rank == 0:
        difference = max(abs(a - b) for a, b in zip(results["concord"][0], results["gloo"][0]))
        print(f"largest per-step loss difference concord vs gloo: {difference:.3g}")
    dist.destroy_process_group()
    sys.exit(status)


if __name__ == "__main__":
    main()
