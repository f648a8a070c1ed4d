"""Ping-pong latency of ``dist.send``/``dist.recv`` on a torch.distributed backend: rank 0
sends a message of N bytes to rank 1, which sends it back; the median round trip over
``--iterations`` (after ``--warmup``) is printed per size, in microseconds, one line
``pingpong backend=B bytes=N median_us=T`` each. Run on two ranks, under mpirun
(``scripts/mpirun.sh -np 2 python3 c10d_p2p_pingpong.py``) or the local launcher; the
default group starts from a file:// store whose path rank 0 chooses.

Used to measure the backend's point-to-point path (docs/torch_distributed.md); it checks
every received message, so a wrong transfer fails the run rather than timing it.
"""

import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist

import concord.torch as hvd


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="concord")
    parser.add_argument("--sizes", default="4,1048576", help="message sizes in bytes, comma-separated")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    hvd.init()
    path = os.path.join(tempfile.mkdtemp(prefix="concord-pingpong-"), "store") if hvd.rank() == 0 else None
    path = hvd.broadcast_object(path, 0, name="pingpong_store")
    dist.init_process_group(args.backend, init_method=f"file://{path}", rank=hvd.rank(), world_size=hvd.size())
    rank = dist.get_rank()
    for nbytes in (int(s) for s in args.sizes.split(",")):
        message = torch.arange(nbytes, dtype=torch.uint8)
        buffer = torch.empty(nbytes, dtype=torch.uint8)
        times = []
        for i in range(args.warmup + args.iterations):
            start = time.perf_counter()
            if rank == 0:
                dist.send(message, 1)
                dist.recv(buffer, 1)
            elif rank == 1:
                dist.recv(buffer, 0)
                dist.send(buffer, 0)
            if i >= args.warmup:
                times.append(time.perf_counter() - start)
        if rank == 0:
            assert torch.equal(buffer, message), f"rank 0: {nbytes}-byte ping-pong returned other bytes"
            print(f"pingpong backend={args.backend} bytes={nbytes} median_us={statistics.median(times) * 1e6:.1f}",
                  flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
