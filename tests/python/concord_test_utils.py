"""Shared helpers of the Python suite: deterministic per-rank inputs, float64/int64
references of the collectives, and comparisons whose failure messages name the rank, the
collective, the dtype and size and the first element that differs.

Inputs are a pure function of (rank, seed, dtype, value kind, number of elements), so every
rank can rebuild every other rank's input and compute the expected result locally, without
trusting any collective for the reference.
"""

import hashlib
import json
import os
import tempfile
import time

import numpy as np
import torch

import concord.torch as hvd

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.int8, torch.uint8, torch.int16]
FLOAT_DTYPES = [d for d in DTYPES if d.is_floating_point]
INT_DTYPES = [d for d in DTYPES if not d.is_floating_point]

OPS = {"Sum": hvd.Sum, "Average": hvd.Average, "Min": hvd.Min, "Max": hvd.Max, "Product": hvd.Product}

# Unit roundoff doubled (the spacing of the dtype's numbers at 1.0).
EPS = {torch.float32: 2.0 ** -23, torch.float64: 2.0 ** -52, torch.float16: 2.0 ** -10,
       torch.bfloat16: 2.0 ** -7}

_NUMPY_INT = {torch.int32: np.int32, torch.int64: np.int64, torch.int8: np.int8, torch.uint8: np.uint8,
              torch.int16: np.int16}


def dname(dtype):
    """'float32' for torch.float32."""
    return str(dtype).replace("torch.", "")


def itemsize(dtype):
    return torch.empty((), dtype=dtype).element_size()


def large_numel(dtype):
    """An odd number of elements whose size in bytes is just over 1 MiB."""
    return (1 << 20) // itemsize(dtype) + 1


# The sizes every collective is tested with; "large": an odd number of elements just over 1 MiB.
SIZES = [0, 1, 7, 1023, "large"]


def numel_of(size, dtype):
    """Elements of an entry of SIZES: the number itself, large_numel(dtype) for "large"."""
    return large_numel(dtype) if size == "large" else size


