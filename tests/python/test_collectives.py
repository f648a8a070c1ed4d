"""allreduce / allgather / broadcast of concord.torch, every form (blocking, in-place,
async + poll/synchronize), every supported dtype, against references built locally from
every rank's deterministic input (concord_test_utils.rank_input). Every result is also
checked to be bit-identical on all ranks (allgather of its bytes)."""

import functools
import itertools
import threading

import numpy as np
import pytest
import torch

import concord.torch as hvd
from concord_test_utils import (DTYPES, EPS, INT_DTYPES, OPS, assert_bitwise_equal,
                                SIZES, assert_same_on_all_ranks, assert_values, ctx, dname, large_numel,
                                numel_of, op_kind, poll_until_done, rank_input, reference_allreduce, shape_for)

ALLREDUCE_FORMS = ["allreduce", "allreduce_", "allreduce_async", "allreduce_async_"]
BROADCAST_FORMS = ["broadcast", "broadcast_", "broadcast_async", "broadcast_async_"]
IN_PLACE = {"allreduce_", "allreduce_async_", "broadcast_", "broadcast_async_"}


@functools.lru_cache(maxsize=48)
def _cached_input(rank, shape, dtype, seed, kind):
    return rank_input(rank, shape, dtype, seed, kind)


def inputs_of_all_ranks(shape, dtype, seed, kind):
    """Every rank's input (read-only: clone before handing one to an in-place collective)."""
    return [_cached_input(q, shape, dtype, seed, kind) for q in range(hvd.size())]


def run_allreduce(form, tensor, name, **kwargs):
    """Run one allreduce form; returns (result, polled) where polled says whether poll()
    reported completion (True for the blocking forms)."""
    if form == "allreduce":
        return hvd.allreduce(tensor, name=name, **kwargs), True
    if form == "allreduce_":
        return hvd.allreduce_(tensor, name=name, **kwargs), True
    start = hvd.allreduce_async if form == "allreduce_async" else hvd.allreduce_async_
    handle = start(tensor, name=name, **kwargs)
    polled = poll_until_done(handle, name)
    return hvd.synchronize(handle), polled


def run_broadcast(form, tensor, root, name):
    if form == "broadcast":
        return hvd.broadcast(tensor, root, name=name), True
    if form == "broadcast_":
        return hvd.broadcast_(tensor, root, name=name), True
    start = hvd.broadcast_async if form == "broadcast_async" else hvd.broadcast_async_
    handle = start(tensor, root, name=name)
    polled = poll_until_done(handle, name)
    return hvd.synchronize(handle), polled


def check_form(form, tensor, original, result, what, polled):
    """The result is the input object for in-place forms and a new tensor (input left
    unchanged) for the others; async forms saw poll() return True."""
    assert polled, f"{what}: poll() never returned True within 60 s"
    if form in IN_PLACE:
        assert result is tensor, f"{what}: the in-place form returned a different tensor object"
    else:
        assert result is not tensor, f"{what}: the out-of-place form returned its input object"
        assert_bitwise_equal(tensor, original, f"{what}: the input tensor was modified")
    assert result.dtype == original.dtype, f"{what}: result dtype {result.dtype}"
    assert tuple(result.shape) == tuple(original.shape), f"{what}: result shape {tuple(result.shape)}"


# ----------------------------------------------------------------------------------------
# allreduce


def grid(*axes, ids):
    """pytest.param for every combination of the axes, the LAST axis varying slowest, so
    consecutive tests share inputs (and the cached references); ids(*values) names one."""
    return [pytest.param(*reversed(combo), id=ids(*reversed(combo)))
            for combo in itertools.product(*reversed(axes))]


@functools.lru_cache(maxsize=16)
def cached_reference(shape, dtype, seed, op):
    """reference_allreduce of inputs_of_all_ranks (shared by the four forms)."""
    inputs = inputs_of_all_ranks(shape, dtype, seed, op_kind(OPS[op]))
    return reference_allreduce(inputs, dtype, OPS[op])


@pytest.mark.parametrize("form,op,size,dtype", grid(ALLREDUCE_FORMS, list(OPS), SIZES, DTYPES,
                                                     ids=lambda f, o, s, d: f"{f}-{dname(d)}-{o}-{s}"))
