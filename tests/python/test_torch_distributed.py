"""torch.distributed collectives on the ``"concord"`` backend, as PyTorch tests its own
backends: every collective of torch 1.13's ProcessGroup API at the suite's world size, for
every reduce op and dtype, against references every rank computes from every rank's
deterministic input (concord_test_utils.rank_input); async calls and futures; point to
point; errors and timeouts.
"""

import datetime
import time

import numpy as np
import pytest
import torch
import torch.distributed as dist

import concord.torch as hvd
from concord import _core
from concord._core import InvalidArgumentError
from concord.torch.c10d_backend import ConcordBackend
from concord_test_utils import DTYPES, FLOAT_DTYPES, INT_DTYPES, assert_values, dname, rank_input, reference_allreduce
from torch_distributed_utils import where, world  # noqa: F401  (world: a fixture)

R = dist.ReduceOp
CONCORD_OF = {R.SUM: hvd.Sum, R.AVG: hvd.Average, R.MIN: hvd.Min, R.MAX: hvd.Max, R.PRODUCT: hvd.Product}
SHAPE = (3, 5)


def _inputs(shape, dtype, seed, kind="sum"):
    return [rank_input(r, shape, dtype, seed, kind) for r in range(dist.get_world_size())]


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
@pytest.mark.parametrize("op", [R.SUM, R.AVG, R.MIN, R.MAX, R.PRODUCT], ids=lambda o: str(o.op).split(".")[-1])
def test_all_reduce_every_op_and_dtype(world, dtype, op):
    kind = "product" if op == R.PRODUCT else "sum"
    inputs = _inputs(SHAPE, dtype, 11, kind)
    tensor = inputs[dist.get_rank()].clone()
    dist.all_reduce(tensor, op=op)
    expected, tolerance = reference_allreduce(inputs, dtype, CONCORD_OF[op])
    assert_values(tensor, expected, tolerance, where("all_reduce", op=op.op, dtype=dname(dtype), shape=SHAPE))


@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.bool], ids=dname)
@pytest.mark.parametrize("op,fold", [(R.BAND, np.bitwise_and), (R.BOR, np.bitwise_or), (R.BXOR, np.bitwise_xor)],
                         ids=["BAND", "BOR", "BXOR"])
def test_all_reduce_bitwise(world, dtype, op, fold):
    inputs = ([rank_input(r, SHAPE, torch.uint8, 12, "bytes") % 2 == 1 for r in range(dist.get_world_size())]
              if dtype == torch.bool else _inputs(SHAPE, dtype, 12, "bytes"))
    tensor = inputs[dist.get_rank()].clone()
    dist.all_reduce(tensor, op=op)
    expected = fold.reduce(np.stack([x.numpy() for x in inputs]), axis=0)
    assert np.array_equal(tensor.numpy(), expected), where("all_reduce", op=op.op, dtype=dname(dtype))


@pytest.mark.parametrize("op", [R.SUM, R.MAX, R.MIN, R.PRODUCT], ids=lambda o: str(o.op).split(".")[-1])
def test_all_reduce_bool(world, op):
    inputs = [rank_input(r, SHAPE, torch.uint8, 13, "bytes") % 3 != 0 for r in range(dist.get_world_size())]
    tensor = inputs[dist.get_rank()].clone()
    dist.all_reduce(tensor, op=op)
    stacked = np.stack([x.numpy() for x in inputs])
    expected = stacked.any(axis=0) if op in (R.SUM, R.MAX) else stacked.all(axis=0)
    assert np.array_equal(tensor.numpy(), expected), where("all_reduce bool", op=op.op)


@pytest.mark.parametrize("op", [R.SUM, R.AVG], ids=["SUM", "AVG"])
def test_all_reduce_complex_and_non_contiguous(world, op):
    inputs = [torch.complex(rank_input(r, SHAPE, torch.float64, 14), rank_input(r, SHAPE, torch.float64, 15))
              for r in range(dist.get_world_size())]
    tensor = inputs[dist.get_rank()].clone()
    dist.all_reduce(tensor, op=op)
    expected = sum(inputs) / (dist.get_world_size() if op == R.AVG else 1)
    assert torch.allclose(tensor, expected, rtol=1e-12, atol=1e-12), where("all_reduce complex", op=op.op)
    strided = torch.zeros(SHAPE[0], 2 * SHAPE[1])[:, ::2]  # every other column
    strided.copy_(_inputs(SHAPE, torch.float32, 16)[dist.get_rank()])
    assert not strided.is_contiguous()
    dist.all_reduce(strided)
    expected = sum(_inputs(SHAPE, torch.float32, 16))
    assert torch.allclose(strided, expected, rtol=1e-5), where("all_reduce non-contiguous")


