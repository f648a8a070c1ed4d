#!/usr/bin/env python3
"""Simultaneous exchanges between two ranks at a time (a diagnostic, not a test): is a link
used in both directions at once?

For every pair of ranks (i, j), one pair at a time while the others wait, rank i first
sends ``--bytes`` to j alone (one way); then both post a receive and a send of ``--bytes``
to each other (what recursive doubling, halving-doubling and a two-rank ring do), and each
direction is timed separately. Over a full-duplex link an exchange takes about the one-way time; an exchange whose
slower direction takes about twice as long as its faster one was serialised. Open MPI
4.1's TCP BTL does that in about half of the exchanges with its default PUT protocol
(docs/troubleshooting.md, "Simultaneous exchanges over TCP take twice the time"); compare
with ``--mca btl_tcp_flags send,inplace,need-ack,need-csum``.

Run (mpi4py; here on the emulated hosts of scripts/cluster.sh):
    scripts/cluster.sh -H 4 -r 1 -- /usr/bin/python3 tools/microbench/exchange_bench.py
    CONCORD_CLUSTER_MPIRUN_FLAGS="--mca btl_tcp_flags send,put,inplace,need-ack,need-csum" \\
        scripts/cluster.sh -H 4 -r 1 -- /usr/bin/python3 tools/microbench/exchange_bench.py
Output (rank 0): one row per pair and round: ms of the one-way send, of each direction of
the exchange, and "serialised" where the slower direction took >= 1.6x both the faster one
and the one-way send (judged only where the one-way send took >= 1 ms); then the count.
"""

import argparse
import itertools
import time

import numpy as np
from mpi4py import MPI

SERIALISED = 1.6  # slower direction / max(faster direction, one-way send)
MIN_SECONDS = 1e-3  # shorter one-way sends are timer and scheduler noise


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bytes", type=int, default=16 << 20, help="message size in bytes (default 16 MiB)")
    parser.add_argument("--rounds", type=int, default=3, help="passes over all pairs (default 3)")
    return parser.parse_args(argv)


def timed(requests, start):
    """Seconds from ``start`` until each request of ``requests`` completed (polled)."""
    done = [None] * len(requests)
    while None in done:
        for k, request in enumerate(requests):
            if done[k] is None and request.Test():
                done[k] = time.perf_counter() - start
        time.sleep(1e-4)
    return done


def main(argv=None):
    args = parse_args(argv)
    comm = MPI.COMM_WORLD
    rank = comm.rank
    send = np.ones(args.bytes, np.uint8)
    recv = np.empty_like(send)
    rows = []
    for round_ in range(args.rounds):
        for i, j in itertools.combinations(range(comm.size), 2):
            comm.Barrier()
            result = None
            if rank in (i, j):
                peer = j if rank == i else i
                comm.Sendrecv(send[:1], peer, 1, recv[:1], peer, 1)  # both ready
                start = time.perf_counter()
                request = comm.Isend(send, peer, 0) if rank == i else comm.Irecv(recv, peer, 0)
                one_way = timed([request], start)[0]
                comm.Sendrecv(send[:1], peer, 1, recv[:1], peer, 1)
                start = time.perf_counter()
                received = timed([comm.Irecv(recv, peer, 0), comm.Isend(send, peer, 0)], start)[0]
                result = (one_way, received)
            results = comm.gather(result)
            if rank == 0:
                one_way = results[j][0]  # the receiver's completion time of the one-way send
                to_j, to_i = results[j][1], results[i][1]  # each side's receive completion
                rows.append((round_, i, j, one_way, to_j, to_i))
    if rank == 0:
        print(f"# exchange_bench: {comm.size} ranks, {args.bytes} bytes, {args.rounds} rounds")
        print(f"{'round':>5} {'pair':>7} {'one-way ms':>11} {'i->j ms':>9} {'j->i ms':>9}")
        serialised = judged = 0
        for round_, i, j, one_way, to_j, to_i in rows:
            verdict = "  too short to judge (one-way < 1 ms)"
            if one_way >= MIN_SECONDS:
                judged += 1
                slow = max(to_j, to_i) >= SERIALISED * max(min(to_j, to_i), one_way)
                serialised += slow
                verdict = "  serialised" if slow else ""
            print(f"{round_:>5} {f'{i}-{j}':>7} {one_way * 1e3:11.1f} {to_j * 1e3:9.1f} {to_i * 1e3:9.1f}{verdict}")
        print(f"# serialised exchanges: {serialised} of {judged} judged ({len(rows)} in all)")


if __name__ == "__main__":
    main()