def test_allreduce(form, op, size, dtype, tname):
    numel = numel_of(size, dtype)
    shape = shape_for(numel, dims=3)
    inputs = inputs_of_all_ranks(shape, dtype, numel, op_kind(OPS[op]))
    tensor = inputs[hvd.rank()].clone()
    if form == "allreduce_async_":
        # In place on a contiguous tensor the result is written straight into it, so once
        # poll() says done it must already be there, before synchronize().
        handle = hvd.allreduce_async_(tensor, name=tname, op=OPS[op])
        polled = poll_until_done(handle, tname)
        at_poll = tensor.clone()
        result = hvd.synchronize(handle)
    else:
        result, polled = run_allreduce(form, tensor, tname, op=OPS[op])
    what = ctx(form, dtype, shape, op=op)
    assert_same_on_all_ranks(result, tname, what)

    check_form(form, tensor, inputs[hvd.rank()], result, what, polled)
    if form == "allreduce_async_":
        assert_bitwise_equal(at_poll, result,
                             f"{what}: tensor when poll() first returned True vs after synchronize()")
    expected, tolerance = cached_reference(shape, dtype, numel, op)
    assert_values(result, expected, tolerance, what)


@pytest.mark.parametrize("scales", [(0.5, 3.0), (2.0, 0.5)], ids=lambda s: f"pre{s[0]}-post{s[1]}")
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("form", ["allreduce", "allreduce_async_"])
def test_allreduce_prescale_postscale(form, op, dtype, scales, tname):
    """result = postscale * op(trunc/round(prescale * x_r)) (Average: postscale / size)."""
    prescale, postscale = scales
    shape = (3, 11, 31)
    inputs = inputs_of_all_ranks(shape, dtype, 77, op_kind(OPS[op]))
    tensor = inputs[hvd.rank()].clone()
    result, polled = run_allreduce(form, tensor, tname, op=OPS[op], prescale_factor=prescale,
                                   postscale_factor=postscale)
    what = ctx(form, dtype, shape, op=op, prescale=prescale, postscale=postscale)
    assert_same_on_all_ranks(result, tname, what)

    check_form(form, tensor, inputs[hvd.rank()], result, what, polled)
    expected, tolerance = reference_allreduce(inputs, dtype, OPS[op], prescale, postscale)
    assert_values(result, expected, tolerance, what)


def test_allreduce_async_in_place_fast_and_general_paths_agree(tname):
    """allreduce_async_ handles a contiguous CPU tensor on the global process set in one
    frame (default op Average, the set passed explicitly); a non-contiguous tensor with
    ``average=True`` takes the general path. Both return their own tensor holding the
    average of every rank's input."""
    shape = (6, 10)
    inputs = inputs_of_all_ranks(shape, torch.float32, 3, "sum")
    fast = inputs[hvd.rank()].clone()
    general = inputs[hvd.rank()].t().contiguous().t()  # the same values, not contiguous
    assert not general.is_contiguous()
    fast_handle = hvd.allreduce_async_(fast, name=tname + ".fast", process_set=hvd.global_process_set)
    general_handle = hvd.allreduce_async_(general, name=tname + ".general", average=True)
    assert hvd.synchronize(fast_handle) is fast, f"rank {hvd.rank()}: the fast path returned another tensor"
    assert hvd.synchronize(general_handle) is general, f"rank {hvd.rank()}: the general path returned another tensor"
    expected, tolerance = reference_allreduce(inputs, torch.float32, hvd.Average)
    assert_values(fast, expected, tolerance, ctx("allreduce_async_ (fast path)", torch.float32, shape, op="Average"))
    assert_values(general, expected, tolerance,
                  ctx("allreduce_async_ (general path)", torch.float32, shape, op="Average"))
    with pytest.raises(ValueError, match="unknown op"):
        hvd.allreduce_async_(fast, name=tname + ".badop", op=99)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=dname)
