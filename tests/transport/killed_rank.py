"""A killed rank ends the job with an error naming it: two ranks allreduce in a loop over UCX
(run under the local store launcher); rank 1 kills itself with SIGKILL after 20 steps. Rank 0
must get a CommError (concord.torch raises it from the pending handle) that names rank 1,
within 30 s of the kill, and print "killed_rank: detected ..."; it never hangs."""

import os
import signal
import sys
import time

import torch

import concord
import concord.torch as hvd


def main():
    hvd.init()
    x = torch.ones(1000)
    for step in range(20):
        hvd.allreduce(x, name="step")
    if hvd.rank() == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    killed_at = time.monotonic()
    try:
        for step in range(100000):
            hvd.allreduce(x, name="step")
    except concord.ConcordError as error:
        seconds = time.monotonic() - killed_at
        named = "rank 1" in str(error)
        print(f"killed_rank: detected after {seconds:.1f} s: {type(error).__name__}: {error}", flush=True)
        return 0 if named and seconds < 30 and isinstance(error, concord.CommError) else 1
    print("killed_rank: rank 0 finished 100000 allreduces without noticing that rank 1 is gone", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
