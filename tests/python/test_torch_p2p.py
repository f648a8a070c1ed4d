"""Point to point on the ``"concord"`` torch.distributed backend (concord.torch.c10d_p2p):
send/recv of every dtype and of sizes 0, 1, odd and large around a ring, receives from any
source with the sender reported, tags and MPI's ordering rule, length mismatches as errors
on the receiver, and the messages of a subgroup kept apart from the world's. Runs under
mpirun (MPI transport) and under the local launcher (UCX transport); every check compares
against values every rank can rebuild (concord_test_utils.rank_input).
"""

import pytest
import torch
import torch.distributed as dist

from concord_test_utils import DTYPES, dname, rank_input
from torch_distributed_utils import where, world  # noqa: F401  (world: a fixture)

#: Element counts: empty, one, odd, and large (several MiB for 8-byte dtypes).
SIZES = [0, 1, 7, 1001, 600_000]
P2P_DTYPES = DTYPES + [torch.bool, torch.complex64]


def _payload(rank, numel, dtype, seed):
    """Rank ``rank``'s message: deterministic, distinct per rank, seed, size and dtype."""
    if dtype == torch.bool:
        return rank_input(rank, (numel,), torch.uint8, seed) % 2 == 1
    if dtype.is_complex:
        real = rank_input(rank, (numel, 2), torch.float32, seed)
        return torch.view_as_complex(real)
    return rank_input(rank, (numel,), dtype, seed)


def _needs_two(size):
    if size == 1:
        pytest.skip("point to point needs two ranks")


@pytest.mark.parametrize("numel", SIZES)
@pytest.mark.parametrize("dtype", P2P_DTYPES, ids=dname)
def test_ring_every_dtype_and_size(world, dtype, numel):
    size, rank = dist.get_world_size(), dist.get_rank()
    _needs_two(size)
    right, left = (rank + 1) % size, (rank - 1) % size
    received = torch.empty(numel, dtype=dtype)
    request = dist.irecv(received, left, tag=3)
    sent = dist.isend(_payload(rank, numel, dtype, 31), right, tag=3)
    request.wait()
    sent.wait()
    expected = _payload(left, numel, dtype, 31)
    bad = (received != expected).nonzero()
    assert bad.numel() == 0, where("send/recv ring", dtype=dname(dtype), numel=numel, source=left,
                                   first_bad_element=bad[0].item() if bad.numel() else None)


