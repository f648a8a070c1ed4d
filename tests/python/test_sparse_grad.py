"""sparse_allreduce_async (concord/torch/sparse_grad.py) and DistributedOptimizer with
sparse gradients (nn.Embedding(sparse=True)), sparse_as_dense False and True, against
what Horovod 0.28.1 computes from every rank's deterministic batch
(horovod/torch/mpi_ops.py sparse_allreduce_async: every rank's indices and values
allgathered in rank order, values / set size for Average; horovod/torch/optimizer.py
_allreduce_grad_async / synchronize: sparse_as_dense allreduces a dense copy and writes it
back with to_sparse(), so .grad stays sparse either way)."""

import pytest
import torch

import concord.torch as hvd


def sparse_of(rank, nnz, size=(6, 3), dtype=torch.float32):
    g = torch.Generator().manual_seed(rank + 11)
    rows = torch.randint(0, size[0], (nnz,), generator=g)
    values = torch.randn((nnz, size[1]), generator=g).to(dtype)
    return torch.sparse_coo_tensor(rows.unsqueeze(0), values, size)


@pytest.mark.parametrize("op_name", ["Sum", "Average"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_sparse_allreduce_matches_dense(op_name, dtype, rank, size, tname):
    nnz = [(q * 2) % 5 for q in range(size)]  # rank 0 has no non-zeros
    tensor = sparse_of(rank, nnz[rank], dtype=dtype)
    handle = hvd.sparse_allreduce_async(tensor, name=tname, op=getattr(hvd, op_name))
    result = hvd.synchronize(handle)
    assert result.is_sparse and result.shape == tensor.shape, f"rank {rank}: {result.layout} {tuple(result.shape)}"
    assert result._nnz() == sum(nnz), f"rank {rank}/{size}: nnz {result._nnz()} != {sum(nnz)}"
    expected = torch.zeros((6, 3), dtype=dtype)
    for q in range(size):
        other = sparse_of(q, nnz[q], dtype=dtype)
        values = other._values()
        if op_name == "Average":  # each rank's values divided (integers: rounded down) before the sum
            values = values / size if dtype.is_floating_point else values // size
        expected += torch.sparse_coo_tensor(other._indices(), values, (6, 3)).to_dense()
    torch.testing.assert_close(result.to_dense(), expected, msg=f"rank {rank}/{size} {op_name} {dtype}")


def horovod_sparse_allreduce(tensors, op_name):
    """Horovod's result of sparse_allreduce_async over every rank's tensor: the
    concatenated indices and values (in rank order), values / size for Average."""
    indices = torch.cat([t._indices() for t in tensors], dim=1)
    values = torch.cat([t._values() for t in tensors])
    if op_name == "Average":
        values = values / len(tensors)
    return torch.sparse_coo_tensor(indices, values, tensors[0].shape)


def test_sparse_allreduce_handle_is_callable_as_horovods(rank, size, tname):
    """Horovod's calling form: positional (tensor, name, op), the handle called for the
    result, which holds every rank's entries in rank order, uncoalesced."""
    nnz = [q % 3 + 1 for q in range(size)]
    handle = hvd.sparse_allreduce_async(sparse_of(rank, nnz[rank]), tname, hvd.Average)
    result = handle()
    expected = horovod_sparse_allreduce([sparse_of(q, nnz[q]) for q in range(size)], "Average")
    assert torch.equal(result._indices(), expected._indices()), f"rank {rank}/{size}: indices {result._indices()}"
    torch.testing.assert_close(result._values(), expected._values(), msg=f"rank {rank}/{size}: values")
    poll_handle = hvd.sparse_allreduce_async(sparse_of(rank, nnz[rank]), tname + ".poll", hvd.Sum)
    while not hvd.poll(poll_handle):
        pass
    summed = hvd.synchronize(poll_handle)  # the handle is also an int for poll/synchronize
    torch.testing.assert_close(summed.to_dense(), horovod_sparse_allreduce(
        [sparse_of(q, nnz[q]) for q in range(size)], "Sum").to_dense(), msg=f"rank {rank}/{size}: Sum")


def test_sparse_allreduce_errors(rank, size, tname):
    with pytest.raises(TypeError, match="expected a sparse COO tensor"):
        hvd.sparse_allreduce_async(torch.ones(3), name=tname)
    with pytest.raises(ValueError, match="op must be Sum or Average"):
        hvd.sparse_allreduce_async(sparse_of(rank, 2), name=tname, op=hvd.Max)


def test_sparse_allreduce_mismatched_size_raises_everywhere(rank, size, tname):
    if size == 1:
        pytest.skip("needs two ranks to differ")
    tensor = sparse_of(rank, 2, size=(6, 3 + (rank == 1)))
    with pytest.raises(hvd.MismatchError):
        hvd.synchronize(hvd.sparse_allreduce_async(tensor, name=tname))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = torch.nn.Embedding(10, 4, sparse=True)
        self.linear = torch.nn.Linear(4, 1)

    def forward(self, ids):
        return self.linear(self.embedding(ids)).sum()


def ids_of(rank, step):
    return torch.randint(0, 10, (3 + rank, 2), generator=torch.Generator().manual_seed(17 * step + rank))


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_distributed_optimizer_with_sparse_embedding(sparse_as_dense, rank, size):
    """Two SGD steps with averaged gradients equal the same steps computed locally from the
    average of every rank's gradients."""
    model, reference = Model(), Model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                         named_parameters=model.named_parameters(), sparse_as_dense=sparse_as_dense)
    local = torch.optim.SGD(reference.parameters(), lr=0.5)
    for step in range(2):
        optimizer.zero_grad()
        model(ids_of(rank, step)).backward()
        optimizer.step()
        kind = model.embedding.weight.grad.is_sparse
        assert kind, f"rank {rank}: sparse_as_dense={sparse_as_dense} left a dense gradient (Horovod's stays sparse)"
        local.zero_grad()
        grads = []
        for q in range(size):
            reference.zero_grad()
            reference(ids_of(q, step)).backward()
            grads.append([p.grad.to_dense().clone() for p in reference.parameters()])
        for p, *per_rank in zip(reference.parameters(), *grads):
            p.grad = sum(per_rank) / size
        local.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, msg=f"rank {rank}/{size} sparse_as_dense={sparse_as_dense}: {name}")


