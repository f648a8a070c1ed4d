#!/usr/bin/env python3
"""Soak test: random collectives of every kind, every result checked, for a given wall time.

Run under mpirun (every rank runs this script)::

    scripts/mpirun.sh -np 4 /usr/bin/python3 tools/torch/soak.py --minutes 30

Each round, every rank draws the same list of operations from a generator seeded with
``(--seed, round)``: allreduce (Sum, Average, Min, Max, Product; prescale/postscale; out
of place or in place), grouped allreduce, allgather and grouped allgather (a different
dim 0 per rank, 0 included), broadcast (random root), alltoall (random splits, 0
included), reducescatter and grouped reducescatter (Sum, Average; scale factors), and
allreduce of torch sparse COO tensors; every dtype each collective takes (bool for
broadcast/allgather/alltoall) and random sizes including 0. Every rank then submits them
asynchronously in its own order (a generator seeded with ``(--seed, round, rank)``),
synchronizes them in yet another order, and checks every result against a reference it
computes from every rank's input (inputs are a function of ``(seed, round, op, rank)``).
The inputs are small integers and the scale factors powers of two (Average: also 1/size),
so the reference is exact in every dtype: a result counts as wrong unless it is equal to
the reference element for element (float NaN never occurs). After the collectives, a
KVStore (``--kvstore``; needs MPI_THREAD_MULTIPLE) pushes and pulls random keys, also
checked exactly.

``--kinds`` and ``--dtypes`` restrict the draw to some collectives and dtypes (the KVStore
keeps its own dtypes). For example ``--kinds
allreduce,allreduce_inplace,grouped_allreduce,allgather,broadcast --dtypes
float32,float64,float16,bfloat16,int32,int64,int8,uint8 --kvstore off`` is what an older
Concord can run; docs/performance.md compares op rates that way. An unknown name, or a
dtype list that leaves a collective none it takes, is refused.

Every rank stops after the same round: the first rank whose clock passes ``--minutes``
sets a flag that a max-allreduce shares. Rank 0 prints a summary JSON line::

    {"ranks": 4, "seconds": ..., "rounds": ..., "ops": ..., "ops_per_s": ...,
     "wrong": 0, "errors": 0, "by_kind": {...}, "rss_mib_start": [...],
     "rss_mib_end": [...], "rss_growth_mib": [...], "warnings": N}

``wrong`` counts results that differ from the reference (the first few are printed with
rank, round, op, dtype, shape and element); ``errors`` counts operations that raised;
``rss_*`` are every rank's resident set size (``/proc/self/status`` VmRSS) after a warm-up
round and at the end; ``warnings`` counts lines of Concord's own log on stderr (their text
is captured by redirecting fd 2 to a file per rank, ``--log-dir``, and echoed at the end).
The exit status is 1 if anything was wrong, raised or warned.
"""

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import time

import torch

KINDS = ("allreduce", "allreduce_inplace", "grouped_allreduce", "allgather", "grouped_allgather",
         "broadcast", "alltoall", "reducescatter", "grouped_reducescatter", "sparse_allreduce")
NUMERIC = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
           torch.int16, torch.int8, torch.uint8)