@pytest.mark.parametrize("op", ["Sum", "Min", "Max", "Product"])
def test_allreduce_integer_full_range(op, dtype, tname):
    """Any bit pattern: exact integer arithmetic (no detour through double; int64 beyond
    2^53), sums and products wrapping around modulo 2^bits."""
    shape = (4, 257)
    inputs = inputs_of_all_ranks(shape, dtype, 5, "bytes")
    result = hvd.allreduce(inputs[hvd.rank()], name=tname, op=OPS[op])
    what = ctx("allreduce", dtype, shape, op=op, values="full range")
    assert_same_on_all_ranks(result, tname, what)
    expected, tolerance = reference_allreduce(inputs, dtype, OPS[op])
    assert_values(result, expected, tolerance, what)


LAYOUTS = {
    "transposed": lambda base: base.t(),           # (5, 7) view of a (7, 5) tensor
    "strided": lambda base: base[:, ::2],          # every other column
    "offset": lambda base: base[2:],               # contiguous, nonzero storage offset
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("op", ["Sum", "Max"])
@pytest.mark.parametrize("form", ALLREDUCE_FORMS)
def test_allreduce_non_contiguous(form, op, dtype, layout, tname):
    """Views: the out-of-place forms leave the view and its base alone; the in-place forms
    write the result through the view (same strides) and nothing else of the base."""
    bases = inputs_of_all_ranks((7, 5), dtype, 11, "sum")
    base = bases[hvd.rank()].clone()
    view = LAYOUTS[layout](base)
    strides = view.stride()
    original_view = view.clone()
    original_base = base.clone()
    result, polled = run_allreduce(form, view, tname, op=OPS[op])
    what = ctx(form, dtype, tuple(view.shape), op=op, layout=layout)
    assert_same_on_all_ranks(result, tname, what)

    check_form(form, view, original_view, result, what, polled)
    expected, tolerance = reference_allreduce([LAYOUTS[layout](b) for b in bases], dtype, OPS[op])
    assert_values(result, expected, tolerance, what)
    if form in IN_PLACE:
        assert view.stride() == strides, f"{what}: the view's strides changed to {view.stride()}"
        outside = torch.ones_like(base, dtype=torch.bool)
        LAYOUTS[layout](outside).fill_(False)
        assert_bitwise_equal(base[outside], original_base[outside],
                             f"{what}: elements of the base tensor outside the view")
    else:
        assert result.is_contiguous(), f"{what}: out-of-place result is not contiguous"
        assert_bitwise_equal(base, original_base, f"{what}: the base tensor was modified")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int32], ids=dname)
@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_allreduce_compression_fp16(op, dtype, tname):
    """Compression.fp16: float32/float64 travel as float16 (result within float16 rounding,
    dtype restored); float16 and integer tensors pass unchanged (exact)."""
    shape = (3, 341)
    inputs = inputs_of_all_ranks(shape, dtype, 23, "sum")
    result = hvd.allreduce(inputs[hvd.rank()], name=tname, op=OPS[op], compression=hvd.Compression.fp16)
    what = ctx("allreduce(compression=fp16)", dtype, shape, op=op)
    assert_same_on_all_ranks(result, tname, what)

    assert result.dtype == dtype, f"{what}: result dtype {result.dtype}, expected the input's {dtype}"
    expected, tolerance = reference_allreduce(inputs, dtype, OPS[op])
    if dtype in (torch.float32, torch.float64):
        magnitude = sum(np.abs(x.to(torch.float64).numpy().reshape(-1)) for x in inputs)
        post = 1.0 / hvd.size() if op == "Average" else 1.0
        tolerance = EPS[torch.float16] * (hvd.size() + 3) * magnitude * post
        # The values travelled as float16, so each is a float16 value cast back.
        assert_bitwise_equal(result, result.to(torch.float16).to(dtype),
                             f"{what}: result is not float16-representable (compression not applied?)")
    assert_values(result, expected, tolerance, what)


@pytest.mark.parametrize("how", ["default", "average=True", "average=False"])
def test_allreduce_default_and_deprecated_average(how, tname):
    """No op means Average; the deprecated average=True/False mean Average/Sum."""
    kwargs = {"default": {}, "average=True": {"average": True}, "average=False": {"average": False}}[how]
    shape = (64,)
    inputs = inputs_of_all_ranks(shape, torch.float64, 3, "sum")
    result = hvd.allreduce(inputs[hvd.rank()], name=tname, **kwargs)
    op = hvd.Sum if how == "average=False" else hvd.Average
    what = ctx(f"allreduce({how})", torch.float64, shape)
    expected, tolerance = reference_allreduce(inputs, torch.float64, op)
    assert_values(result, expected, tolerance, what)


