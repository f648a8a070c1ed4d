#!/usr/bin/env python3
"""Data-parallel training of an MLP on scikit-learn's bundled handwritten digits.

Each rank trains on its own shard of the training set; gradients are averaged by
``concord.torch.DistributedOptimizer`` (negotiated, fused and ring-allreduced by Concord)
and the initial parameters come from rank 0 through ``broadcast_parameters``. Rank 0 prints
per-epoch loss, test accuracy and samples/s. At the end every rank checks that its
parameters are bit-identical to rank 0's and the script exits non-zero if not (or if the
test accuracy is below ``--min-accuracy``).

With ``--sparse-density d`` the gradients are top-k sparsified with local residuals and
reduced by a sparse allreduce instead (``concord.torch.SparseDistributedOptimizer``, Ok-Topk
by default: Li & Hoefler, PPoPP 2022), optionally after ``--warmup-steps`` dense steps.
``--compare`` trains twice in one launch, dense and then sparse from the same initial
parameters, prints both accuracies and exits non-zero if the sparse run is more than
``--max-gap`` percentage points worse.

    mpirun -np 4 python3 examples/train_digits.py        # 4 local ranks
    python3 examples/train_digits.py                     # one process, no mpirun
    mpirun -np 4 python3 examples/train_digits.py --sparse-density 0.02 --compare

On a terminal rank 0 shows a progress bar per epoch (tqdm; plain lines otherwise, e.g. in
a log file; ``--no-progress-bar`` forces plain lines, which output captured from mpirun
needs: Open MPI gives each rank a pseudo-terminal even when mpirun's own output is a file).
``--plot out.png`` writes the loss and test accuracy per epoch (matplotlib).
"""

import argparse
import sys
import time

import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import concord.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate of one rank; scaled by size")
    parser.add_argument("--hidden", type=int, default=128, help="width of the hidden layers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-groups", type=int, default=0,
                        help="reduce the gradients in this many grouped allreduces (0: per tensor)")
    parser.add_argument("--min-accuracy", type=float, default=0.0,
                        help="exit non-zero if the final test accuracy is below this fraction")
    parser.add_argument("--sparse-density", type=float, default=0.0,
                        help="fraction of gradient entries kept by the sparse allreduce (0: dense)")
    parser.add_argument("--sparse-algorithm", default="oktopk",
                        help="sparse allreduce (concord.torch.sparse_allreduce_names())")
    parser.add_argument("--warmup-steps", type=int, default=0, help="dense steps before going sparse")
    parser.add_argument("--sparse-log", default="",
                        help="write one JSON line per sparse step to this file (rank 0): step, |U|/k and "
                             "words (4 bytes) sent by rank 0 in units of k")
    parser.add_argument("--max-overshoot", type=float, default=None,
                        help="Ok-Topk's volume cap (SparseOptions.max_overshoot, default 0.25; < 0: off)")
    parser.add_argument("--compare", action="store_true",
                        help="train dense, then sparse (--sparse-density), and compare their accuracy")
    parser.add_argument("--plot", metavar="PNG", help="write loss and test accuracy per epoch to this PNG")
    parser.add_argument("--no-progress-bar", action="store_true",
                        help="one line per epoch even where stdout is a terminal (e.g. a rank's "
                             "pseudo-terminal under mpirun whose output goes to a log)")
    parser.add_argument("--max-gap", type=float, default=2.0,
                        help="with --compare: exit non-zero if sparse accuracy is more than this many "
                             "percentage points below dense")
    args = parser.parse_args()
    if args.compare and args.sparse_density <= 0:
        parser.error("--compare needs --sparse-density > 0")
    return args


def load_data(seed):
    """The 1797 8x8 digits (scaled to [0, 1]), split 80/20 into train and test sets."""
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=seed,
                                                        stratify=y)
    return x_train, x_test, y_train, y_test


