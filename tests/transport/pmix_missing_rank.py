"""A rank that never arrives at the PMIx rendezvous fails the others within CONCORD_INIT_TIMEOUT
instead of hanging: two ranks under mpirun with CONCORD_TRANSPORT=ucx and no store (so the
UCX world rendezvouses through mpirun's PMIx server); rank 1 never initialises Concord. Rank 0
must get a CommError saying the fence of all 2 ranks did not complete, within the timeout plus
a margin, and print "pmix_missing_rank: failed after ..."."""

import os
import sys
import time

import concord
import concord.torch as hvd


def main():
    if os.environ.get("OMPI_COMM_WORLD_RANK") == "1":
        time.sleep(60)  # never joins; mpirun ends it once rank 0 has failed
        return 0
    timeout = float(os.environ["CONCORD_INIT_TIMEOUT"])
    start = time.monotonic()
    try:
        hvd.init()
    except concord.ConcordError as error:
        seconds = time.monotonic() - start
        print(f"pmix_missing_rank: failed after {seconds:.1f} s: {type(error).__name__}: {error}", flush=True)
        return 1 if isinstance(error, concord.CommError) and seconds < timeout + 10 else 2
    print("pmix_missing_rank: rank 0 initialised a 2-rank world without rank 1", flush=True)
    return 3


if __name__ == "__main__":
    sys.exit(main())