def test_allreduce_scalar(tname):
    """A 0-d tensor is reduced like a one-element tensor and stays 0-d."""
    value = torch.tensor(float(hvd.rank() + 1), dtype=torch.float64)
    result = hvd.allreduce(value, name=tname, op=hvd.Sum)
    what = ctx("allreduce", torch.float64, ())
    assert result.dim() == 0, f"{what}: result shape {tuple(result.shape)}"
    expected = hvd.size() * (hvd.size() + 1) / 2
    assert result.item() == expected, f"{what}: element 0 is {result.item()}, expected {expected}"


def test_many_in_flight(tname):
    """Many collectives in flight at once -- allreduces of every dtype and op in several
    sizes (0 included), allgathers and broadcasts -- submitted in a rank-dependent order and
    synchronized in another: negotiation matches them by name, and fusion packs the
    allreduces together without mixing up their data."""
    p = hvd.size()
    cases = [("allreduce", dtype, op, numel) for dtype in DTYPES for op in OPS for numel in (0, 1, 7, 300)]
    cases += [("allgather", dtype, None, 3) for dtype in DTYPES]
    cases += [("broadcast", dtype, None, 33) for dtype in DTYPES]
    order = list(range(len(cases)))
    if hvd.rank() % 2:
        order.reverse()
    shift = (7 * hvd.rank()) % len(order)
    order = order[shift:] + order[:shift]

    def inputs(i, rank):
        collective, dtype, op, numel = cases[i]
        if collective == "allreduce":
            return _cached_input(rank, (numel,), dtype, 100 + i, op_kind(OPS[op]))
        rows = rank + 1 if collective == "allgather" else numel
        return _cached_input(rank, (rows, 2), dtype, 100 + i, "bytes")

    handles = {}
    for i in order:
        collective, dtype, op, numel = cases[i]
        tensor = inputs(i, hvd.rank()).clone()
        name = f"{tname}.{i}"
        if collective == "allreduce":
            handles[i] = hvd.allreduce_async_(tensor, name=name, op=OPS[op])
        elif collective == "allgather":
            handles[i] = hvd.allgather_async(tensor, name=name)
        else:
            handles[i] = hvd.broadcast_async_(tensor, i % p, name=name)
    results = {i: hvd.synchronize(handles[i]) for i in sorted(handles, key=lambda i: (i * 31) % len(cases))}
    for i, (collective, dtype, op, numel) in enumerate(cases):
        what = ctx(f"{collective} (one of {len(cases)} in flight)", dtype, tuple(inputs(i, hvd.rank()).shape),
                   op=op, name=f"{tname}.{i}")
        if collective == "allreduce":
            expected, tolerance = reference_allreduce([inputs(i, q) for q in range(p)], dtype, OPS[op])
            assert_values(results[i], expected, tolerance, what)
        elif collective == "allgather":
            assert_bitwise_equal(results[i], torch.cat([inputs(i, q) for q in range(p)]), what)
        else:
            assert_bitwise_equal(results[i], inputs(i, i % p), what + f" root={i % p}")


def test_collectives_from_several_threads(tname):
    """Four Python threads each run their own sequence of allreduces and allgathers (names
    unique per thread); the threads interleave differently on each rank."""
    p = hvd.size()
    threads_n, calls = 4, 12
    results = {}
    errors = []

    def work(t):
        try:
            for k in range(calls):
                x = _cached_input(hvd.rank(), (50,), torch.float64, 500 + 100 * t + k, "sum")
                results[(t, k, "allreduce")] = hvd.allreduce(x, name=f"{tname}.t{t}.{k}", op=hvd.Sum)
                g = torch.full((t + 1,), float(hvd.rank() * 1000 + t * 10 + k))
                results[(t, k, "allgather")] = hvd.allgather(g, name=f"{tname}.t{t}.{k}.gather")
        except Exception as error:  # noqa: BLE001 - reported below, after all threads joined
            errors.append(f"thread {t}: {type(error).__name__}: {error}")

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(w.is_alive() for w in workers), f"rank {hvd.rank()}: collectives from threads did not finish"
    assert not errors, f"rank {hvd.rank()}: " + "; ".join(errors)
    for t in range(threads_n):
        for k in range(calls):
            inputs = [_cached_input(q, (50,), torch.float64, 500 + 100 * t + k, "sum") for q in range(p)]
            expected, tolerance = reference_allreduce(inputs, torch.float64, hvd.Sum)
            assert_values(results[(t, k, "allreduce")], expected, tolerance,
                          ctx(f"allreduce from thread {t} call {k}", torch.float64, (50,), op="Sum"))
            expected = np.repeat([q * 1000 + t * 10 + k for q in range(p)], t + 1).astype(np.float64)
            assert_values(results[(t, k, "allgather")], expected, 0,
                          ctx(f"allgather from thread {t} call {k}", torch.float32, (t + 1,)))


