"""Starts N processes itself (no launcher variables, as torch.multiprocessing.spawn-based
tests do) that call init_process_group("concord", init_method="file://...", rank, world_size):
the concord backend must form one world over UCX through that store, run an allreduce and
a DDP step, and agree with the reference on every rank (ctest
python.torch_distributed.file_init.np3)."""

import os
import subprocess
import sys
import tempfile


def worker(path, rank, size):
    import torch
    import torch.distributed as dist
    import concord.torch  # noqa: F401  (registers the backend)

    dist.init_process_group("concord", init_method=f"file://{path}", rank=rank, world_size=size)
    tensor = torch.full((5,), float(rank + 1))
    dist.all_reduce(tensor)
    expected = size * (size + 1) / 2
    assert tensor.tolist() == [expected] * 5, f"rank {rank}/{size}: allreduce gave {tensor.tolist()}, want {expected}"
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2))
    model(torch.full((3, 4), float(rank))).sum().backward()
    grad = float(model.module.weight.grad.sum())
    want = 2 * 3 * 4 * sum(range(size)) / size  # d(sum W x)/dW averaged over ranks
    assert abs(grad - want) < 1e-4, f"rank {rank}/{size}: DDP gradient sum {grad}, want {want}"
    print(f"c10d_file_init: rank {rank} of {size} ok", flush=True)
    dist.destroy_process_group()


def main():
    if len(sys.argv) == 4:
        worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
        return 0
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT") and not k.startswith("OMPI_")}
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "store")
        procs = [subprocess.Popen([sys.executable, __file__, path, str(r), str(size)], env=env) for r in range(size)]
        try:
            codes = [p.wait(timeout=240) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
    failed = [r for r, code in enumerate(codes) if code != 0]
    print(f"c10d_file_init: {size} ranks, failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
