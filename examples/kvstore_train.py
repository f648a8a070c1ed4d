#!/usr/bin/env python3
"""Data-parallel training with the KVStore API (MXNet style) on scikit-learn's digits.

A two-layer MLP in PyTorch; every parameter is one KVStore key. Rank 0's initial weights
reach every rank through ``init``; each step every rank computes gradients on its own
shard, ``push``es them (summed across ranks), ``pull``s the sum and applies SGD with the
average. The KVStore design is chosen with ``--type`` (funneled, concurrent, depchain;
docs/architecture.md, "KVStore"). Rank 0 prints loss and test accuracy per epoch; at the
end every rank checks its parameters are bit-identical to rank 0's and exits non-zero if
not (or if the accuracy is below ``--min-accuracy``).

    mpirun -np 4 python3 examples/kvstore_train.py --type depchain
    python3 examples/kvstore_train.py                    # one process, no mpirun
"""

import argparse
import sys

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from concord.kvstore import KVStore


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--type", default="depchain", choices=["funneled", "concurrent", "depchain"])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--min-accuracy", type=float, default=0.0)
    return parser.parse_args()


def main():
    args = parse_args()
    kv = KVStore(args.type, communicators=2, outstanding=4)
    rank, size = kv.rank, kv.num_workers
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0, stratify=y)
    x_shard, y_shard = x_train[rank::size], y_train[rank::size]

    torch.manual_seed(rank)  # different on every rank: init() must make them equal
    model = torch.nn.Sequential(torch.nn.Linear(64, args.hidden), torch.nn.ReLU(), torch.nn.Linear(args.hidden, 10))
    params = list(model.parameters())
    with torch.no_grad():
        for key, p in enumerate(params):
            kv.init(key, p.data)
            kv.pull(key, p.data)  # rank 0's initial value
    summed = [torch.zeros_like(p) for p in params]
    steps = (len(x_shard) + args.batch_size - 1) // args.batch_size
    for epoch in range(args.epochs):
        order = torch.randperm(len(x_shard), generator=torch.Generator().manual_seed(epoch * size + rank))
        for step in range(steps):
            batch = order[step * args.batch_size:(step + 1) * args.batch_size]
            model.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x_shard[batch]), y_shard[batch])
            loss.backward()
            for key in reversed(range(len(params))):  # backward order, as gradients become ready
                kv.push(key, params[key].grad)
            with torch.no_grad():
                for key, p in enumerate(params):
                    kv.pull(key, summed[key])
                    p -= args.lr / size * summed[key]
        with torch.no_grad():
            accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
        if rank == 0:
            print(f"epoch {epoch + 1:2d}  loss {loss.item():.4f}  test accuracy {accuracy:.3f}  ({args.type}, {size} ranks)")

    # Bit-identical parameters: rank 0's pushed as the only non-zero contribution.
    ok = True
    for key, p in enumerate(params):
        contribution = p.detach().clone() if rank == 0 else torch.zeros_like(p)
        kv.push(key, contribution)
        kv.pull(key, summed[key])
        ok &= bool(torch.equal(summed[key], p.detach()))
    kv.close()
    if not ok:
        print(f"rank {rank}: parameters differ from rank 0's", file=sys.stderr)
        return 1
    if accuracy < args.min_accuracy:
        print(f"rank {rank}: test accuracy {accuracy:.3f} below {args.min_accuracy}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