def test_rank_and_size():
    """rank() is distinct on every rank and covers [0, size()); size() agrees everywhere;
    0 <= local_rank() < local_size() <= size()."""
    mine = torch.tensor([[hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size()]], dtype=torch.int64)
    rows = hvd.allgather(mine, name="test_rank_and_size")
    what = f"rank {hvd.rank()}/{hvd.size()} allgather of (rank, size, local_rank, local_size)"
    assert sorted(rows[:, 0].tolist()) == list(range(hvd.size())), f"{what}: ranks {rows[:, 0].tolist()}"
    assert rows[:, 1].tolist() == [hvd.size()] * hvd.size(), f"{what}: sizes {rows[:, 1].tolist()}"
    assert 0 <= hvd.local_rank() < hvd.local_size() <= hvd.size(), \
        f"{what}: local_rank {hvd.local_rank()} local_size {hvd.local_size()}"


def test_unnamed_collectives_match_by_call_order():
    """Without a name, the n-th unnamed call of a kind matches the n-th on other ranks."""
    results = [hvd.allreduce(torch.full((5,), float(hvd.rank() + k)), op=hvd.Sum) for k in range(3)]
    gathered = hvd.allgather(torch.tensor([hvd.rank()], dtype=torch.int32))
    broadcasted = hvd.broadcast(torch.tensor([hvd.rank()], dtype=torch.int64), 0)
    p = hvd.size()
    for k, result in enumerate(results):
        expected = np.full(5, p * (p - 1) / 2 + p * k)
        assert_values(result, expected, 0, ctx(f"allreduce (unnamed call {k})", torch.float32, (5,), op="Sum"))
    assert_values(gathered, np.arange(p), 0, ctx("allgather (unnamed)", torch.int32, (1,)))
    assert_values(broadcasted, np.zeros(1, dtype=np.int64), 0, ctx("broadcast (unnamed)", torch.int64, (1,)))


# ----------------------------------------------------------------------------------------
# allgather

ROWS = {"rank_mod_3": lambda r: r % 3,   # rank 0 (and 3, 6, ...) contributes no rows
        "rank_plus_1": lambda r: r + 1}
TRAILING = [(), (3,), (2, 5)]


def run_allgather(form, tensor, name):
    if form == "allgather":
        return hvd.allgather(tensor, name=name), True
    handle = hvd.allgather_async(tensor, name=name)
    polled = poll_until_done(handle, name)
    return hvd.synchronize(handle), polled