def test_sparse_gradient_in_a_group_needs_sparse_as_dense(rank, size):
    """The error is raised on every rank before any collective is submitted."""
    model = Model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         groups=[list(model.parameters())])
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    model.embedding.weight.grad = sparse_of(rank, 2, size=(10, 4))
    with pytest.raises(ValueError, match="sparse gradients cannot be grouped"):
        optimizer.synchronize()


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_sparse_adam_through_distributed_optimizer(sparse_as_dense, rank, size):
    """SparseAdam needs sparse gradients: with Horovod's optimizer they stay sparse in both
    modes. Reference: a local SparseAdam fed the gradient Horovod writes: the concatenated
    sparse gradients / size (sparse_as_dense=False) or the dense average's to_sparse()."""
    torch.manual_seed(0)
    model = torch.nn.Embedding(10, 4, sparse=True)
    reference = torch.nn.Embedding(10, 4, sparse=True)
    reference.load_state_dict(model.state_dict())
    optimizer = hvd.DistributedOptimizer(torch.optim.SparseAdam(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(), sparse_as_dense=sparse_as_dense)
    local = torch.optim.SparseAdam(reference.parameters(), lr=0.1)
    for step in range(2):
        optimizer.zero_grad()
        model(ids_of(rank, step)).sum().backward()
        optimizer.step()
        grads = []
        for q in range(size):
            reference.zero_grad()
            reference(ids_of(q, step)).sum().backward()
            grads.append(reference.weight.grad.clone())
        if sparse_as_dense:
            reference.weight.grad = (sum(g.to_dense() for g in grads) / size).to_sparse()
        else:
            reference.weight.grad = horovod_sparse_allreduce(grads, "Average")
        local.step()
    torch.testing.assert_close(model.weight, reference.weight,
                               msg=f"rank {rank}/{size} SparseAdam sparse_as_dense={sparse_as_dense}")
