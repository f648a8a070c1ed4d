#!/usr/bin/env python3
"""Elastic data-parallel training of the digits MLP (examples/train_digits.py's model and
data) with Horovod's elastic API: the job survives lost workers and grows when hosts are
added, continuing from the last commit.

    concord-run -np 4 --min-np 2 --max-np 4 python3 examples/train_digits_elastic.py
    concord-run -np 3 --min-np 2 --max-np 4 --host-discovery-script ./hosts.sh \\
        python3 examples/train_digits_elastic.py

The state (model, optimizer, sampler, epoch, batch) is committed every ``--commit-every``
steps and at the end of every epoch. The ElasticSampler re-shards the epoch's remaining
samples over each new world, and the learning rate follows the world size (a reset
callback). Rank 0 prints one line per epoch and one per new world ("world G: N ranks ...,
first step after T s"). At the end every rank checks that its parameters are
bit-identical to rank 0's, and the script exits non-zero if they are not or if the test
accuracy is below ``--min-accuracy``.

``--fail SLOT@STEP[/SIGNAL]`` (repeatable) is a fault drill: the worker in that slot
(``localhost:1``; ``rankR`` under torchrun, first attempt only) sends itself SIGNAL (KILL
by default; STOP hangs it) once its global step reaches STEP, or, with ``STEP`` =
``reset``, during its first reset.

Under torchrun (``--nnodes=MIN:MAX --max_restarts=K``), whose agent restarts every
worker after a failure, ``--checkpoint PATH`` makes rank 0 write the committed state to
PATH at each commit and every worker resume from it at start:

    python3 -m torch.distributed.run --redirects 1 --tee 1 --nnodes=1:2 --nproc_per_node=2 \
        --max_restarts=3 examples/train_digits_elastic.py --checkpoint /tmp/digits.pt
"""

import argparse
import os
import signal
import sys
import time

import torch

import concord.torch as hvd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_digits import accuracy, load_data, make_model, parameters_match_root  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate of one rank; scaled by size")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--commit-every", type=int, default=10, help="steps between commits")
    parser.add_argument("--step-delay", type=float, default=0.0,
                        help="seconds each step sleeps (stretches a short job so that a drill can act)")
    parser.add_argument("--min-accuracy", type=float, default=0.0)
    parser.add_argument("--fail", action="append", default=[], metavar="SLOT@STEP[/SIGNAL]")
    parser.add_argument("--checkpoint", help="write the committed state here (rank 0) and resume from it")
    return parser.parse_args()


def drills(specs):
    """This worker's drills: [(step or 'reset', signal, slot)]."""
    slot = os.environ.get("CONCORD_ELASTIC_SLOT")
    if slot is None and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
        slot = f"rank{os.environ.get('RANK', '0')}"  # torchrun: the first attempt only
    mine = []
    for spec in specs:
        where, _, rest = spec.partition("@")
        step, _, name = rest.partition("/")
        if where == slot:
            mine.append((step if step == "reset" else int(step), getattr(signal, "SIG" + (name or "KILL")), slot))
    return mine


def fire(drill):
    print(f"drill: {drill[2]} (rank {hvd.rank()}) sends itself "
          f"{drill[1].name} at {time.time():.3f}", file=sys.stderr, flush=True)
    os.kill(os.getpid(), drill[1])


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    x_train, x_test, y_train, y_test = load_data(args.seed)
    model = make_model(args.hidden)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(), momentum=0.9)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    sampler = hvd.elastic.ElasticSampler(range(len(x_train)), shuffle=True, seed=args.seed)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, step=0)
    my_drills = drills(args.fail)
    world = {"reset_at": None, "commit_seconds": []}

    def on_reset():
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()
        world["reset_at"] = time.time()
        for drill in [d for d in my_drills if d[0] == "reset"]:
            fire(drill)

    state.register_reset_callbacks([on_reset])
    if args.checkpoint and os.path.exists(args.checkpoint):
        saved = torch.load(args.checkpoint)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        sampler.load_state_dict(saved["sampler"])
        state.epoch, state.step = saved["epoch"], saved["step"]
        state.save()
        if hvd.rank() == 0:
            print(f"resumed from {args.checkpoint} at epoch {state.epoch + 1}, step {state.step}", flush=True)

    def commit():
        started = time.perf_counter()
        state.commit()
        world["commit_seconds"].append(time.perf_counter() - started)
        if args.checkpoint and hvd.rank() == 0:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "sampler": sampler.state_dict(), "epoch": state.epoch, "step": state.step},
                       args.checkpoint + ".tmp")
            os.replace(args.checkpoint + ".tmp", args.checkpoint)
    loss_fn = torch.nn.CrossEntropyLoss()

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, args.epochs):
            indices = list(state.sampler)
            losses = []
            for start in range(0, len(indices), args.batch_size):
                batch = torch.tensor(indices[start:start + args.batch_size], dtype=torch.int64)
                optimizer.zero_grad()
                loss = loss_fn(model(x_train[batch]), y_train[batch])
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
                state.step += 1
                state.sampler.record_batch(start // args.batch_size, args.batch_size)
                if world["reset_at"] is not None and hvd.rank() == 0:
                    print(f"world {os.environ.get('CONCORD_RUN_ID', '?').rpartition('.g')[2]}: {hvd.size()} ranks, "
                          f"first step after {time.time() - world['reset_at']:.3f} s (at {time.time():.3f})",
                          flush=True)
                world["reset_at"] = None
                for drill in [d for d in my_drills if d[0] == state.step]:
                    fire(drill)
                if args.step_delay:
                    time.sleep(args.step_delay)
                if state.step % args.commit_every == 0:
                    commit()
            state.sampler.set_epoch(state.epoch + 1)
            if hvd.rank() == 0:
                print(f"epoch {state.epoch + 1}: {hvd.size()} ranks, loss {sum(losses) / max(len(losses), 1):.4f}, "
                      f"test accuracy {accuracy(model, x_test, y_test):.4f}", flush=True)
            commit()

    train(state)
    final = accuracy(model, x_test, y_test)
    identical = parameters_match_root(model)
    if hvd.rank() == 0:
        print(f"final test accuracy {final:.4f} on {hvd.size()} ranks after {state.step} steps; parameters "
              f"bit-identical on all {hvd.size()} ranks: {identical}", flush=True)
        commits = sorted(world["commit_seconds"])
        if commits:
            print(f"commit: median {commits[len(commits) // 2] * 1e3:.3f} ms, min {commits[0] * 1e3:.3f} ms over "
                  f"{len(commits)} step commits on rank 0", flush=True)
    return 0 if identical and final >= args.min_accuracy else 1


if __name__ == "__main__":
    sys.exit(main())