WITH_BOOL = NUMERIC + (torch.bool,)
FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
DTYPE_NAMES = tuple(str(dtype).split(".")[1] for dtype in WITH_BOOL)
KIND_DTYPES = {kind: NUMERIC for kind in KINDS}  # the dtypes each collective is drawn with
KIND_DTYPES.update({kind: WITH_BOOL for kind in ("allgather", "grouped_allgather", "alltoall", "broadcast")})
KIND_DTYPES["sparse_allreduce"] = FLOATS + (torch.int32, torch.int64)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="wall time to run (minutes)")
    parser.add_argument("--seed", type=int, default=1, help="seed of what every rank runs")
    parser.add_argument("--ops-per-round", type=int, default=12, help="operations in flight per round")
    parser.add_argument("--max-elements", type=int, default=5000, help="largest tensor (elements)")
    parser.add_argument("--kvstore", choices=("auto", "on", "off"), default="auto",
                        help="KVStore pushes/pulls each round (auto: when MPI_THREAD_MULTIPLE)")
    parser.add_argument("--log-dir", default=None,
                        help="where each rank's stderr (Concord's log) goes; default: a temporary folder")
    parser.add_argument("--max-reports", type=int, default=10, help="wrong results printed per rank")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="comma-separated collectives to draw from (default: all of %(default)s)")
    parser.add_argument("--dtypes", default=",".join(DTYPE_NAMES),
                        help="comma-separated dtypes to draw from (default: all of %(default)s)")
    args = parser.parse_args(argv)
    args.kinds = tuple(dict.fromkeys(kind for kind in args.kinds.split(",") if kind))  # each once, in order
    unknown = sorted(set(args.kinds) - set(KINDS))
    if unknown or not args.kinds:
        parser.error(f"--kinds: unknown or none: {','.join(unknown)} (known: {','.join(KINDS)})")
    names = list(dict.fromkeys(name for name in args.dtypes.split(",") if name))
    unknown = sorted(set(names) - set(DTYPE_NAMES))
    if unknown or not names:
        parser.error(f"--dtypes: unknown or none: {','.join(unknown)} (known: {','.join(DTYPE_NAMES)})")
    args.dtypes = tuple(getattr(torch, name) for name in names)
    for kind in args.kinds:
        if not [dtype for dtype in KIND_DTYPES[kind] if dtype in args.dtypes]:
            parser.error(f"--dtypes: none of them is one that {kind} takes")
    return args


def rss_mib():
    """This process's resident set size in MiB (VmRSS of /proc/self/status)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def value_range(dtype, op):
    """Inclusive range of input integers such that every reduction over <= 16 ranks is exact."""
    if dtype == torch.bool:
        return (0, 1)
    if op == "product":
        return (1, 2) if dtype == torch.uint8 else (-2, 2)
    return (0, 7) if dtype == torch.uint8 else (-7, 7)


def seed_of(*parts):
    """A 63-bit seed from `parts`, the same in every process (str hashes are randomised)."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "little") >> 1


def make_input(seed, round_, index, rank, shape, dtype, op="sum"):
    """Input of `rank` for operation `index` of round `round_` (a function of these only)."""
    generator = torch.Generator().manual_seed(seed_of(seed, round_, index, rank))
    low, high = value_range(dtype, op)
    values = torch.randint(low, high + 1, shape, generator=generator, dtype=torch.int64)
    if op == "product":  # no zeros: a product of factors of magnitude <= 2
        values[values == 0] = 1
    return values.to(dtype)


def scale(x, factor, dtype):
    """Concord's scale_buffer(): float64 for float64 and integers (truncating), float32 otherwise."""
    if factor == 1.0:
        return x
    if dtype in (torch.float32, torch.float16, torch.bfloat16):
        return (x.to(torch.float32) * torch.tensor(factor, dtype=torch.float32)).to(dtype)
    if dtype == torch.float64:
        return x * factor
    return torch.trunc(x.to(torch.float64) * factor).to(torch.int64).to(dtype)


def reduce_reference(inputs, op, dtype, prescale=1.0, postscale=1.0):
    """postscale' * op(prescale * input_r): Concord's allreduce semantics, exactly."""
    scaled = [scale(x, prescale, dtype) for x in inputs]
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    stack = torch.stack([x.to(wide) for x in scaled])
    if op in ("sum", "average"):
        result = stack.sum(0)
    elif op == "product":
        result = stack.prod(0)
    elif op == "min":
        result = stack.min(0).values
    else:
        result = stack.max(0).values
    result = result.to(dtype) if dtype.is_floating_point else result.to(torch.int64).to(dtype)
    factor = postscale / len(inputs) if op == "average" else postscale
    return scale(result, factor, dtype)


