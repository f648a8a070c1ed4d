"""tools/torch/soak.py's --kinds and --dtypes: the draw is restricted to the named collectives and
dtypes (what an older Concord can run), and an unknown name, or none a kind takes, is refused."""

import os
import random
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "torch"))
import soak  # noqa: E402


class FakeHvd:
    """Just what Soak's constructor and draw() read."""

    def rank(self):
        return 0

    def size(self):
        return 4


def drawn(argv, field, draws=400):
    """The values of `field` over `draws` operations drawn with the options `argv`."""
    runner = soak.Soak(FakeHvd(), soak.parse_args(argv))
    rng = random.Random(7)
    return {runner.draw(rng, 1, index)[field] for index in range(draws)}


def kinds_drawn(argv):
    return drawn(argv, "kind")


def test_default_draws_every_kind():
    assert kinds_drawn([]) == set(soak.KINDS)


def test_kinds_restricts_the_draw_to_the_named_collectives():
    assert kinds_drawn(["--kinds", "allreduce,broadcast"]) == {"allreduce", "broadcast"}
    assert kinds_drawn(["--kinds", "grouped_allreduce"]) == {"grouped_allreduce"}


@pytest.mark.parametrize("value", ["allreduce,alltoal", ",", ""])
def test_unknown_or_no_kind_is_refused(value, capsys):
    with pytest.raises(SystemExit):
        soak.parse_args(["--kinds", value])
    assert "--kinds" in capsys.readouterr().err


def dtypes_drawn(argv):
    return drawn(argv, "dtype")


def test_dtypes_restricts_the_draw():
    import torch
    assert dtypes_drawn(["--kinds", "allreduce,broadcast,sparse_allreduce", "--dtypes", "float32,int8"]) == {
        torch.float32, torch.int8}
    assert torch.bool in dtypes_drawn(["--kinds", "broadcast"])


@pytest.mark.parametrize("argv", [["--dtypes", "float31"], ["--kinds", "allreduce", "--dtypes", "bool"]])
def test_unknown_dtype_or_none_a_kind_takes_is_refused(argv, capsys):
    with pytest.raises(SystemExit):
        soak.parse_args(argv)
    assert "--dtypes" in capsys.readouterr().err