def test_all_reduce_coalesced(world):
    inputs = [_inputs((n,), torch.float64, 20 + n) for n in (1, 7, 100)]
    tensors = [member[dist.get_rank()].clone() for member in inputs]
    dist.all_reduce_coalesced(tensors, op=R.SUM)
    for member, tensor in zip(inputs, tensors):
        expected, tolerance = reference_allreduce(member, torch.float64, hvd.Sum)
        assert_values(tensor, expected, tolerance, where("all_reduce_coalesced", numel=tensor.numel()))


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool, torch.complex64], ids=dname)
def test_broadcast_every_root(world, dtype):
    for root in range(dist.get_world_size()):
        inputs = [rank_input(r, SHAPE, torch.float32, 30 + root, "bytes").to(dtype)
                  for r in range(dist.get_world_size())]
        tensor = inputs[dist.get_rank()].clone()
        dist.broadcast(tensor, root)
        assert torch.equal(tensor, inputs[root]), where("broadcast", root=root, dtype=dname(dtype))


@pytest.mark.parametrize("dtype", DTYPES + [torch.bool, torch.complex128], ids=dname)
def test_all_gather_forms(world, dtype):
    size, rank = dist.get_world_size(), dist.get_rank()
    inputs = [rank_input(r, SHAPE, torch.float64, 40, "bytes").to(dtype) for r in range(size)]
    outputs = [torch.empty(SHAPE, dtype=dtype) for _ in range(size)]
    dist.all_gather(outputs, inputs[rank])
    flat_output = torch.empty((size * SHAPE[0], SHAPE[1]), dtype=dtype)
    dist.all_gather_into_tensor(flat_output, inputs[rank])
    second = [x.reshape(-1)[:4] + 0 if dtype != torch.bool else x.reshape(-1)[:4] for x in inputs]
    lists = [[torch.empty(SHAPE, dtype=dtype), torch.empty(4, dtype=dtype)] for _ in range(size)]
    dist.all_gather_coalesced(lists, [inputs[rank], second[rank]])
    for r in range(size):
        what = where("all_gather", dtype=dname(dtype), source=r)
        assert torch.equal(outputs[r], inputs[r]), what
        assert torch.equal(flat_output[r * SHAPE[0]:(r + 1) * SHAPE[0]], inputs[r]), "into_tensor " + what
        assert torch.equal(lists[r][0], inputs[r]) and torch.equal(lists[r][1], second[r]), "coalesced " + what


