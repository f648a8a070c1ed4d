"""The runtime's wake-up logic seen from concord.torch (no fixed cycle time): a tensor
submitted on the last rank long after the others, every rank idle for seconds, and several
Python threads submitting and synchronizing at once. Results are checked exactly."""

import threading
import time

import torch

import concord.torch as hvd


def test_tensor_submitted_late_on_the_last_rank(rank, size, tname):
    for attempt in range(2):  # uncached, then a cache hit
        if rank == size - 1:
            time.sleep(1.0)
        result = hvd.allreduce(torch.full((3,), float(rank)), name=tname, op=hvd.Sum)
        expected = torch.full((3,), size * (size - 1) / 2)
        assert torch.equal(result, expected), \
            f"rank {rank}/{size} attempt {attempt}: allreduce(sum) submitted 1 s late on rank {size - 1}: {result}"


def test_every_rank_idle_then_reduces(rank, size, tname):
    time.sleep(2.0)
    handles = [hvd.allreduce_async(torch.full((i + 1,), float(rank + i)), name=f"{tname}.{i}", op=hvd.Sum)
               for i in range(4)]
    for i, handle in enumerate(handles):
        result = hvd.synchronize(handle)
        expected = torch.full((i + 1,), size * (size - 1) / 2 + size * i)
        assert torch.equal(result, expected), f"rank {rank}/{size} tensor {i} after 2 s idle: {result}"


def test_threads_submit_and_synchronize_concurrently(rank, size, tname):
    failures = []

    def worker(thread):
        for call in range(10):
            value = float(rank + 100 * thread + call)
            result = hvd.allreduce(torch.full((call + 1,), value), name=f"{tname}.t{thread}", op=hvd.Sum)
            expected = size * (size - 1) / 2 + size * (100 * thread + call)
            if not torch.equal(result, torch.full((call + 1,), expected)):
                failures.append(f"thread {thread} call {call}: {result} != {expected}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, f"rank {rank}/{size}: " + "; ".join(failures)
