"""A killed or stopped rank ends the job with an error naming it: two ranks allreduce in a
loop over UCX (run under the local store launcher); rank 1 sends itself SIGKILL (argument
KILL, the default: the process check finds it gone) or SIGSTOP (argument STOP: alive but
silent, found by the store heartbeat after CONCORD_PEER_TIMEOUT, as a rank on another host
would be) after 20 steps. Rank 0 must get a CommError (concord.torch raises it from the
pending handle) that names rank 1, within 30 s, and print "killed_rank: detected ..."; it
never hangs. After a STOP rank 0 exits with status 3, so that the launcher ends the stopped
rank."""

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
    how = sys.argv[1] if len(sys.argv) > 1 else "KILL"
    if hvd.rank() == 1:
        os.kill(os.getpid(), getattr(signal, "SIG" + how))
    killed_at = time.monotonic()
    try:
        for step in range(100000):
            hvd.allreduce(x, name="step")
    except concord.ConcordError as error:
        seconds = time.monotonic() - killed_at
        named = "rank 1" in str(error)
        print(f"killed_rank: detected after {seconds:.1f} s: {type(error).__name__}: {error}", flush=True)
        if not (named and seconds < 30 and isinstance(error, concord.CommError)):
            return 1
        return 3 if how == "STOP" else 0
    print("killed_rank: rank 0 finished 100000 allreduces without noticing that rank 1 is gone", flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