def test_gather_scatter_reduce_every_root(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    inputs = _inputs(SHAPE, torch.float64, 50)
    for root in range(size):
        gathered = [torch.empty(SHAPE, dtype=torch.float64) for _ in range(size)] if rank == root else None
        dist.gather(inputs[rank], gathered, dst=root)
        received = torch.empty(SHAPE, dtype=torch.float64)
        dist.scatter(received, [x * (root + 1) for x in inputs] if rank == root else None, src=root)
        reduced = inputs[rank].clone()
        dist.reduce(reduced, dst=root, op=R.MAX)
        if rank == root:
            for r in range(size):
                assert torch.equal(gathered[r], inputs[r]), where("gather", root=root, source=r)
            assert torch.equal(reduced, torch.stack(inputs).max(dim=0).values), where("reduce MAX", root=root)
        else:
            assert torch.equal(reduced, inputs[rank]), where("reduce left a non-root's tensor changed", root=root)
        assert torch.equal(received, inputs[rank] * (root + 1)), where("scatter", root=root)


@pytest.mark.parametrize("op", [R.SUM, R.AVG, R.MAX, R.PRODUCT], ids=lambda o: str(o.op).split(".")[-1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int32], ids=dname)
def test_reduce_scatter_forms(world, op, dtype):
    size, rank = dist.get_world_size(), dist.get_rank()
    kind = "product" if op == R.PRODUCT else "sum"
    chunks = [[rank_input(r, (4,), dtype, 60 + j, kind) for j in range(size)] for r in range(size)]
    output = torch.empty(4, dtype=dtype)
    dist.reduce_scatter(output, chunks[rank], op=op)
    base_output = torch.empty(4, dtype=dtype)
    dist.reduce_scatter_tensor(base_output, torch.cat(chunks[rank]), op=op)
    expected, tolerance = reference_allreduce([chunks[r][rank] for r in range(size)], dtype, CONCORD_OF[op])
    assert_values(output, expected, tolerance, where("reduce_scatter", op=op.op, dtype=dname(dtype)))
    assert_values(base_output, expected, tolerance, where("reduce_scatter_tensor", op=op.op, dtype=dname(dtype)))


@pytest.mark.parametrize("uneven", [False, True], ids=["equal", "uneven"])
def test_all_to_all(world, uneven):
    size, rank = dist.get_world_size(), dist.get_rank()
    rows = (lambda s, d: (s + 2 * d) % 3) if uneven else (lambda s, d: 2)  # rows rank s sends rank d

    def block(s, d):
        return torch.arange(rows(s, d) * 3, dtype=torch.float32).reshape(-1, 3) + 1000 * s + 100 * d

    source = torch.cat([block(rank, d) for d in range(size)])
    output = torch.empty((sum(rows(s, rank) for s in range(size)), 3))
    dist.all_to_all_single(output, source, [rows(s, rank) for s in range(size)] if uneven else None,
                           [rows(rank, d) for d in range(size)] if uneven else None)
    outputs = [torch.empty(rows(s, rank), 3) for s in range(size)]
    dist.all_to_all(outputs, [block(rank, d) for d in range(size)])
    expected = [block(s, rank) for s in range(size)]
    assert torch.equal(output, torch.cat(expected)), where("all_to_all_single", uneven=uneven)
    for s in range(size):
        assert torch.equal(outputs[s], expected[s]), where("all_to_all", uneven=uneven, source=s)


def test_send_recv_and_any_source(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    if size == 1:
        pytest.skip("point to point needs two ranks")
    right, left = (rank + 1) % size, (rank - 1) % size
    received = torch.empty(3, dtype=torch.int64)
    request = dist.irecv(received, left, tag=5)
    dist.send(torch.tensor([rank, 1, 2]) * 10, right, tag=5)
    request.wait()
    assert received.tolist() == [left * 10, 10, 20], where("recv", source=left)
    if rank == 0:
        senders = set()
        for _ in range(size - 1):
            value = torch.empty(1, dtype=torch.int64)
            sender = dist.recv(value, tag=6)  # src=None: recv_anysource, the sender returned
            assert value.item() == 7 * sender, where("recv any source", value=value.item(), sender=sender)
            senders.add(sender)
        assert senders == set(range(1, size)), where("recv any source senders", got=senders)
    else:
        dist.send(torch.tensor([7 * rank]), 0, tag=6)
    dist.barrier()


def test_barrier_monitored_barrier_and_name(world):
    dist.barrier()
    dist.distributed_c10d._get_default_group().monitored_barrier(datetime.timedelta(seconds=30), True)
    assert dist.get_backend() == "CONCORD" or dist.get_backend().lower() == "concord"
    assert dist.distributed_c10d._get_default_group().name() == "concord"


def test_synchronous_calls_wake_no_thread(world):
    """A loop of synchronous calls is finished on the caller's thread: neither the group's
    completer thread nor its watchdog is woken per call (each wake is a thread switch, about
    as long as the 4-byte allreduce itself on 2 cores). The loop outlasts the completer's
    IDLE_TICKS, after which it sleeps until a submission wakes it: at most one wake per
    IDLE_TICKS * TICK_SECONDS (0.1 s) of calls."""
    completer = dist.distributed_c10d._get_default_group()._completer
    wakes = {"completer": 0, "watchdog": 0}
    hurry, notify = completer.hurry, completer._watch.notify

    def counting_hurry():
        wakes["completer"] += 1
        hurry()

    def counting_notify(*args):
        wakes["watchdog"] += 1
        notify(*args)

    completer.hurry, completer._watch.notify = counting_hurry, counting_notify
    try:
        tensor = torch.ones(1)
        calls, end = 0, time.monotonic() + 0.5
        while True:  # the same count on every rank: rank 0's clock decides
            dist.all_reduce(tensor)
            more = torch.tensor([float(time.monotonic() < end or calls < 299)])
            dist.broadcast(more, 0)
            calls += 1
            if not more.item():
                break
    finally:
        del completer.hurry, completer._watch.notify
    assert wakes["completer"] <= 8 and wakes["watchdog"] <= 8, where(f"{calls} synchronous calls woke threads", **wakes)


def test_async_overlap_and_futures(world):
    size = dist.get_world_size()
    tensors = [torch.full((1000,), float(i)) for i in range(16)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    futures = [w.get_future().then(lambda f: f.value()[0] * 2) for w in works]
    for i, (work, future) in enumerate(zip(works, futures)):
        work.wait()
        assert work.is_completed() and work.is_success() and work.exception() is None
        assert torch.equal(tensors[i], torch.full((1000,), float(i * size))), where("async all_reduce", i=i)
        assert torch.equal(future.wait(), tensors[i] * 2), where("future.then", i=i)


def test_callback_waits_on_nested_collective(world):
    """PowerSGD's pattern: a future callback launches a collective and blocks on its future."""
    size = dist.get_world_size()

    def nested(future):
        inner = torch.ones(2) * future.value()[0][0]
        return dist.all_reduce(inner, async_op=True).get_future().wait()  # [tensor], like the outer future

    outer = dist.all_reduce(torch.ones(2), async_op=True).get_future().then(nested).then(nested)
    assert torch.equal(outer.wait()[0], torch.full((2,), float(size ** 3))), where("nested callbacks")


def test_mismatched_shapes_fail_on_every_rank(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    if size == 1:
        pytest.skip("a mismatch needs two ranks")
    tensor = torch.ones(3 if rank == 0 else 4)
    with pytest.raises(RuntimeError, match="(?i)mismatch|shape"):
        dist.all_reduce(tensor)
    dist.barrier()  # the group is usable after the error
    check = torch.ones(1)
    dist.all_reduce(check)
    assert check.item() == size, where("all_reduce after a mismatch")


def test_timeout_then_completion(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    if size == 1:
        pytest.skip("a late rank needs two ranks")
    if rank == 0:
        time.sleep(1.0)
    tensor = torch.ones(2)
    work = dist.all_reduce(tensor, async_op=True)
    if rank != 0:  # the caller's thread, which finishes a waited work itself, stops at the timeout
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="did not finish within"):
            work.wait(datetime.timedelta(milliseconds=100))
        waited = time.monotonic() - start
        assert waited < 0.6, where("wait(100 ms) returned late", seconds=waited)
    work.wait()
    assert torch.equal(tensor, torch.full((2,), float(size))), where("all_reduce after a timeout")


def test_subgroups(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    members = list(range(1, size)) if size > 2 else [0]
    group = dist.new_group(members)
    same = dist.new_group(members)  # a second group of the same ranks shares the process set
    for g in (group, same):
        tensor = torch.full((3,), float(rank))
        if rank in members:
            dist.all_reduce(tensor, group=g)
            assert torch.equal(tensor, torch.full((3,), float(sum(members)))), where("subgroup all_reduce")
            gathered = [torch.empty(1) for _ in members]
            dist.all_gather(gathered, torch.tensor([float(rank)]), group=g)
            assert [int(x) for x in gathered] == members, where("subgroup all_gather", got=gathered)
        else:
            assert g == dist.GroupMember.NON_GROUP_MEMBER
    dist.barrier()


def _form(ranks, group_id):
    """The "concord" creator called as torch calls it on a member of a new group (extended
    API), without torch's new_group: the other ranks call nothing."""
    options = dist.distributed_c10d._DistributedBackendOptions()
    options.store = dist.PrefixStore(group_id, dist.distributed_c10d._get_default_store())
    options.group_rank = ranks.index(dist.get_rank())
    options.group_size = len(ranks)
    options.timeout = datetime.timedelta(seconds=60)
    options.group_id = group_id
    options.global_ranks_in_group = ranks
    return dist.Backend._plugins["CONCORD"].creator_fn(options, None)


def test_groups_formed_by_their_members_alone(world):
    """Groups whose creator only their members call (as torch 1.13 calls it): {1, 2} while
    rank 0 and the last rank form and use {0, last} (ranks 0 and 3 call nothing for {1, 2}),
    then {0, 1, 2} overlapping both; collectives and send/recv on each are correct."""
    size, rank = dist.get_world_size(), dist.get_rank()
    if size < 3:
        pytest.skip("groups of some ranks among at least three")
    plan = [("members.a", [1, 2]), ("members.b", [0, size - 1]), ("members.c", [0, 1, 2])]
    for group_id, ranks in plan:
        if rank not in ranks:
            continue
        group = _form(ranks, f"{group_id}.{size}")
        tensor = torch.full((4,), float(rank + 1))
        group.allreduce([tensor]).wait()
        expected = float(sum(r + 1 for r in ranks))
        assert torch.equal(tensor, torch.full((4,), expected)), \
            where("allreduce on a group formed by its members", group=ranks, got=tensor.tolist(), expected=expected)
        gathered = [torch.empty(1) for _ in ranks]
        group.allgather([gathered], [torch.tensor([float(rank)])]).wait()
        assert [int(x) for x in gathered] == ranks, where("allgather on a formed group", group=ranks, got=gathered)
        me, last = ranks.index(rank), len(ranks) - 1
        if me == 0:
            group.send([torch.tensor([float(rank)])], last, 1).wait()
        elif me == last:
            value = torch.empty(1)
            work = group.recv_anysource([value], 1)
            work.wait()
            assert work._source_rank() == 0 and value.item() == float(ranks[0]), \
                where("send/recv on a formed group", group=ranks, source=work._source_rank(), value=value.item())
    dist.barrier()


def _process_set_table():
    """This rank's runtime's process sets: {id: global ranks}."""
    return {i: list(_core.process_set_ranks(i)) for i in _core.process_set_ids()}


def test_non_members_record_a_formed_set(world):
    """A group whose creator only its member calls (rank size-1 alone): every other rank's
    runtime records its process set too, under the same id, and is not a member of it;
    every rank's table of sets stays identical, so a world-wide add_process_set of its
    ranks fails on every rank naming that id (docs/torch_distributed.md, "Subgroups")."""
    size, rank = dist.get_world_size(), dist.get_rank()
    if size == 1:
        pytest.skip("a non-member needs two ranks")
    members = [size - 1]
    hvd.barrier()
    formed = _form(members, f"members.alone.{size}")._set.process_set_id if rank in members else None
    hvd.barrier()  # the member's set is applied everywhere before anyone looks
    tables = hvd.allgather_object(_process_set_table())
    assert all(table == tables[0] for table in tables), where("process set tables differ", tables=tables)
    ids = [i for i, ranks in tables[0].items() if ranks == members]
    assert len(ids) == 1, where("the formed set in the tables", members=members, table=tables[0])
    assert formed is None or formed == ids[0], where("the member's id", formed=formed, table=tables[0])
    assert (_core.process_set_rank(ids[0]) >= 0) == (rank in members), where("membership of the formed set")
    with pytest.raises(InvalidArgumentError, match=rf"already exists \(id {ids[0]}\)"):
        hvd.add_process_set(members)


def test_rank_disagreement_and_no_launcher_errors(world, monkeypatch):
    backend = ConcordBackend()
    with pytest.raises(RuntimeError, match="Concord's runtime says rank"):
        backend.start_runtime(None, (dist.get_rank() + 1) % (dist.get_world_size() + 1), dist.get_world_size() + 1)
    monkeypatch.setattr("concord.is_initialized", lambda: False)
    for variable in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(RuntimeError, match="got no store to rendezvous through and no MPI launcher"):
        backend.start_runtime(None, 0, 2)


def test_group_timeout_fails_futures(world):
    """A future waited without a timeout (as DDP's reducer waits) fails once the group's
    timeout passed; the late collective still completes when the missing rank arrives."""
    size, rank = dist.get_world_size(), dist.get_rank()
    if size == 1:
        pytest.skip("a late rank needs two ranks")
    group = dist.new_group(timeout=datetime.timedelta(seconds=1))
    if rank == 0:
        time.sleep(2.5)
    tensor = torch.ones(2)
    future = dist.all_reduce(tensor, group=group, async_op=True).get_future()
    if rank != 0:
        with pytest.raises(RuntimeError, match="did not finish within 1 s of its submission"):
            future.wait()
    else:
        assert torch.equal(future.wait()[0], torch.full((2,), float(size))), where("late rank's all_reduce")
    check = torch.ones(1)
    dist.all_reduce(check)  # on the world: the others wait here for rank 0 longer than 1 s
    assert check.item() == size, where("all_reduce after an expired one")


def test_monitored_barrier_names_the_missing_rank(world):
    """The last rank skips a monitored barrier: rank 0 names it, the others are not
    released. (The group's monitored barriers stay out of step afterwards, as after a
    failed one on Gloo, which is why this test runs last.)"""
    size, rank = dist.get_world_size(), dist.get_rank()
    if size == 1:
        pytest.skip("a missing rank needs two ranks")
    group = dist.distributed_c10d._get_default_group()
    late = size - 1
    if rank == 0:
        with pytest.raises(RuntimeError, match=rf"rank\(s\) \[{late}\] failed to pass monitored_barrier"):
            group.monitored_barrier(datetime.timedelta(seconds=0.5), True)
    elif rank != late:
        with pytest.raises(RuntimeError, match="was not released from monitored_barrier"):
            group.monitored_barrier(datetime.timedelta(seconds=1.5), True)
    dist.barrier()
