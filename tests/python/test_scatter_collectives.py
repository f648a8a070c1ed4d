"""alltoall, reducescatter, grouped_allgather and grouped_reducescatter of concord.torch
(horovod.torch 0.28.1 semantics), every dtype, uneven splits and rows, every error case,
and the submission-time errors every collective shares (name already in flight, unknown
handle, unsupported dtype). References are built locally from every rank's deterministic
input (concord_test_utils.rank_input), so each rank checks its own result exactly."""

import pytest
import torch

import concord.torch as hvd
from concord_test_utils import DTYPES, EPS, dname, expect_raises, rank_input

MOVE_DTYPES = DTYPES + [torch.bool]  # alltoall / allgather also carry bool


def data(rank, shape, dtype, seed):
    """Rank `rank`'s input: exact-sum values for reductions, 0/1 for bool."""
    if dtype == torch.bool:
        return rank_input(rank, shape, torch.uint8, seed, "bytes").remainder(2).to(torch.bool)
    return rank_input(rank, shape, dtype, seed, "sum")


def split_matrix(size):
    """Rows rank i sends to rank j: uneven, with zeros (i + 2 j) mod 3."""
    return [[(i + 2 * j) % 3 for j in range(size)] for i in range(size)]


def assert_equal(got, expected, what):
    assert got.dtype == expected.dtype, f"rank {hvd.rank()}: {what}: dtype {got.dtype} != {expected.dtype}"
    assert tuple(got.shape) == tuple(expected.shape), \
        f"rank {hvd.rank()}: {what}: shape {tuple(got.shape)} != {tuple(expected.shape)}"
    if not torch.equal(got, expected):
        index = int(torch.nonzero((got != expected).reshape(-1))[0, 0])
        raise AssertionError(f"rank {hvd.rank()}/{hvd.size()}: {what}: element {index} is "
                             f"{got.reshape(-1)[index].item()!r}, expected {expected.reshape(-1)[index].item()!r}")


# ---------------------------------------------------------------------------- alltoall

@pytest.mark.parametrize("rows", [0, 1, 3])
@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=dname)
def test_alltoall_equal_splits(dtype, rows):
    P, me = hvd.size(), hvd.rank()
    inputs = [data(q, (P * rows, 2), dtype, 11) for q in range(P)]
    got = hvd.alltoall(inputs[me], name=f"a2a.equal.{dname(dtype)}.{rows}")
    expected = torch.cat([inputs[q][me * rows:(me + 1) * rows] for q in range(P)])
    assert_equal(got, expected, f"alltoall {dname(dtype)} rows {rows}")


@pytest.mark.parametrize("form", ["list", "tensor", "async"])
@pytest.mark.parametrize("dtype", MOVE_DTYPES, ids=dname)
def test_alltoall_uneven_splits(dtype, form):
    P, me = hvd.size(), hvd.rank()
    S = split_matrix(P)
    inputs = [data(q, (sum(S[q]), 3), dtype, 12) for q in range(P)]
    name = f"a2a.splits.{dname(dtype)}.{form}"
    if form == "list":
        got, received = hvd.alltoall(inputs[me], splits=S[me], name=name)
    elif form == "tensor":
        got, received = hvd.alltoall(inputs[me], splits=torch.tensor(S[me], dtype=torch.int32), name=name)
    else:
        got, received = hvd.synchronize(hvd.alltoall_async(inputs[me], splits=S[me], name=name))
    parts = []
    for q in range(P):
        start = sum(S[q][:me])
        parts.append(inputs[q][start:start + S[q][me]])
    assert_equal(got, torch.cat(parts), f"alltoall {dname(dtype)} with splits ({form})")
    assert_equal(received, torch.tensor([S[q][me] for q in range(P)], dtype=torch.int32), "received splits")


