"""The out-of-place allreduce path of concord.torch (``hvd.allreduce``, ``allreduce_async``,
``grouped_allreduce``): its result comes from the output pool
(concord.torch.output_pool) and is written by the algorithm straight from the input
(the executor's single-tensor path). These tests catch regressions specific to it: the
result equals the in-place result bit for bit for every dtype and op (scale factors
included), the input is never modified, non-contiguous inputs and outputs work, a live
result (or a view of it) is never handed out again by the pool, and the pool's own
bookkeeping (reuse, capacity, small tensors) holds."""

import gc

import pytest
import torch

import concord.torch as hvd
from concord.torch.output_pool import MIN_BYTES, OutputPool
from concord_test_utils import (DTYPES, OPS, SIZES, assert_bitwise_equal, ctx, dname, large_numel, numel_of,
                                op_kind, rank_input, shape_for)



@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_out_of_place_equals_in_place(dtype, op, size, tname):
    numel = numel_of(size, dtype)
    shape = shape_for(numel)
    tensor = rank_input(hvd.rank(), shape, dtype, numel + 5, op_kind(OPS[op]))
    original = tensor.clone()
    in_place = hvd.allreduce_(tensor.clone(), name=tname + ".in", op=OPS[op])
    out = hvd.allreduce(tensor, name=tname + ".out", op=OPS[op])
    what = ctx("allreduce", dtype, shape, op=op)
    assert_bitwise_equal(tensor, original, f"{what}: the input was modified")
    assert_bitwise_equal(out, in_place, f"{what}: out of place vs in place")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32], ids=dname)
def test_scale_factors_and_average_out_of_place(dtype, tname):
    numel = large_numel(dtype)
    tensor = rank_input(hvd.rank(), (numel,), dtype, 17, "sum")
    original = tensor.clone()
    for i, (op, pre, post) in enumerate([(hvd.Sum, 2.0, 0.25), (hvd.Average, 1.0, 3.0), (hvd.Average, 0.5, 1.0)]):
        what = ctx("allreduce", dtype, (numel,), op=op, prescale=pre, postscale=post)
        in_place = hvd.allreduce_(tensor.clone(), name=f"{tname}.{i}.in", op=op, prescale_factor=pre,
                                  postscale_factor=post)
        out = hvd.allreduce(tensor, name=f"{tname}.{i}.out", op=op, prescale_factor=pre, postscale_factor=post)
        assert_bitwise_equal(tensor, original, f"{what}: the input was modified")
        assert_bitwise_equal(out, in_place, f"{what}: out of place vs in place")


def test_non_contiguous_input_and_output(tname):
    numel = large_numel(torch.float32)
    base = rank_input(hvd.rank(), (2, numel), torch.float32, 3, "sum")
    strided = base[:, ::2]  # non-contiguous input
    expected = hvd.allreduce_(strided.contiguous(), name=tname + ".ref", op=hvd.Sum)
    before = base.clone()
    out = hvd.allreduce(strided, name=tname + ".out", op=hvd.Sum)
    assert out.is_contiguous() and tuple(out.shape) == tuple(strided.shape)
    assert_bitwise_equal(out, expected, "allreduce of a non-contiguous input")
    assert_bitwise_equal(base, before, "allreduce of a non-contiguous input: the input was modified")
    # In place on a non-contiguous tensor: the result is copied back into its strides.
    target = base.clone()
    hvd.allreduce_(target[:, ::2], name=tname + ".inplace", op=hvd.Sum)
    assert_bitwise_equal(target[:, ::2], expected, "in-place allreduce of a non-contiguous tensor")
    assert_bitwise_equal(target[:, 1::2], before[:, 1::2], "in-place allreduce: the other columns changed")