class Soak:
    """One rank's soak run: draws, submits, checks and counts (see the module doc)."""

    def __init__(self, hvd, args):
        self.hvd = hvd
        self.args = args
        self.rank = hvd.rank()
        self.size = hvd.size()
        self.ops = {kind: 0 for kind in KINDS + ("kvstore",)}
        self.wrong = 0
        self.errors = 0
        self.reports = []
        self.kvstore = None
        self.kv_values = {}  # key -> its value after the last pull (reference)
        self.kv_dtypes = {}

    def report(self, text):
        self.wrong += 1
        if len(self.reports) < self.args.max_reports:
            self.reports.append(f"rank {self.rank}/{self.size}: {text}")

    # ---- what every rank runs (shared generator) ----------------------------------------

    def dtype(self, rng, kind):
        """A dtype that `kind` takes, among --dtypes."""
        return rng.choice([dtype for dtype in KIND_DTYPES[kind] if dtype in self.args.dtypes])

    def draw(self, rng, round_, index):
        """One operation: a dict with its kind, dtype, shapes and parameters."""
        kind = rng.choice(self.args.kinds)
        max_n = self.args.max_elements
        n = rng.choice((0, 1, rng.randint(2, 64), rng.randint(1, max_n)))
        spec = {"kind": kind, "index": index, "name": f"soak.{index}.{kind}"}  # names recur, parameters change
        if kind in ("allreduce", "allreduce_inplace", "grouped_allreduce"):
            spec["dtype"] = self.dtype(rng, kind)
            spec["op"] = rng.choice(("sum", "average", "min", "max", "product"))
            spec["prescale"], spec["postscale"] = 1.0, 1.0
            if spec["op"] in ("sum", "average"):
                spec["prescale"] = rng.choice((1.0, 1.0, 0.5, 2.0))
                spec["postscale"] = rng.choice((1.0, 1.0, 0.5, 2.0))
            members = rng.randint(1, 4) if kind == "grouped_allreduce" else 1
            spec["shapes"] = [self.random_shape(rng, n if m == 0 else rng.randint(0, max_n)) for m in range(members)]
        elif kind in ("allgather", "grouped_allgather", "alltoall"):
            spec["dtype"] = self.dtype(rng, kind)
            members = rng.randint(1, 3) if kind == "grouped_allgather" else 1
            spec["tail"] = [rng.choice(((), (3,), (2, 2))) for _ in range(members)]
            if kind == "alltoall":
                row = max(1, self.prod(spec["tail"][0]))
                spec["splits"] = [[rng.choice((0, rng.randint(0, max(1, max_n // (row * self.size)))))
                                   for _ in range(self.size)] for _ in range(self.size)]
            else:
                spec["rows"] = [[rng.choice((0, rng.randint(0, 40), rng.randint(0, max(1, max_n // 4))))
                                 for _ in range(self.size)] for _ in range(members)]
        elif kind == "broadcast":
            spec["dtype"] = self.dtype(rng, kind)
            spec["root"] = rng.randrange(self.size)
            spec["shapes"] = [self.random_shape(rng, n)]
        elif kind in ("reducescatter", "grouped_reducescatter"):
            spec["dtype"] = self.dtype(rng, kind)
            spec["op"] = rng.choice(("sum", "average"))
            spec["prescale"] = rng.choice((1.0, 0.5, 2.0))
            spec["postscale"] = rng.choice((1.0, 0.5, 2.0))
            members = rng.randint(1, 3) if kind == "grouped_reducescatter" else 1
            spec["shapes"] = [(rng.randint(0, 3 * self.size + 3),) + rng.choice(((), (3,), (2, 5)))
                              for _ in range(members)]
        else:  # sparse_allreduce
            spec["dtype"] = self.dtype(rng, kind)
            spec["op"] = rng.choice(("sum", "average"))
            spec["dense"] = (rng.randint(1, 200), rng.choice((1, 3)))
            spec["nnz"] = [rng.choice((0, rng.randint(0, 30))) for _ in range(self.size)]
        return spec

    @staticmethod
    def prod(shape):
        result = 1
        for d in shape:
            result *= d
        return result

    @staticmethod
    def random_shape(rng, n):
        """A shape of n elements: (n,), or (n // k, k) when k divides n."""
        for k in (7, 4, 3):
            if n >= k and n % k == 0 and rng.random() < 0.3:
                return (n // k, k)
        return (n,)

    # ---- submission (this rank) and checking ----------------------------------------------

    def inputs(self, round_, spec, member, shape, op="sum"):
        """Every rank's input of one member (computed on every rank: the reference needs them)."""
        index = spec["index"] * 16 + member
        return [make_input(self.args.seed, round_, index, r, shape, spec["dtype"], op) for r in range(self.size)]

    def submit(self, round_, spec):
        """Starts one operation; returns (handles, check) where check(results) verifies it."""
        hvd, kind, dtype = self.hvd, spec["kind"], spec["dtype"]
        if kind in ("allreduce", "allreduce_inplace", "grouped_allreduce"):
            op = {"sum": hvd.Sum, "average": hvd.Average, "min": hvd.Min, "max": hvd.Max,
                  "product": hvd.Product}[spec["op"]]
            all_inputs = [self.inputs(round_, spec, m, shape, spec["op"]) for m, shape in enumerate(spec["shapes"])]
            mine = [inputs[self.rank].clone() for inputs in all_inputs]
            kwargs = dict(op=op, prescale_factor=spec["prescale"], postscale_factor=spec["postscale"])
            if kind == "allreduce":
                handle = hvd.allreduce_async(mine[0], name=spec["name"], **kwargs)
            elif kind == "allreduce_inplace":
                handle = hvd.allreduce_async_(mine[0], name=spec["name"], **kwargs)
            else:
                handle = hvd.grouped_allreduce_async(mine, name=spec["name"], **kwargs)
            expected = [reduce_reference(inputs, spec["op"], dtype, spec["prescale"], spec["postscale"])
                        for inputs in all_inputs]
            return handle, lambda result: self.compare(spec, round_, result if isinstance(result, list) else [result],
                                                       expected)
        if kind in ("allgather", "grouped_allgather"):
            expected, mine = [], []
            for m, tail in enumerate(spec["tail"]):
                parts = [make_input(self.args.seed, round_, spec["index"] * 16 + m, r,
                                    (spec["rows"][m][r],) + tail, dtype) for r in range(self.size)]
                expected.append(torch.cat(parts))
                mine.append(parts[self.rank])
            if kind == "allgather":
                handle = hvd.allgather_async(mine[0], name=spec["name"])
            else:
                handle = hvd.grouped_allgather_async(mine, name=spec["name"])
            return handle, lambda result: self.compare(spec, round_, result if isinstance(result, list) else [result],
                                                       expected)
        if kind == "broadcast":
            shape = spec["shapes"][0]
            root_input = make_input(self.args.seed, round_, spec["index"], spec["root"], shape, dtype)
            mine = make_input(self.args.seed, round_, spec["index"], self.rank, shape, dtype)
            handle = hvd.broadcast_async_(mine, root_rank=spec["root"], name=spec["name"])
            return handle, lambda result: self.compare(spec, round_, [result], [root_input])
        if kind == "alltoall":
            tail = spec["tail"][0]
            sends = [make_input(self.args.seed, round_, spec["index"], r, (sum(spec["splits"][r]),) + tail, dtype)
                     for r in range(self.size)]
            pieces = []
            for r in range(self.size):
                start = sum(spec["splits"][r][:self.rank])
                pieces.append(sends[r][start:start + spec["splits"][r][self.rank]])
            expected = torch.cat(pieces)
            handle = hvd.alltoall_async(sends[self.rank], splits=spec["splits"][self.rank], name=spec["name"])
            return handle, lambda result: self.compare(spec, round_, [result[0] if isinstance(result, tuple) else result],
                                                       [expected])
        if kind in ("reducescatter", "grouped_reducescatter"):
            op = hvd.Sum if spec["op"] == "sum" else hvd.Average
            all_inputs = [self.inputs(round_, spec, m, shape) for m, shape in enumerate(spec["shapes"])]
            expected = []
            for inputs, shape in zip(all_inputs, spec["shapes"]):
                reduced = reduce_reference(inputs, spec["op"], dtype, spec["prescale"], spec["postscale"])
                rows, extra = divmod(shape[0], self.size)
                start = self.rank * rows + min(self.rank, extra)
                expected.append(reduced[start:start + rows + (1 if self.rank < extra else 0)])
            mine = [inputs[self.rank].clone() for inputs in all_inputs]
            kwargs = dict(op=op, prescale_factor=spec["prescale"], postscale_factor=spec["postscale"])
            if kind == "reducescatter":
                handle = hvd.reducescatter_async(mine[0], name=spec["name"], **kwargs)
            else:
                handle = hvd.grouped_reducescatter_async(mine, name=spec["name"], **kwargs)
            return handle, lambda result: self.compare(spec, round_, result if isinstance(result, list) else [result],
                                                       expected)
        # sparse_allreduce: rank r holds nnz[r] random entries (duplicates allowed); the result
        # holds every rank's indices and values in rank order (values // size or / size for
        # Average, as concord.torch.sparse_grad divides them), uncoalesced.
        rows, cols = spec["dense"]
        all_indices, all_values, mine = [], [], None
        for r in range(self.size):
            generator = torch.Generator().manual_seed(seed_of(self.args.seed, round_, spec["index"], r, "indices"))
            indices = torch.randint(0, rows, (1, spec["nnz"][r]), generator=generator)
            values = make_input(self.args.seed, round_, spec["index"], r, (spec["nnz"][r], cols), dtype)
            all_indices.append(indices)
            all_values.append(values)
            if r == self.rank:
                mine = torch.sparse_coo_tensor(indices, values, (rows, cols))
        expected_values = torch.cat(all_values)
        if spec["op"] == "average":
            expected_values = (expected_values / self.size if dtype.is_floating_point
                               else torch.div(expected_values, self.size, rounding_mode="floor"))
        expected = [torch.cat(all_indices, 1), expected_values]
        op = hvd.Sum if spec["op"] == "sum" else hvd.Average
        handle = hvd.sparse_allreduce_async(mine, name=spec["name"], op=op)
        return handle, lambda result: self.compare(spec, round_, [result._indices(), result._values()], expected)

    def compare(self, spec, round_, results, expected):
        """Counts a wrong result unless every member equals its reference exactly."""
        if len(results) != len(expected):
            self.report(f"round {round_} {spec['name']}: {len(results)} results for {len(expected)} members")
            return
        for m, (got, want) in enumerate(zip(results, expected)):
            what = f"round {round_} {spec['name']} member {m} dtype {spec['dtype']} shape {tuple(want.shape)}"
            if got.shape != want.shape or got.dtype != want.dtype:
                self.report(f"{what}: got shape {tuple(got.shape)} dtype {got.dtype}")
                return
            if not torch.equal(got, want):
                bad = (got != want).nonzero()
                first = tuple(bad[0].tolist())
                self.report(f"{what}: {bad.shape[0]} elements differ, first at {first}: got {got[first].item()} "
                            f"want {want[first].item()}")
                return

    def kvstore_round(self, rng, round_):
        """A few pushes and pulls of random keys (same keys and order on every rank)."""
        for step in range(rng.randint(1, 4)):
            key = rng.randrange(8)
            dtype = rng.choice((torch.float32, torch.float64, torch.int32, torch.int64, torch.int8))
            if key not in self.kv_values:
                shape = (rng.randint(0, 300),)
                self.kv_values[key] = None
                init = make_input(self.args.seed, round_, 1000 + key, 0, shape, dtype)
                self.kvstore.init(key, init)
                self.kv_values[key] = init
                self.kv_dtypes[key] = dtype
            dtype = self.kv_dtypes[key]
            shape = tuple(self.kv_values[key].shape)
            grads = [make_input(self.args.seed, round_, 2000 + step, r, shape, dtype) for r in range(self.size)]
            self.kvstore.push(key, grads[self.rank])
            out = torch.empty(shape, dtype=dtype)
            self.kvstore.pull(key, out)
            expected = reduce_reference(grads, "sum", dtype)
            self.kv_values[key] = expected
            self.ops["kvstore"] += 1
            self.compare({"name": f"kvstore.key{key}", "dtype": dtype}, round_, [out], [expected])

    def run_round(self, round_):
        shared = random.Random(seed_of(self.args.seed, round_))
        specs = [self.draw(shared, round_, i) for i in range(self.args.ops_per_round)]
        mine = random.Random(seed_of(self.args.seed, round_, self.rank))
        order = list(range(len(specs)))
        mine.shuffle(order)
        pending = []
        for i in order:
            try:
                pending.append((specs[i], *self.submit(round_, specs[i])))
            except Exception as error:  # noqa: BLE001 - every failure is counted and reported
                self.errors += 1
                self.reports.append(f"rank {self.rank}: round {round_} {specs[i]['name']} submit raised {error!r}")
        mine.shuffle(pending)
        for spec, handle, check in pending:
            try:
                check(self.hvd.synchronize(handle))
                self.ops[spec["kind"]] += 1
            except Exception as error:  # noqa: BLE001
                self.errors += 1
                self.reports.append(f"rank {self.rank}: round {round_} {spec['name']} raised {error!r}")
        if self.kvstore is not None:
            self.kvstore_round(shared, round_)


def count_log_lines(log_file):
    """Non-empty lines written so far to this rank's captured stderr."""
    sys.stderr.flush()
    log_file.seek(0)
    return [line for line in log_file.read().splitlines() if line.strip()]


def run(hvd, args, log_file):
    """The soak proper (after init); returns the exit status."""
    soak = Soak(hvd, args)
    use_kv = args.kvstore == "on" or (args.kvstore == "auto" and hvd.mpi_threads_supported())
    if use_kv:
        from concord.kvstore import KVStore
        soak.kvstore = KVStore("funneled")

    soak.run_round(0)  # warm-up: buffers, caches and the response cache settle
    rss_start = rss_mib()
    start = time.monotonic()
    deadline = start + args.minutes * 60.0
    round_ = 1
    while True:
        soak.run_round(round_)
        round_ += 1
        done = hvd.allreduce(torch.tensor([int(time.monotonic() >= deadline)], dtype=torch.int32),
                             name="soak.done", op=hvd.Max)
        if int(done.item()):
            break
    seconds = time.monotonic() - start
    if soak.kvstore is not None:
        soak.kvstore.close()
    rss_end = rss_mib()
    warnings = count_log_lines(log_file)
    row = torch.tensor([[rss_start, rss_end, soak.wrong, soak.errors, len(warnings)]], dtype=torch.float64)
    rows = hvd.allgather(row, name="soak.summary")
    counts = torch.tensor([[soak.ops[k] for k in KINDS + ("kvstore",)]], dtype=torch.int64)
    by_kind = hvd.allgather(counts, name="soak.by_kind").sum(0)
    for line in soak.reports + [f"rank {soak.rank} log: {line}" for line in warnings[:20]]:
        print(line, flush=True)
    if soak.rank == 0:
        ops = int(by_kind.sum().item())
        summary = {
            "ranks": soak.size, "seconds": round(seconds, 1), "rounds": round_ - 1,
            "ops": ops, "ops_per_s": round(ops / seconds, 1),
            "wrong": int(rows[:, 2].sum().item()), "errors": int(rows[:, 3].sum().item()),
            "warnings": int(rows[:, 4].sum().item()),
            "by_kind": dict(zip(KINDS + ("kvstore",), [int(x) for x in by_kind.tolist()])),
            "kvstore": soak.kvstore is not None,
            "rss_mib_start": [round(x, 1) for x in rows[:, 0].tolist()],
            "rss_mib_end": [round(x, 1) for x in rows[:, 1].tolist()],
            "rss_growth_mib": [round(e - s, 1) for s, e in rows[:, :2].tolist()],
            "seed": args.seed, "minutes": args.minutes, "max_elements": args.max_elements,
            "ops_per_round": args.ops_per_round, "kinds": list(args.kinds),
            "dtypes": [str(dtype).split(".")[1] for dtype in args.dtypes],
        }
        print(json.dumps(summary), flush=True)
    return 1 if rows[:, 2:].sum().item() > 0 else 0


def main(argv=None):
    args = parse_args(argv)
    log_dir = args.log_dir or tempfile.mkdtemp(prefix="concord-soak-")
    os.makedirs(log_dir, exist_ok=True)
    rank_hint = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("PMI_RANK", "0"))
    log_file = open(os.path.join(log_dir, f"rank{rank_hint}.stderr"), "w+")
    saved_stderr = os.dup(2)
    os.dup2(log_file.fileno(), 2)  # Concord logs to fd 2: what it says is counted
    try:
        import concord.torch as hvd
        hvd.init()
        status = run(hvd, args, log_file)
        hvd.shutdown()
    except BaseException:
        os.dup2(saved_stderr, 2)  # a crash is shown, not captured
        raise
    late = count_log_lines(log_file)  # shutdown may still log
    os.dup2(saved_stderr, 2)
    return status or (1 if late else 0)


if __name__ == "__main__":
    sys.exit(main())
