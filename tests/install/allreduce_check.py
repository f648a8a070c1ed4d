"""A 2-rank (any-rank) allreduce through an installed concord.torch, for the package tests
(tests/install/pip_venv.sh, deb.sh). Usage: mpirun -np 2 PYTHON allreduce_check.py DIR

Imports concord from wherever the interpreter finds it, checks that it was found under DIR
(the venv or the extracted package), sums a float32 tensor of 1001 elements holding
rank + 1 and checks every element against size * (size + 1) / 2. Exits non-zero with the
rank, the element and the values on a mismatch.
"""
import os
import sys

import torch

import concord
import concord.torch as hvd

where = os.path.realpath(concord.__file__)
expected_root = os.path.realpath(sys.argv[1])
assert where.startswith(expected_root), f"concord imported from {where}, not from under {expected_root}"
hvd.init()
out = hvd.allreduce(torch.full((1001,), float(hvd.rank() + 1)), name="install.check", op=hvd.Sum)
expected = hvd.size() * (hvd.size() + 1) / 2
bad = (out != expected).nonzero()
assert bad.numel() == 0, \
    f"rank {hvd.rank()}/{hvd.size()}: element {bad[0].item()} is {out[bad[0]].item()}, expected {expected}"
print(f"rank {hvd.rank()} of {hvd.size()}: allreduce through concord.torch from {os.path.dirname(where)} correct")
hvd.shutdown()