def test_non_contiguous_tensors(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    _needs_two(size)
    right, left = (rank + 1) % size, (rank - 1) % size
    source = torch.arange(24, dtype=torch.float32).reshape(4, 6) + 100 * rank
    received = torch.zeros(6, 4).t()  # a transposed view: received through a contiguous copy
    request = dist.irecv(received, left)
    dist.send(source.t().contiguous().t(), right)  # a non-contiguous view of the same values
    request.wait()
    expected = torch.arange(24, dtype=torch.float32).reshape(4, 6) + 100 * left
    assert torch.equal(received, expected), where("non-contiguous recv", source=left)


def test_recv_any_source_reports_the_sender(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    _needs_two(size)
    rounds = 3
    if rank == 0:
        counts = {}
        for _ in range(rounds * (size - 1)):
            value = torch.empty(2, dtype=torch.int64)
            sender = dist.recv(value, tag=6)  # src=None: recv_anysource, the sender returned
            assert value[0].item() == sender and 1 <= sender < size, \
                where("recv any source", sender=sender, payload=value.tolist())
            # each sender's messages arrive in the order sent (MPI's non-overtaking rule)
            assert value[1].item() == counts.get(sender, 0), \
                where("recv any source order", sender=sender, payload=value.tolist(), expected=counts.get(sender, 0))
            counts[sender] = counts.get(sender, 0) + 1
        assert counts == {r: rounds for r in range(1, size)}, where("recv any source senders", got=counts)
    else:
        for i in range(rounds):
            dist.send(torch.tensor([rank, i]), 0, tag=6)
    dist.barrier()


def test_work_source_rank_and_future(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    _needs_two(size)
    group = dist.distributed_c10d._get_default_group()
    if rank == size - 1:
        value = torch.empty(1)
        work = group.recv_anysource([value], 8)
        future = work.get_future()
        assert future.wait()[0] is value, where("recv future value")
        assert work._source_rank() == 0 and value.item() == 42.0, \
            where("recv_anysource Work", source=work._source_rank(), value=value.item())
        assert work.is_completed() and work.exception() is None, where("recv work state")
    elif rank == 0:
        dist.send(torch.tensor([42.0]), size - 1, tag=8)
    dist.barrier()


def test_tags_keep_messages_apart(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    _needs_two(size)
    if rank == 0:  # posted in the opposite order of the sends: each matches its own tag
        by_tag = {tag: torch.empty(4, dtype=torch.int32) for tag in (11, 12, 13)}
        works = [dist.irecv(by_tag[tag], 1, tag=tag) for tag in (13, 12, 11)]
        for work in works:
            work.wait()
        for tag, tensor in by_tag.items():
            assert tensor.tolist() == [tag] * 4, where("recv by tag", tag=tag, got=tensor.tolist())
    elif rank == 1:
        works = [dist.isend(torch.full((4,), tag, dtype=torch.int32), 0, tag=tag) for tag in (11, 12, 13)]
        for work in works:
            work.wait()
    dist.barrier()


@pytest.mark.parametrize("sent,received", [(5, 4), (3, 4)], ids=["longer", "shorter"])
def test_length_mismatch_is_an_error_on_the_receiver(world, sent, received):
    size, rank = dist.get_world_size(), dist.get_rank()
    _needs_two(size)
    if rank == 0:
        tensor = torch.zeros(received, dtype=torch.float32)
        with pytest.raises(RuntimeError) as error:
            dist.recv(tensor, 1, tag=21)
        text = str(error.value)
        assert "recv from rank 1 (tag 21)" in text and f"{received * 4} bytes" in text, \
            where("mismatch message", sent=sent, received=received, message=text)
        if sent < received:
            assert f"message of {sent * 4} bytes" in text, where("mismatch names the sent size", message=text)
        else:
            assert "longer" in text, where("mismatch says the message was longer", message=text)
    elif rank == 1:
        dist.send(torch.ones(sent), 0, tag=21)  # the send completes
    # the channel stays usable
    if rank == 0:
        after = torch.empty(2)
        dist.recv(after, 1, tag=22)
        assert after.tolist() == [5.0, 6.0], where("recv after a mismatch", got=after.tolist())
    elif rank == 1:
        dist.send(torch.tensor([5.0, 6.0]), 0, tag=22)
    dist.barrier()


def test_bad_peer_and_tag_are_value_errors(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    group = dist.distributed_c10d._get_default_group()
    with pytest.raises(ValueError, match="outside the group's ranks"):
        group.send([torch.zeros(1)], size, 0)
    with pytest.raises(ValueError, match="is this process"):
        group.recv([torch.zeros(1)], rank, 0)
    with pytest.raises(ValueError, match="negative"):
        group.recv_anysource([torch.zeros(1)], -1)


def test_subgroup_messages_stay_apart_from_the_world(world):
    size, rank = dist.get_world_size(), dist.get_rank()
    if size < 3:
        pytest.skip("a subgroup of two ranks among at least three")
    group = dist.new_group([1, 2])
    if rank == 1:  # the same tag and peer in both groups: each receive sees its group's
        dist.send(torch.tensor([100.0]), 2, tag=0)               # world
        dist.send(torch.tensor([200.0]), 2, tag=0, group=group)  # subgroup
    elif rank == 2:
        in_group, in_world = torch.empty(1), torch.empty(1)
        dist.recv(in_group, 1, tag=0, group=group)
        dist.recv(in_world, 1, tag=0)
        assert (in_group.item(), in_world.item()) == (200.0, 100.0), \
            where("subgroup vs world messages", group=in_group.item(), world=in_world.item())
        value = torch.empty(1)
        sender = dist.recv(value, tag=4, group=group)  # any source in the group: a global rank back
        assert sender == 1 and value.item() == 7.0, where("subgroup recv any source", sender=sender)
    if rank == 1:
        dist.send(torch.tensor([7.0]), 2, tag=4, group=group)
    dist.barrier()