def test_alltoall_bad_splits_raise_at_submission():
    P = hvd.size()
    t = torch.ones(P + 1, 2)
    cases = [
        ("wrong length", [P + 1] + [0] * P, "splits for"),
        ("negative", [-1, P + 2] + [0] * (P - 2) if P >= 2 else [-1], "negative"),
        ("not summing to dim 0", [0] * P, "sum to"),
    ]
    for what, splits, words in cases:
        error = expect_raises(hvd.InvalidArgumentError, what, hvd.alltoall, t, splits=splits, name=f"a2a.bad.{what}")
        assert isinstance(error, ValueError) and words in str(error) and "a2a.bad" in str(error), str(error)
    # Horovod 0.28.1 reads splits as _alltoall_async does (horovod/torch/mpi_ops.py): a list
    # becomes an int32 tensor, floats truncated ([1.5] * P sums to P, not dim 0 = P + 1); a
    # tensor must be int32, else a ValueError with mpi_ops_v2.cc's text.
    error = expect_raises(hvd.InvalidArgumentError, "float splits", hvd.alltoall, t, splits=[1.5] * P,
                          name="a2a.bad.float")
    assert "sum to" in str(error), str(error)
    for dtype in (torch.float32, torch.int64):
        error = expect_raises(ValueError, f"{dtype} tensor splits", hvd.alltoall, t, splits=torch.ones(P, dtype=dtype),
                              name=f"a2a.bad.{dtype}")
        assert "alltoall expects splits to contain 32-bit integer elements." in str(error), str(error)
    got, received = hvd.alltoall(torch.arange(P, dtype=torch.float32), splits=[1.9] * P, name="a2a.truncated")
    assert received.tolist() == [1] * P and got.tolist() == [float(hvd.rank())] * P, (
        f"rank {hvd.rank()}: float splits [1.9] * {P} not truncated to 1: {got.tolist()} {received.tolist()}")
    expect_raises(TypeError, "splits of a string", hvd.alltoall, t, splits="1", name="a2a.bad.str")
    error = expect_raises(hvd.InvalidArgumentError, "scalar", hvd.alltoall, torch.tensor(1.0), name="a2a.bad.scalar")
    assert "scalar" in str(error)
    if P > 1:
        error = expect_raises(hvd.InvalidArgumentError, "indivisible", hvd.alltoall, t, name="a2a.bad.indivisible")
        assert "not divisible" in str(error)


def test_alltoall_mismatched_trailing_dims_raise_on_every_rank():
    if hvd.size() < 2:
        pytest.skip("needs two ranks")
    P, me = hvd.size(), hvd.rank()
    t = torch.zeros(P, 2 if me == 0 else 3)
    error = expect_raises(hvd.MismatchError, "alltoall trailing dims", hvd.alltoall, t, name="a2a.mismatch")
    assert "a2a.mismatch" in str(error) and "[2] on ranks [0]" in str(error), str(error)
    assert isinstance(error, hvd.HorovodInternalError)


# ----------------------------------------------------------------------- reducescatter

def scatter_reference(inputs, op, dtype, prescale=1.0, postscale=1.0, active=None):
    """This rank's rows of the reduce-scatter as (expected, magnitude): computed in float64
    from each input scaled and rounded to its dtype as Concord packs it, then scaled as
    Concord copies out (integers: truncated toward zero). magnitude bounds the rounding
    error of the float sums (sum of |terms|)."""
    P, me = hvd.size(), hvd.rank()
    scaled = [t.to(torch.float64) if prescale == 1.0 else
              (torch.trunc(t.to(torch.float64) * prescale) if not dtype.is_floating_point
               else (t.to(torch.float64) * prescale).to(dtype).to(torch.float64)) for t in inputs]
    total = sum(scaled)
    magnitude = sum(x.abs() for x in scaled)
    factor = postscale / (active or P) if op == hvd.Average else postscale
    rows = inputs[0].shape[0]
    base, extra = divmod(rows, P)
    start = me * base + min(me, extra)
    stop = start + base + (1 if me < extra else 0)
    mine, magnitude = total[start:stop], magnitude[start:stop]
    if factor != 1.0:
        mine = mine * factor
        magnitude = magnitude * abs(factor)
        if not dtype.is_floating_point:
            mine = torch.trunc(mine)
    return mine.to(dtype), magnitude


def assert_close(got, reference, dtype, what):
    expected, magnitude = reference
    if not dtype.is_floating_point:
        return assert_equal(got, expected, what)
    assert tuple(got.shape) == tuple(expected.shape), f"rank {hvd.rank()}: {what}: shape {tuple(got.shape)}"
    tolerance = 4 * hvd.size() * EPS[dtype] * (1 + magnitude)
    bad = (got.to(torch.float64) - expected.to(torch.float64)).abs() > tolerance
    if bad.any():
        index = int(torch.nonzero(bad.reshape(-1))[0, 0])
        raise AssertionError(f"rank {hvd.rank()}/{hvd.size()}: {what}: element {index} is "
                             f"{got.reshape(-1)[index].item()!r}, expected {expected.reshape(-1)[index].item()!r}")