def make_model(hidden):
    return torch.nn.Sequential(
        torch.nn.Linear(64, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
        torch.nn.Linear(hidden, 10))


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).float().mean().item()


def parameters_match_root(model):
    """True on every rank iff every parameter is bit-identical to rank 0's."""
    mismatched = torch.zeros(1, dtype=torch.int32)
    for name, p in model.state_dict().items():
        root = hvd.broadcast(p, 0, name=f"check.{name}")
        if not torch.equal(root, p):
            print(f"rank {hvd.rank()}: parameter {name} differs from rank 0", file=sys.stderr)
            mismatched += 1
    return hvd.allreduce(mismatched, name="check.mismatched", op=hvd.Sum).item() == 0


def make_optimizer(model, args, size, sparse_density):
    """SGD with momentum wrapped by DistributedOptimizer, or by SparseDistributedOptimizer
    when sparse_density > 0 (the averaged sparse update is handed to SGD with momentum)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * size, momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    if sparse_density > 0:
        extra = {} if args.max_overshoot is None else {"max_overshoot": args.max_overshoot}
        return hvd.SparseDistributedOptimizer(optimizer, density=sparse_density, algorithm=args.sparse_algorithm,
                                              warmup_steps=args.warmup_steps,
                                              named_parameters=model.named_parameters(), **extra)
    return hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                    num_groups=args.num_groups)


def step_range(steps, epoch, show_bar):
    """The steps of one epoch: a tqdm progress bar when ``show_bar`` (rank 0 on a terminal,
    with python3-tqdm installed), else a plain range."""
    if not show_bar:
        return range(steps)
    from tqdm import tqdm
    return tqdm(range(steps), desc=f"epoch {epoch + 1}", unit="step", leave=False, dynamic_ncols=True,
                file=sys.stdout)  # the stream whose terminal bar_wanted() checked, beside the epoch lines


def bar_wanted(rank, disabled):
    """True on rank 0 when stdout is a terminal, ``disabled`` (--no-progress-bar) is false
    and tqdm can be imported."""
    if rank != 0 or disabled or not sys.stdout.isatty():
        return False
    try:
        import tqdm  # noqa: F401  (python3-tqdm)
    except ImportError:
        return False
    return True


def plot_history(histories, path):
    """Write a PNG with the mean training loss (left) and the test accuracy (right) per
    epoch, one line per run. ``histories`` maps a run's label to a list of
    (epoch, loss, accuracy)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    figure, (loss_axes, accuracy_axes) = plt.subplots(1, 2, figsize=(10, 4))
    for label, history in histories.items():
        epochs = [row[0] for row in history]
        loss_axes.plot(epochs, [row[1] for row in history], marker="o", label=label)
        accuracy_axes.plot(epochs, [row[2] for row in history], marker="o", label=label)
    loss_axes.set(xlabel="epoch", ylabel="training loss (mean over samples)", title="loss")
    accuracy_axes.set(xlabel="epoch", ylabel="test accuracy", title="accuracy")
    for axes in (loss_axes, accuracy_axes):
        axes.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        axes.grid(True, alpha=0.3)
        axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def train(args, data, sparse_density):
    """Train from the seed's initial parameters; return (final test accuracy, whether the
    parameters are bit-identical on all ranks, [(epoch, loss, test accuracy)] per epoch)."""
    rank, size = hvd.rank(), hvd.size()
    torch.manual_seed(args.seed + rank)  # deliberately different: broadcast must fix it
    x_train, x_test, y_train, y_test = data
    x_shard, y_shard = x_train[rank::size], y_train[rank::size]
    # Same number of steps on every rank, or the last allreduces would wait forever.
    steps = -(-(len(x_train) // size) // args.batch_size)

    model = make_model(args.hidden)
    optimizer = make_optimizer(model, args, size, sparse_density)
    loss_fn = torch.nn.CrossEntropyLoss()

    if rank == 0:
        mode = (f"sparse ({args.sparse_algorithm}, density {sparse_density}, {args.warmup_steps} warm-up steps)"
                if sparse_density > 0 else "dense")
        print(f"{mode} training on {size} rank(s): {len(x_train)} train / {len(x_test)} test samples, "
              f"{steps} steps of {args.batch_size} samples per rank per epoch")
    show_bar = bar_wanted(rank, args.no_progress_bar)
    history = []
    log = open(args.sparse_log, "w") if sparse_density > 0 and args.sparse_log and rank == 0 else None
    k = max(1, int(sum(p.numel() for p in model.parameters()) * sparse_density))
    for epoch in range(args.epochs):
        generator = torch.Generator().manual_seed(args.seed * 1000 + epoch * size + rank)
        order = torch.randperm(len(x_shard), generator=generator)
        start, total_loss, samples = time.perf_counter(), 0.0, 0
        model.train()
        for step in step_range(steps, epoch, show_bar):
            index = order[step * args.batch_size:(step + 1) * args.batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(x_shard[index]), y_shard[index])
            loss.backward()
            sent_before = optimizer.allreducer.bytes_sent() if log else 0
            optimizer.step()
            if log:
                words = (optimizer.allreducer.bytes_sent() - sent_before) / 4
                log.write(f'{{"step": {optimizer.steps}, "u_over_k": {len(optimizer.last_update[0]) / k:.4f}, '
                          f'"k_words": {words / k:.4f}}}\n')
            total_loss += loss.item() * len(index)
            samples += len(index)
        elapsed = time.perf_counter() - start
        stats = hvd.allreduce(torch.tensor([total_loss, samples], dtype=torch.float64),
                              name="epoch.stats", op=hvd.Sum)
        model.eval()
        test_accuracy = accuracy(model, x_test, y_test)
        history.append((epoch + 1, stats[0].item() / stats[1].item(), test_accuracy))
        if rank == 0:
            print(f"epoch {epoch + 1:3d}  loss {history[-1][1]:.4f}  "
                  f"test accuracy {test_accuracy:.4f}  {stats[1].item() / elapsed:8.0f} samples/s",
                  flush=True)
    if log:
        log.close()
    if sparse_density > 0 and rank == 0:
        print(f"sparse allreduce: {optimizer.allreducer.bytes_sent()} bytes sent by rank 0")
    return accuracy(model, x_test, y_test), parameters_match_root(model), history


def main():
    args = parse_args()
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    data = load_data(args.seed)
    runs = [0.0, args.sparse_density] if args.compare else [args.sparse_density]
    results = [train(args, data, density) for density in runs]
    hvd.shutdown()
    status = 0
    if args.plot and rank == 0:
        plot_history({(f"sparse {density}" if density > 0 else "dense"): result[2]
                      for density, result in zip(runs, results)}, args.plot)
        print(f"plot: {args.plot}")
    for density, (final_accuracy, identical, _) in zip(runs, results):
        mode = f"sparse density {density}" if density > 0 else "dense"
        if rank == 0:
            print(f"{mode}: final test accuracy {final_accuracy:.4f}; parameters bit-identical on all "
                  f"{size} ranks: {identical}")
        if not identical:
            status = 1
        elif final_accuracy < args.min_accuracy and not status:
            if rank == 0:
                print(f"test accuracy {final_accuracy:.4f} is below --min-accuracy {args.min_accuracy}",
                      file=sys.stderr)
            status = 2
    if args.compare:
        gap = 100.0 * (results[0][0] - results[1][0])
        if rank == 0:
            print(f"accuracy dense {results[0][0]:.4f}  sparse {results[1][0]:.4f}  gap {gap:+.2f} pp "
                  f"(limit {args.max_gap} pp)")
        if gap > args.max_gap and not status:
            status = 3
    if status:
        sys.exit(status)


if __name__ == "__main__":
    main()