@pytest.mark.parametrize("trailing", TRAILING, ids=lambda t: "x".join(map(str, t)) or "1d")
@pytest.mark.parametrize("rows", list(ROWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("form", ["allgather", "allgather_async"])
def test_allgather(form, dtype, rows, trailing, tname):
    """Concatenation along dim 0 in rank order; dim 0 differs per rank (0 rows allowed)."""
    shapes = [(ROWS[rows](q),) + trailing for q in range(hvd.size())]
    inputs = [_cached_input(q, shapes[q], dtype, 31, "bytes") for q in range(hvd.size())]
    tensor = inputs[hvd.rank()].clone()
    result, polled = run_allgather(form, tensor, tname)
    what = ctx(form, dtype, shapes[hvd.rank()], rows=rows)
    assert_same_on_all_ranks(result, tname, what)

    assert polled, f"{what}: poll() never returned True within 60 s"
    assert_bitwise_equal(tensor, inputs[hvd.rank()], f"{what}: the input tensor was modified")
    assert_bitwise_equal(result, torch.cat(inputs), what)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_allgather_large(dtype, tname):
    """More than 1 MiB gathered, an odd number of rows per rank."""
    row = 9
    per_rank = large_numel(dtype) // row // hvd.size()
    shapes = [(per_rank + 2 * q + 1, row) for q in range(hvd.size())]
    inputs = [_cached_input(q, shapes[q], dtype, 41, "bytes") for q in range(hvd.size())]
    result = hvd.allgather(inputs[hvd.rank()], name=tname)
    what = ctx("allgather", dtype, shapes[hvd.rank()])
    assert_same_on_all_ranks(result, tname, what)
    assert_bitwise_equal(result, torch.cat(inputs), what)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_allgather_non_contiguous(dtype, tname):
    """A transposed input ((r+1, 3) view of a (3, r+1) tensor) is gathered by value."""
    bases = [_cached_input(q, (3, q + 1), dtype, 43, "bytes") for q in range(hvd.size())]
    view = bases[hvd.rank()].t()
    result = hvd.allgather(view, name=tname)
    what = ctx("allgather", dtype, tuple(view.shape), layout="transposed")
    assert_same_on_all_ranks(result, tname, what)
    assert_bitwise_equal(result, torch.cat([b.t() for b in bases]), what)


# ----------------------------------------------------------------------------------------
# broadcast


@pytest.mark.parametrize("form,size,dtype", grid(BROADCAST_FORMS, [0, 1, 1023, "large"], DTYPES,
                                                  ids=lambda f, s, d: f"{f}-{dname(d)}-{s}"))
def test_broadcast(form, size, dtype, tname):
    """From every root in turn: every rank ends up with the root's tensor."""
    numel = numel_of(size, dtype)
    shape = shape_for(numel, dims=3)
    runs = []
    for root in range(hvd.size()):
        mine = _cached_input(hvd.rank(), shape, dtype, 1000 + root, "bytes")
        tensor = mine.clone()
        name = f"{tname}.root{root}"
        result, polled = run_broadcast(form, tensor, root, name)
        what = ctx(form, dtype, shape, root=root)
        assert_same_on_all_ranks(result, name, what)
        runs.append((root, mine, tensor, result, polled, what))
    for root, mine, tensor, result, polled, what in runs:
        check_form(form, tensor, mine, result, what, polled)
        assert_bitwise_equal(result, _cached_input(root, shape, dtype, 1000 + root, "bytes"), what)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("form", ["broadcast", "broadcast_"])
def test_broadcast_non_contiguous(form, dtype, tname):
    """A transposed view: broadcast_ writes the root's values through the view."""
    runs = []
    for root in range(hvd.size()):
        bases = inputs_of_all_ranks((7, 5), dtype, 2000 + root, "bytes")
        base = bases[hvd.rank()].clone()
        view = base.t()
        original = view.clone()
        name = f"{tname}.root{root}"
        result, polled = run_broadcast(form, view, root, name)
        what = ctx(form, dtype, tuple(view.shape), root=root, layout="transposed")
        assert_same_on_all_ranks(result, name, what)
        runs.append((root, bases, view, original, result, polled, what))
    for root, bases, view, original, result, polled, what in runs:
        check_form(form, view, original, result, what, polled)
        assert_bitwise_equal(result, bases[root].t(), what)
        if form == "broadcast_":
            assert view.stride() == (1, 5), f"{what}: the view's strides changed to {view.stride()}"


def test_broadcast_scalar(tname):
    """A 0-d tensor is broadcast (and stays 0-d)."""
    results = []
    for root in range(hvd.size()):
        value = torch.tensor(10 * hvd.rank() + 1, dtype=torch.int64)
        results.append(hvd.broadcast_(value, root, name=f"{tname}.root{root}"))
    for root, result in enumerate(results):
        what = ctx("broadcast_", torch.int64, (), root=root)
        assert result.dim() == 0, f"{what}: result shape {tuple(result.shape)}"
        assert result.item() == 10 * root + 1, f"{what}: element 0 is {result.item()}, expected {10 * root + 1}"