def odd_rows():
    return hvd.size() + 1  # every rank count: the first rank gets an extra row


@pytest.mark.parametrize("form", ["sync", "async"])
@pytest.mark.parametrize("rows", [0, 1, "odd", 7])
@pytest.mark.parametrize("op", ["Sum", "Average"])
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_reducescatter(dtype, op, rows, form):
    P, me = hvd.size(), hvd.rank()
    rows = odd_rows() if rows == "odd" else rows
    reduce_op = getattr(hvd, op)
    inputs = [data(q, (rows, 3), dtype, 21) for q in range(P)]
    name = f"rs.{dname(dtype)}.{op}.{rows}.{form}"
    if form == "sync":
        got = hvd.reducescatter(inputs[me], name=name, op=reduce_op)
    else:
        got = hvd.synchronize(hvd.reducescatter_async(inputs[me], name=name, op=reduce_op))
    assert got.shape[0] == rows // P + (1 if me < rows % P else 0)
    assert_close(got, scatter_reference(inputs, reduce_op, dtype), dtype, f"reducescatter {name}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.int32, torch.bfloat16], ids=dname)
def test_reducescatter_scale_factors(dtype):
    P, me = hvd.size(), hvd.rank()
    inputs = [data(q, (odd_rows(), 2), dtype, 22) for q in range(P)]
    got = hvd.reducescatter(inputs[me], name=f"rs.scale.{dname(dtype)}", op=hvd.Sum, prescale_factor=2.0,
                            postscale_factor=0.5)
    assert_close(got, scatter_reference(inputs, hvd.Sum, dtype, 2.0, 0.5), dtype, "reducescatter scaled")


def test_reducescatter_default_op_is_average():
    P, me = hvd.size(), hvd.rank()
    inputs = [data(q, (2 * P, 2), torch.float64, 23) for q in range(P)]
    got = hvd.reducescatter(inputs[me], name="rs.default")
    assert_close(got, scatter_reference(inputs, hvd.Average, torch.float64), torch.float64, "default op")


def test_reducescatter_errors():
    t = torch.ones(4)
    error = expect_raises(hvd.InvalidArgumentError, "scalar", hvd.reducescatter, torch.tensor(2.0), name="rs.err.s")
    assert "scalar" in str(error) and "rs.err.s" in str(error)
    error = expect_raises(hvd.InvalidArgumentError, "bool", hvd.reducescatter, t.bool(), name="rs.err.b")
    assert "bool" in str(error)
    expect_raises(hvd.InvalidArgumentError, "min", hvd.reducescatter, t, name="rs.err.min", op=hvd.Min)
    if hvd.size() > 1:
        mine = torch.ones(4 + hvd.rank())
        error = expect_raises(hvd.MismatchError, "shape mismatch", hvd.reducescatter, mine, name="rs.err.shape")
        assert "rs.err.shape" in str(error) and "[4] on ranks [0]" in str(error), str(error)


# ---------------------------------------------------------------------- grouped forms

def test_grouped_reducescatter_and_allgather():
    P, me = hvd.size(), hvd.rank()
    shapes = [(odd_rows(), 2), (1,), (3 * P, 4, 2)]
    inputs = [[data(q, shape, torch.float64, 30 + i) for q in range(P)] for i, shape in enumerate(shapes)]
    got = hvd.grouped_reducescatter([member[me] for member in inputs], name="grs", op=hvd.Sum)
    for i, member in enumerate(inputs):
        assert_close(got[i], scatter_reference(member, hvd.Sum, torch.float64), torch.float64, f"grouped rs {i}")
    gathered_inputs = [[data(q, (q + i, 2), torch.int32, 40 + i) for q in range(P)] for i in range(3)]
    gathered = hvd.grouped_allgather([member[me] for member in gathered_inputs], name="gag")
    for i, member in enumerate(gathered_inputs):
        assert_equal(gathered[i], torch.cat(member), f"grouped allgather {i}")
    handle = hvd.grouped_allgather_async([member[me] for member in gathered_inputs], name="gag.async")
    for i, result in enumerate(hvd.synchronize(handle)):
        assert_equal(result, torch.cat(gathered_inputs[i]), f"grouped allgather async {i}")


def test_many_allgathers_and_reducescatters_in_flight_are_fused_correctly():
    """Submitted together they are negotiated in the same cycles and fused."""
    P, me = hvd.size(), hvd.rank()
    gathers = [[data(q, ((q + i) % 3, 5), torch.float32, 50 + i) for q in range(P)] for i in range(12)]
    scatters = [[data(q, (i + 1, 2), torch.float32, 70 + i) for q in range(P)] for i in range(12)]
    handles = [hvd.allgather_async(member[me], name=f"fused.ag.{i}") for i, member in enumerate(gathers)]
    handles += [hvd.reducescatter_async(member[me], name=f"fused.rs.{i}", op=hvd.Sum)
                for i, member in enumerate(scatters)]
    results = [hvd.synchronize(h) for h in handles]
    for i, member in enumerate(gathers):
        assert_equal(results[i], torch.cat(member), f"fused allgather {i}")
    for i, member in enumerate(scatters):
        assert_close(results[12 + i], scatter_reference(member, hvd.Sum, torch.float32), torch.float32,
                     f"fused reducescatter {i}")


def test_barrier():
    for _ in range(3):
        hvd.barrier()


# --------------------------------------------------------- errors every collective shares

SUBMIT = {
    "allreduce": lambda t, n: hvd.allreduce_async(t, name=n),
    "allreduce_": lambda t, n: hvd.allreduce_async_(t.clone(), name=n),
    "allgather": lambda t, n: hvd.allgather_async(t, name=n),
    "broadcast": lambda t, n: hvd.broadcast_async(t, 0, name=n),
    "broadcast_": lambda t, n: hvd.broadcast_async_(t.clone(), 0, name=n),
    "alltoall": lambda t, n: hvd.alltoall_async(t, name=n),
    "reducescatter": lambda t, n: hvd.reducescatter_async(t, name=n),
    "grouped_allreduce": lambda t, n: hvd.grouped_allreduce_async([t], name=n),
    "grouped_allgather": lambda t, n: hvd.grouped_allgather_async([t], name=n),
    "grouped_reducescatter": lambda t, n: hvd.grouped_reducescatter_async([t], name=n),
}


@pytest.mark.parametrize("collective", list(SUBMIT))
def test_name_already_in_flight_raises_at_submission(collective):
    """The last rank submits only after a barrier, so on every other rank the first call is
    certainly still in flight when the second is submitted (the runtime completes a
    collective as soon as every rank has submitted it)."""
    if hvd.size() == 1:
        pytest.skip("needs a second rank to keep the first call in flight")
    t = torch.ones(hvd.size(), 2)
    name = f"inflight.{collective}"
    late = hvd.rank() == hvd.size() - 1
    if late:
        hvd.barrier()
    first = SUBMIT[collective](t, name)
    if not late:
        error = expect_raises(hvd.InvalidArgumentError, f"second {collective} '{name}'", SUBMIT[collective], t,
                              name)
        assert isinstance(error, ValueError), type(error).__mro__
        assert name in str(error), str(error)
        hvd.barrier()
    hvd.synchronize(first)


def test_synchronize_unknown_or_used_handle_raises():
    handle = hvd.allreduce_async(torch.ones(2), name="handle.once")
    hvd.synchronize(handle)
    expect_raises(ValueError, "used handle", hvd.synchronize, handle)
    expect_raises(ValueError, "unknown handle", hvd.synchronize, 10 ** 9)


@pytest.mark.parametrize("collective", ["allreduce", "reducescatter", "grouped_allreduce"])
def test_bool_reduction_names_the_dtype(collective):
    error = expect_raises(hvd.InvalidArgumentError, f"{collective} of bool", SUBMIT[collective],
                          torch.ones(hvd.size(), dtype=torch.bool), f"bool.{collective}")
    assert "bool" in str(error), str(error)


@pytest.mark.parametrize("dtype", [torch.bool, torch.int16], ids=dname)
def test_bool_and_int16_move(dtype):
    P, me = hvd.size(), hvd.rank()
    inputs = [data(q, (q + 1, 3), dtype, 80) for q in range(P)]
    assert_equal(hvd.allgather(inputs[me], name=f"move.ag.{dname(dtype)}"), torch.cat(inputs), "allgather")
    assert_equal(hvd.broadcast(inputs[me][:1], P - 1, name=f"move.bc.{dname(dtype)}"), inputs[P - 1][:1], "bcast")


@pytest.mark.parametrize("collective", list(SUBMIT))
def test_unsupported_dtype_names_it(collective):
    error = expect_raises(hvd.InvalidArgumentError, f"{collective} of complex64", SUBMIT[collective],
                          torch.ones(hvd.size(), dtype=torch.complex64), f"complex.{collective}")
    assert "complex64" in str(error), str(error)