def test_live_results_and_views_are_never_reused(tname):
    numel = (4 * MIN_BYTES) // 4 + 3
    a = torch.full((numel,), 1.0)
    b = torch.full((numel,), 2.0)
    size = hvd.size()
    first = hvd.allreduce(a, name=tname + ".a", op=hvd.Sum)
    view = hvd.allreduce(b, name=tname + ".b", op=hvd.Sum)[::3]  # only a view survives
    gc.collect()
    for i in range(3):  # same size: would reuse the blocks of first and view if they were freed
        hvd.allreduce(torch.full((numel,), 7.0), name=f"{tname}.c{i}", op=hvd.Sum)
    assert torch.all(first == size * 1.0), "a live result was overwritten by a later allreduce"
    assert torch.all(view == size * 2.0), "a live view of a result was overwritten by a later allreduce"
    del first, view
    gc.collect()
    again = hvd.allreduce(b, name=tname + ".d", op=hvd.Sum)  # may reuse a released block
    assert torch.all(again == size * 2.0), "an allreduce into a reused block is wrong"


def test_grouped_out_of_place_equals_in_place(tname):
    tensors = [rank_input(hvd.rank(), shape_for(numel_of(s, torch.float32)), torch.float32, i, "sum")
               for i, s in enumerate(SIZES)]
    originals = [t.clone() for t in tensors]
    in_place = hvd.grouped_allreduce_([t.clone() for t in tensors], name=tname + ".in", op=hvd.Sum)
    outs = hvd.grouped_allreduce(tensors, name=tname + ".out", op=hvd.Sum)
    for t, original, o, ip in zip(tensors, originals, outs, in_place):
        assert_bitwise_equal(t, original, "grouped allreduce: an input was modified")
        assert_bitwise_equal(o, ip, "grouped allreduce: out of place vs in place")


# ----------------------------------------------------------------------------------------
# OutputPool bookkeeping (no collectives)


def test_pool_reuses_released_blocks_of_the_same_size():
    pool = OutputPool(capacity=8 * MIN_BYTES)
    like = torch.empty(MIN_BYTES // 4 + 1, dtype=torch.float32)
    first = pool.empty_like(like)
    assert first.shape == like.shape and first.dtype == like.dtype and first.is_contiguous()
    address = first.data_ptr()
    assert pool.free_bytes == 0
    del first
    gc.collect()
    assert pool.free_bytes == like.numel() * 4, "a released result did not return to the pool"
    second = pool.empty_like(like)
    assert second.data_ptr() == address, "the released block was not reused"
    assert pool.free_bytes == 0
    other = pool.empty_like(torch.empty((2, MIN_BYTES // 8 + 1), dtype=torch.float64))
    assert other.data_ptr() != address and other.shape == (2, MIN_BYTES // 8 + 1)


def test_pool_block_returns_only_when_the_last_view_of_its_result_dies():
    pool = OutputPool(capacity=4 * MIN_BYTES)
    like = torch.empty((4, MIN_BYTES // 16), dtype=torch.float32)
    block = pool.take(like)
    result = pool.wrap(block, like)
    assert result.data_ptr() == block.address and result.shape == like.shape and result.dtype == like.dtype
    result.fill_(3.0)  # the block is writable memory of exactly the result's size
    assert len(block) == like.numel() * 4
    del block
    row = result[2]
    del result
    gc.collect()
    assert pool.free_bytes == 0, "the block returned to the pool while a view of its result was alive"
    assert torch.all(row == 3.0)
    del row
    gc.collect()
    assert pool.free_bytes == like.numel() * 4, "the block did not return once its last view died"
    assert pool.take(torch.empty(3)) is None and pool.take(torch.empty(1 << 20, device="meta")) is None


def test_pool_keeps_at_most_its_capacity_and_skips_small_tensors():
    pool = OutputPool(capacity=3 * MIN_BYTES)
    results = [pool.empty_like(torch.empty(MIN_BYTES, dtype=torch.uint8)) for _ in range(5)]
    del results
    gc.collect()
    assert pool.free_bytes == 3 * MIN_BYTES, f"pool keeps {pool.free_bytes} bytes, capacity {3 * MIN_BYTES}"
    small = pool.empty_like(torch.empty(16, dtype=torch.int8))
    del small
    gc.collect()
    assert pool.free_bytes == 3 * MIN_BYTES, "a small tensor went through the pool"
    disabled = OutputPool(capacity=0)
    result = disabled.empty_like(torch.empty(MIN_BYTES, dtype=torch.uint8))
    del result
    gc.collect()
    assert disabled.free_bytes == 0
    pool.clear()
    assert pool.free_bytes == 0