def shape_for(numel, dims=2):
    """A multi-dimensional shape with ``numel`` elements: (a, b) with the smallest factor a > 1
    of numel (or (1, numel) for a prime), (3, 0, 2) for 0, (1,) for 1."""
    if numel == 0:
        return (3, 0, 2)
    if numel == 1:
        return (1,)
    for a in range(2, int(numel ** 0.5) + 1):
        if numel % a == 0:
            b = numel // a
            if dims >= 3:
                for c in range(2, int(b ** 0.5) + 1):
                    if b % c == 0:
                        return (a, c, b // c)
            return (a, b)
    return (1, numel)


# --------------------------------------------------------------------------------------
# deterministic inputs

_KINDS = {"sum": 1, "product": 2, "bytes": 3}


def rank_input(rank, shape, dtype, seed, kind="sum"):
    """This rank's deterministic input tensor (contiguous, CPU): numpy's PCG64 stream seeded
    with (seed, rank, kind, dtype), so any rank can rebuild any other rank's input.

    kind "sum": values whose sums over a few ranks stay in range (floats: multiples of 1/4
    in [-8, 8] for 16-bit floats, uniform in [-8, 8) at full precision for float32/64;
    integers: int8 [-30, 30], uint8 [0, 60], int16 +-4000, int32 +-2^28, int64 +-2^40).
    kind "product": small factors (+-0.5, +-1, +-1.5, +-2; integers +-1, +-2; uint8 1..3).
    kind "bytes": any bit pattern for integers, multiples of 1/64 up to +-2^14 for floats
    (for data movement: allgather, broadcast, wrap-around arithmetic).
    """
    numel = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    rng = np.random.default_rng([seed, rank, _KINDS[kind], DTYPES.index(dtype)])
    if kind == "product":
        if dtype.is_floating_point:
            choices = np.array([-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0])
        elif dtype == torch.uint8:
            choices = np.array([1, 2, 3], dtype=np.uint8)
        else:
            choices = np.array([-2, -1, 1, 2], dtype=np.int8)
        values = choices[rng.integers(0, len(choices), size=numel, dtype=np.int8)]
    elif kind == "sum":
        if dtype in (torch.float16, torch.bfloat16):
            values = rng.integers(-32, 33, size=numel, dtype=np.int8).astype(np.float32) / 4.0
        elif dtype.is_floating_point:
            values = rng.random(numel) * 16.0 - 8.0
        else:
            low, high = {torch.int8: (-30, 30), torch.uint8: (0, 60), torch.int16: (-4000, 4000),
                         torch.int32: (-(1 << 28), 1 << 28),
                         torch.int64: (-(1 << 40), 1 << 40)}[dtype]
            values = rng.integers(low, high + 1, size=numel, dtype=_NUMPY_INT[dtype])
    elif kind == "bytes":
        if dtype.is_floating_point:
            values = rng.integers(-(1 << 20), 1 << 20, size=numel, dtype=np.int32).astype(np.float64) / 64.0
        else:
            info = np.iinfo(_NUMPY_INT[dtype])
            values = rng.integers(info.min, info.max, size=numel, dtype=_NUMPY_INT[dtype], endpoint=True)
    else:
        raise ValueError(kind)
    return torch.from_numpy(np.ascontiguousarray(values)).to(dtype).reshape(shape)


def op_kind(op):
    return "product" if op == hvd.Product else "sum"


# --------------------------------------------------------------------------------------
# references

def reference_allreduce(inputs, dtype, op, prescale=1.0, postscale=1.0):
    """Expected allreduce result and per-element tolerance.

    Floats: computed in float64; the tolerance bounds the rounding of the reduction in the
    tensor's dtype (one rounding per rank and per scaling). Integers: computed exactly as
    Concord's documented semantics: scale = truncation toward zero of x * factor (in
    double), sums and products wrap around modulo 2^bits, Average = Sum times 1/size then
    truncated toward zero. Returns (expected as float64 or int64 ndarray, tolerance
    ndarray or 0).
    """
    size = len(inputs)
    post = postscale / size if op == hvd.Average else postscale
    if dtype.is_floating_point:
        xs = np.stack([x.to(torch.float64).numpy().reshape(-1) for x in inputs]) * prescale
        if op in (hvd.Sum, hvd.Average):
            result = xs.sum(axis=0)
            magnitude = np.abs(xs).sum(axis=0)
        elif op == hvd.Min:
            result = xs.min(axis=0)
            magnitude = np.abs(result)
        elif op == hvd.Max:
            result = xs.max(axis=0)
            magnitude = np.abs(result)
        else:
            result = xs.prod(axis=0)
            magnitude = np.abs(result)
        result = result * post
        tolerance = EPS[dtype] * (size + 3) * magnitude * abs(post)
        return result, tolerance
    npdtype = _NUMPY_INT[dtype]
    xs = np.stack([x.numpy().reshape(-1).astype(np.int64) for x in inputs])
    if prescale != 1.0:
        xs = np.trunc(xs.astype(np.float64) * prescale).astype(np.int64).astype(npdtype).astype(np.int64)
    with np.errstate(over="ignore"):
        if op in (hvd.Sum, hvd.Average):
            result = xs.sum(axis=0)
        elif op == hvd.Min:
            result = xs.min(axis=0)
        elif op == hvd.Max:
            result = xs.max(axis=0)
        else:
            result = xs.prod(axis=0)
    result = result.astype(npdtype)  # wrap around like the C++ reduction
    if post != 1.0:
        result = np.trunc(result.astype(np.float64) * post).astype(np.int64).astype(npdtype)
    return result.astype(np.int64), 0


# --------------------------------------------------------------------------------------
# comparisons

def _as_array(tensor):
    if tensor.dtype.is_floating_point:
        return tensor.detach().to(torch.float64).contiguous().numpy().reshape(-1)
    return tensor.detach().to(torch.int64).contiguous().numpy().reshape(-1)


def assert_values(got, expected, tolerance, what):
    """Assert ``got`` (a tensor) equals ``expected`` (ndarray, flat or shaped) within
    ``tolerance`` (scalar or ndarray) element-wise; NaN never matches. ``what`` names
    rank, collective, dtype and size; the message adds the first differing element."""
    g = _as_array(got)
    e = np.asarray(expected).reshape(-1)
    assert g.size == e.size, f"{what}: result has {g.size} elements, expected {e.size}"
    if g.dtype == np.int64 and e.dtype == np.int64 and np.isscalar(tolerance) and tolerance == 0:
        bad = np.flatnonzero(g != e)
    else:
        tol = np.broadcast_to(np.asarray(tolerance, dtype=np.float64), e.shape)
        bad = np.flatnonzero(~(np.abs(g.astype(np.float64) - e.astype(np.float64)) <= tol))
    if bad.size:
        i = int(bad[0])
        index = tuple(int(k) for k in np.unravel_index(i, tuple(got.shape))) if got.dim() else ()
        tol_i = 0 if np.isscalar(tolerance) and tolerance == 0 else float(np.broadcast_to(tolerance, e.shape)[i])
        raise AssertionError(f"{what}: element {i} (index {index}) is {g[i]!r}, expected {e[i]!r} "
                             f"(tolerance {tol_i:g}); {bad.size} of {e.size} elements differ")


def assert_bitwise_equal(got, expected, what):
    """Assert two tensors have the same dtype, shape and bytes."""
    assert got.dtype == expected.dtype, f"{what}: dtype is {got.dtype}, expected {expected.dtype}"
    assert tuple(got.shape) == tuple(expected.shape), \
        f"{what}: shape is {tuple(got.shape)}, expected {tuple(expected.shape)}"
    a = raw_bytes(got)
    b = raw_bytes(expected)
    if not torch.equal(a, b):
        first = int(torch.nonzero(a != b)[0, 0])
        element = first // got.element_size()
        index = tuple(int(k) for k in np.unravel_index(element, tuple(got.shape))) if got.dim() else ()
        flat_got = got.detach().contiguous().reshape(-1)
        flat_expected = expected.detach().contiguous().reshape(-1)
        raise AssertionError(f"{what}: element {element} (index {index}) is {flat_got[element].item()!r}, "
                             f"expected {flat_expected[element].item()!r} (bitwise)")


def raw_bytes(tensor):
    """The tensor's elements as a flat uint8 tensor (row-major order)."""
    if tensor.numel() == 0:  # an empty tensor may have stride 0, which view(dtype) rejects
        return torch.empty(0, dtype=torch.uint8)
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)


