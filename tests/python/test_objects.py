"""allgather_object / broadcast_object (concord/torch/objects.py), broadcast_optimizer_state
with uninitialised state and parameters without gradients, and the exported build and
topology queries (cross_rank, mpi_threads_supported, *_built)."""

import pytest
import torch

import concord.torch as hvd


class Payload:
    def __init__(self, rank):
        self.rank = rank
        self.tensor = torch.arange(rank + 1, dtype=torch.float32)
        self.nested = {"r": [rank] * rank, "s": "x" * (100 * rank)}


def test_broadcast_object_from_every_root(rank, size, tname):
    for root in range(size):
        got = hvd.broadcast_object(Payload(rank), root_rank=root, name=f"{tname}.{root}")
        assert got.rank == root, f"rank {rank}/{size} root {root}: got the object of rank {got.rank}"
        assert torch.equal(got.tensor, torch.arange(root + 1, dtype=torch.float32)), f"rank {rank} root {root}"
        assert got.nested == {"r": [root] * root, "s": "x" * (100 * root)}, f"rank {rank} root {root}"


def test_broadcast_object_default_name_and_root(rank, size):
    got = hvd.broadcast_object({"from": rank})
    assert got == {"from": 0}, f"rank {rank}/{size}: {got}"


def test_allgather_object(rank, size, tname):
    got = hvd.allgather_object(Payload(rank), name=tname)
    assert [p.rank for p in got] == list(range(size)), f"rank {rank}/{size}: {[p.rank for p in got]}"
    for q, p in enumerate(got):
        assert torch.equal(p.tensor, torch.arange(q + 1, dtype=torch.float32)), f"rank {rank}: entry {q}"
        assert p.nested["s"] == "x" * (100 * q), f"rank {rank}: entry {q}"


def test_allgather_object_of_none_and_unnamed(rank, size):
    assert hvd.allgather_object(None) == [None] * size, f"rank {rank}/{size}"


class _Unpicklable:
    def __reduce__(self):
        raise TypeError("not picklable")


def test_unpicklable_object_raises_before_any_collective(rank, size, tname):
    """Serialisation fails on every rank before the first allgather: nobody waits."""
    with pytest.raises(TypeError, match="not picklable"):
        hvd.allgather_object(_Unpicklable(), name=tname)
    assert hvd.allgather_object(rank, name=tname + ".after") == list(range(size)), f"rank {rank}"


def test_broadcast_object_bad_root_raises_everywhere(rank, size, tname):
    with pytest.raises(hvd.InvalidArgumentError, match="root"):
        hvd.broadcast_object(1, root_rank=size, name=tname)


def _model(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    model[2].bias.requires_grad_(False)  # a parameter that never gets a gradient
    return model


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("root_steps", [0, 2])
def test_broadcast_optimizer_state(kind, root_steps, rank, size):
    """Root's state (after steps in which one parameter has no gradient, or, with no step
    taken, the state Horovod's zero-gradient initialisation step creates) replaces every
    rank's, including ranks that took different steps."""
    model = _model(rank)
    make = {"SGD": lambda p: torch.optim.SGD(p, lr=0.1 * (rank + 1), momentum=0.9),
            "Adam": lambda p: torch.optim.Adam(p, lr=0.01 * (rank + 1))}[kind]
    optimizer = make(model.parameters())
    steps = root_steps if rank == 0 else rank % 2  # the other ranks diverge
    for step in range(steps):
        optimizer.zero_grad()
        model(torch.full((2, 4), float(rank + step))).sum().backward()
        optimizer.step()
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    mine = optimizer.state_dict()
    gathered = hvd.allgather_object(mine, name=f"bos.{kind}.{root_steps}")
    reference = gathered[0]
    for q, other in enumerate(gathered):
        assert other["param_groups"] == reference["param_groups"], f"rank {rank}: rank {q}'s param groups"
        assert other["state"].keys() == reference["state"].keys(), f"rank {rank}: rank {q}'s state keys"
        for key, entry in reference["state"].items():
            for field, value in entry.items():
                same = torch.equal(other["state"][key][field], value) if torch.is_tensor(value) else \
                    other["state"][key][field] == value
                assert same, f"rank {rank}: rank {q}'s state[{key}][{field}] differs from rank 0's"
    # Horovod's broadcast_optimizer_state initialises an empty state: the 3 parameters
    # that require a gradient have one either way, the frozen bias none.
    assert len(reference["state"]) == 3, f"rank {rank}: {reference['state'].keys()}"
    optimizer.zero_grad()
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()  # an uninitialised or adopted state steps normally


def test_topology_and_build_queries(rank, size):
    assert 0 <= hvd.cross_rank() < hvd.cross_size() <= size, f"rank {rank}: {hvd.cross_rank()}/{hvd.cross_size()}"
    # One host in the test runs: every rank is alone with its local rank.
    assert (hvd.cross_rank(), hvd.cross_size()) == (0, 1), f"rank {rank}"
    info = hvd.allgather_object((hvd.local_rank(), hvd.cross_rank(), hvd.cross_size()))
    assert sorted(r for r, _, _ in info) == list(range(size)), f"rank {rank}: local ranks {info}"
    assert isinstance(hvd.mpi_threads_supported(), bool), f"rank {rank}"
    assert hvd.mpi_built() and hvd.mpi_enabled()
    assert not any(f() for f in (hvd.gloo_built, hvd.gloo_enabled, hvd.nccl_built, hvd.ddl_built,
                                 hvd.ccl_built, hvd.cuda_built, hvd.rocm_built))


def test_broadcast_optimizer_state_with_a_parameter_without_gradient(rank, size):
    """Horovod's test_broadcast_state_no_grad: a fresh optimizer over a parameter that
    requires no gradient and one that does; broadcast_optimizer_state initialises the
    state by a zero-gradient step (horovod/torch/functions.py), so the trainable
    parameter's .grad is a zero tensor a script can broadcast, the other's stays None, and
    the step applied weight decay (lr * wd * p) exactly as Horovod's does."""
    indices = torch.nn.Parameter(torch.tensor([1, 3], dtype=torch.int32), requires_grad=False)
    weights = torch.nn.Parameter(torch.arange(4, dtype=torch.float32) + rank)
    initial = weights.detach().clone()
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD([indices, weights], lr=0.001, weight_decay=1e-6, momentum=0.9, nesterov=True),
        named_parameters=[("bos.nograd.a", indices), ("bos.nograd.b", weights)])
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    grad = optimizer.param_groups[0]["params"][1].grad
    assert indices.grad is None, f"rank {rank}: the parameter without requires_grad got {indices.grad}"
    assert grad is not None and torch.equal(grad, torch.zeros(4)), f"rank {rank}: gradient {grad}"
    assert torch.equal(hvd.broadcast(grad, root_rank=0, name="bos.nograd.grad"), grad), f"rank {rank}"
    # SGD with zero gradient, weight decay wd and nesterov momentum m: d = wd * p, buf = d,
    # p -= lr * (d + m * buf).
    decay = 1e-6 * initial
    torch.testing.assert_close(weights.detach(), initial - 0.001 * (decay + 0.9 * decay),
                               msg=f"rank {rank}: the initialisation step")