# Results up to this size are compared across ranks byte by byte; larger ones by their
# SHA-256 digests first (32 bytes per rank instead of megabytes), and byte by byte only when
# the digests differ, to name the first differing element.
_FULL_COMPARE_BYTES = 64 * 1024


def assert_same_on_all_ranks(tensor, name, what):
    """Allgather the tensor's bytes and assert every rank holds exactly this rank's bytes.
    Collective: every rank must call it with the same ``name`` and a tensor of the same
    size (all ranks take the same branches, as the gathered digests are the same on all)."""
    mine = raw_bytes(tensor)
    if mine.numel() > _FULL_COMPARE_BYTES:
        digest = torch.frombuffer(bytearray(hashlib.sha256(mine.numpy().tobytes()).digest()), dtype=torch.uint8)
        digests = hvd.allgather(digest.reshape(1, -1), name=f"{name}.bitcheck.digest")
        if all(torch.equal(row, digests[0]) for row in digests):
            return
    rows = hvd.allgather(mine.reshape(1, -1), name=f"{name}.bitcheck")
    for other in range(rows.shape[0]):
        if not torch.equal(rows[other], mine):
            first = int(torch.nonzero(rows[other] != mine)[0, 0])
            element = first // tensor.element_size()
            flat = tensor.detach().contiguous().reshape(-1)
            other_value = rows[other].view(tensor.dtype)[element].item()
            raise AssertionError(f"{what}: result is not bit-identical across ranks: element {element} is "
                                 f"{flat[element].item()!r} on rank {hvd.rank()} but {other_value!r} on "
                                 f"rank {other}")


def expect_raises(exception, what, fn, *args, **kwargs):
    """Call fn and return the exception it raised; fail naming ``what`` if it raised nothing
    or something else."""
    try:
        fn(*args, **kwargs)
    except exception as error:
        return error
    except Exception as error:  # noqa: BLE001 - reported as the failure
        raise AssertionError(f"{what}: raised {type(error).__name__}({error}) instead of "
                             f"{exception.__name__}") from error
    raise AssertionError(f"{what}: did not raise {exception.__name__}")


def poll_until_done(handle, what, timeout_s=60.0):
    """Poll until the handle reports done (or timeout); return whether it did. Never
    raises, so every rank goes on to synchronize() even if polling misbehaves here."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if hvd.poll(handle):
            return True
        time.sleep(0.0002)
    return False


def ctx(collective, dtype, shape, **extra):
    """'rank 1/4 allreduce float16 shape=(3, 11, 31) numel=1023 op=Sum' for messages."""
    numel = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    parts = [f"rank {hvd.rank()}/{hvd.size()}", collective, dname(dtype), f"shape={tuple(shape)}",
             f"numel={numel}"]
    parts += [f"{k}={v}" for k, v in extra.items()]
    return " ".join(parts)


def classification_batch(rank, step, n=8):
    """Rank- and step-dependent data for a 6-input, 3-class model: x [n, 6] float32 N(0, 1),
    y [n] int64 in [0, 3); the same (rank, step) gives the same batch on every rank."""
    generator = torch.Generator().manual_seed(10007 * rank + step + 1)
    return torch.randn(n, 6, generator=generator), torch.randint(0, 3, (n,), generator=generator)


def shared_temp_path(stem, name):
    """A path in the temporary folder named after ``stem``, rank 0's process id and ``name``
    (a test's name; '/' replaced), the same on every rank (rank 0's, broadcast as ``name.path``)."""
    path = os.path.join(tempfile.gettempdir(), f"{stem}_{os.getpid()}_{name.replace('/', '_')}.json")
    return hvd.broadcast_object(path, 0, name=f"{name}.path")


def read_timeline(path):
    """The events of the timeline file at ``path`` (a JSON list, Chrome trace format); the
    file is removed."""
    with open(path) as handle:
        events = json.load(handle)
    os.remove(path)
    return events
