"""Errors of concord.torch: mismatches across ranks (MismatchError on every rank, naming the
tensor, the ranks and their values), bad arguments on one rank (InvalidArgumentError,
raised at once), unknown handles (ValueError), and the runtime's lifecycle (StateError
before init / after shutdown), the latter in a single-process subprocess without mpirun."""

import atexit
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import concord
import concord.torch as hvd
from concord_test_utils import assert_values, ctx, dname, expect_raises



@pytest.fixture
def two_ranks():
    """Skips the test on a single rank, where nothing can mismatch."""
    if hvd.size() < 2:
        pytest.skip("a mismatch across ranks needs at least two ranks")


needs_two_ranks = pytest.mark.usefixtures("two_ranks")


def groups(values_by_rank):
    """'v on ranks [a, b]' for each distinct value, in order of first appearance (the
    order of Concord's messages)."""
    ranks = {}
    for rank, value in enumerate(values_by_rank):
        ranks.setdefault(value, []).append(rank)
    return [f"{value} on ranks [{', '.join(map(str, rs))}]" for value, rs in ranks.items()]


def check_later_collective_works(name):
    """After an error, the runtime still works: a Sum allreduce of ones gives size()."""
    result = hvd.allreduce(torch.ones(3), name=f"{name}.after", op=hvd.Sum)
    assert_values(result, np.full(3, float(hvd.size())), 0,
                  ctx("allreduce after an error", torch.float32, (3,), op="Sum"))


def expect_mismatch(what, fn, name, field, values_by_rank):
    """fn() must raise MismatchError with 'Mismatched <field> for tensor '<name>'' and a
    'value on ranks [...]' group for every distinct value."""
    error = expect_raises(hvd.MismatchError, what, fn)
    message = str(error)
    expected = [f"Mismatched {field} for tensor '{name}'"] + groups(values_by_rank)
    missing = [part for part in expected if part not in message]
    assert not missing, f"{what}: MismatchError message {message!r} lacks {missing}"
    return error


@needs_two_ranks
@pytest.mark.parametrize("form", ["allreduce", "allreduce_async_"])
def test_mismatched_shape(form, tname):
    r, p = hvd.rank(), hvd.size()
    tensor = torch.full((r + 1,), float(r))
    original = tensor.clone()
    if form == "allreduce":
        fn = lambda: hvd.allreduce(tensor, name=tname)  # noqa: E731
    else:
        fn = lambda: hvd.synchronize(hvd.allreduce_async_(tensor, name=tname))  # noqa: E731
    what = ctx(form, torch.float32, (r + 1,), mismatch="shape")
    expect_mismatch(what, fn, tname, "shape", [f"[{q + 1}]" for q in range(p)])
    assert torch.equal(tensor, original), f"{what}: the tensor was modified by a failed allreduce"
    check_later_collective_works(tname)


@needs_two_ranks
def test_mismatched_dtype(tname):
    r, p = hvd.rank(), hvd.size()
    dtypes = [torch.float32 if q % 2 == 0 else torch.float64 for q in range(p)]
    tensor = torch.ones(4, dtype=dtypes[r])
    what = ctx("allreduce", dtypes[r], (4,), mismatch="dtype")
    expect_mismatch(what, lambda: hvd.allreduce(tensor, name=tname), tname, "dtype", [dname(d) for d in dtypes])
    check_later_collective_works(tname)


@needs_two_ranks
def test_mismatched_op(tname):
    r, p = hvd.rank(), hvd.size()
    ops = [("sum", hvd.Sum) if q % 2 == 0 else ("max", hvd.Max) for q in range(p)]
    what = ctx("allreduce", torch.float32, (4,), mismatch="op")
    expect_mismatch(what, lambda: hvd.allreduce(torch.ones(4), name=tname, op=ops[r][1]), tname, "reduce op",
                    [o[0] for o in ops])
    check_later_collective_works(tname)


@needs_two_ranks
def test_mismatched_prescale_factor(tname):
    r, p = hvd.rank(), hvd.size()
    what = ctx("allreduce", torch.float32, (4,), mismatch="prescale_factor")
    expect_mismatch(what, lambda: hvd.allreduce(torch.ones(4), name=tname, prescale_factor=float(r + 1)),
                    tname, "prescale factor", [str(q + 1) for q in range(p)])
    check_later_collective_works(tname)


@needs_two_ranks
@pytest.mark.parametrize("form", ["broadcast", "broadcast_async_"])
def test_mismatched_root(form, tname):
    r, p = hvd.rank(), hvd.size()
    tensor = torch.full((5,), float(r))
    original = tensor.clone()
    if form == "broadcast":
        fn = lambda: hvd.broadcast(tensor, r, name=tname)  # noqa: E731
    else:
        fn = lambda: hvd.synchronize(hvd.broadcast_async_(tensor, r, name=tname))  # noqa: E731
    what = ctx(form, torch.float32, (5,), root=r, mismatch="root")
    expect_mismatch(what, fn, tname, "root rank", [str(q) for q in range(p)])
    assert torch.equal(tensor, original), f"{what}: the tensor was modified by a failed broadcast"
    check_later_collective_works(tname)


@needs_two_ranks
def test_mismatched_allgather_trailing_shape(tname):
    r, p = hvd.rank(), hvd.size()
    what = ctx("allgather", torch.float32, (2, r + 1), mismatch="shape (all but dim 0)")
    expect_mismatch(what, lambda: hvd.allgather(torch.zeros(2, r + 1), name=tname), tname,
                    "shape (all but dim 0)", [f"[{q + 1}]" for q in range(p)])
    check_later_collective_works(tname)


@needs_two_ranks
def test_mismatched_collective(tname):
    """The same name used for an allreduce on even ranks and a broadcast on odd ranks."""
    r, p = hvd.rank(), hvd.size()
    tensor = torch.ones(4)
    fn = (lambda: hvd.allreduce(tensor, name=tname)) if r % 2 == 0 else (lambda: hvd.broadcast(tensor, 0, name=tname))
    what = ctx("allreduce" if r % 2 == 0 else "broadcast", torch.float32, (4,), mismatch="collective")
    expect_mismatch(what, fn, tname, "collective", ["allreduce" if q % 2 == 0 else "broadcast" for q in range(p)])
    check_later_collective_works(tname)


@needs_two_ranks
def test_same_name_twice_in_flight(tname):
    """A second submission of a name still in flight on this rank fails at once with
    InvalidArgumentError; the first one completes normally. To keep the first submission
    in flight for sure, a "holder" rank submits its part only after every other rank has
    tried the duplicate (rank 0 holds first, then rank 1, so every rank gets tested)."""
    r, p = hvd.rank(), hvd.size()
    outcomes = {}
    for holder in (0, 1):
        name = f"{tname}.holder{holder}"
        tensor = torch.full((6,), float(r))
        if r == holder:
            hvd.allreduce(torch.zeros(1), name=f"{name}.others_tried")
            handle = hvd.allreduce_async(tensor, name=name, op=hvd.Sum)
        else:
            handle = hvd.allreduce_async(tensor, name=name, op=hvd.Sum)
            try:
                hvd.allreduce_async(torch.ones(6), name=name)
                outcomes[holder] = "did not raise"
            except Exception as error:  # noqa: BLE001 - checked below, after the collectives
                outcomes[holder] = error
            hvd.allreduce(torch.zeros(1), name=f"{name}.others_tried")
        try:
            outcomes[(holder, "first")] = hvd.synchronize(handle)
        except Exception as error:  # noqa: BLE001
            outcomes[(holder, "first")] = error
    for holder in (0, 1):
        what = ctx("allreduce_async", torch.float32, (6,), case=f"same name twice in flight (holder rank {holder})")
        first = outcomes[(holder, "first")]
        assert isinstance(first, torch.Tensor), f"{what}: the first submission failed: {first!r}"
        assert_values(first, np.full(6, p * (p - 1) / 2), 0, what + " (the first submission)")
        if r == holder:
            continue
        error = outcomes[holder]
        assert isinstance(error, hvd.InvalidArgumentError), \
            f"{what}: the second submission gave {error!r}, expected InvalidArgumentError"
        assert f"'{tname}.holder{holder}'" in str(error) and "already in flight" in str(error), \
            f"{what}: message {str(error)!r} does not name the tensor and say it is already in flight"


UNSUPPORTED = [torch.complex64, torch.complex128]  # int16 and bool are supported dtypes


@pytest.mark.parametrize("collective", ["allreduce", "allreduce_async_", "allgather", "broadcast_"])
@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=dname)
def test_unsupported_dtype(dtype, collective, tname):
    tensor = torch.zeros(3, dtype=dtype)
    fn = {"allreduce": lambda: hvd.allreduce(tensor, name=tname),
          "allreduce_async_": lambda: hvd.allreduce_async_(tensor, name=tname),
          "allgather": lambda: hvd.allgather(tensor, name=tname),
          "broadcast_": lambda: hvd.broadcast_(tensor, 0, name=tname)}[collective]
    what = ctx(collective, dtype, (3,), case="unsupported dtype")
    error = expect_raises(hvd.InvalidArgumentError, what, fn)
    message = str(error)
    for part in (f"'{tname}'", "unsupported dtype", str(dtype), "torch.float32"):
        assert part in message, f"{what}: message {message!r} lacks {part!r}"


@pytest.mark.parametrize("collective", ["allreduce", "allreduce_async_"])
def test_bool_reduction_is_refused_naming_the_dtype(collective, tname):
    """bool travels through broadcast/allgather/alltoall but has no reduction."""
    tensor = torch.zeros(3, dtype=torch.bool)
    fn = {"allreduce": lambda: hvd.allreduce(tensor, name=tname),
          "allreduce_async_": lambda: hvd.allreduce_async_(tensor, name=tname)}[collective]
    error = expect_raises(hvd.InvalidArgumentError, ctx(collective, torch.bool, (3,)), fn)
    assert "bool" in str(error) and tname in str(error), str(error)


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "broadcast"])
def test_non_cpu_device(collective, tname):
    """Concord takes CPU tensors only; a tensor elsewhere (CUDA where there is a GPU, else
    PyTorch's data-less 'meta' device) is rejected before anything is submitted."""
    device = "cuda" if torch.cuda.is_available() else "meta"
    tensor = torch.zeros(4, device=device)
    fn = {"allreduce": lambda: hvd.allreduce(tensor, name=tname),
          "allgather": lambda: hvd.allgather(tensor, name=tname),
          "broadcast": lambda: hvd.broadcast(tensor, 0, name=tname)}[collective]
    what = ctx(collective, torch.float32, (4,), device=device)
    error = expect_raises(hvd.InvalidArgumentError, what, fn)
    for part in (f"'{tname}'", device, "CPU"):
        assert part in str(error), f"{what}: message {str(error)!r} lacks {part!r}"
    check_later_collective_works(tname)


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "broadcast"])
def test_not_a_tensor(collective, tname):
    array = np.zeros(3, dtype=np.float32)
    fn = {"allreduce": lambda: hvd.allreduce_async_(array, name=tname),
          "allgather": lambda: hvd.allgather(array, name=tname),
          "broadcast": lambda: hvd.broadcast_(array, 0, name=tname)}[collective]
    error = expect_raises(TypeError, f"rank {hvd.rank()} {collective} of a numpy array", fn)
    assert "torch.Tensor" in str(error), f"rank {hvd.rank()} {collective}: message {str(error)!r}"


@pytest.mark.parametrize("collective", ["allreduce", "allgather", "broadcast"])
def test_empty_name(collective):
    tensor = torch.ones(2)
    fn = {"allreduce": lambda: hvd.allreduce(tensor, name=""),
          "allgather": lambda: hvd.allgather(tensor, name=""),
          "broadcast": lambda: hvd.broadcast(tensor, 0, name="")}[collective]
    what = ctx(collective, torch.float32, (2,), name="''")
    error = expect_raises(hvd.InvalidArgumentError, what, fn)
    assert "name must not be empty" in str(error), f"{what}: message {str(error)!r}"


@pytest.mark.parametrize("which", ["size", "negative"])
@pytest.mark.parametrize("form", ["broadcast", "broadcast_", "broadcast_async_"])
def test_root_out_of_range(form, which, tname):
    p = hvd.size()
    root = p if which == "size" else -1
    tensor = torch.ones(2)
    fn = {"broadcast": lambda: hvd.broadcast(tensor, root, name=tname),
          "broadcast_": lambda: hvd.broadcast_(tensor, root, name=tname),
          "broadcast_async_": lambda: hvd.broadcast_async_(tensor, root, name=tname)}[form]
    what = ctx(form, torch.float32, (2,), root=root)
    error = expect_raises(hvd.InvalidArgumentError, what, fn)
    expected = f"root rank {root} is outside [0, {p})"
    assert f"'{tname}'" in str(error) and expected in str(error), \
        f"{what}: message {str(error)!r} lacks the tensor name or {expected!r}"
    check_later_collective_works(tname)


def test_allgather_scalar(tname):
    what = ctx("allgather", torch.float32, ())
    error = expect_raises(hvd.InvalidArgumentError, what, hvd.allgather, torch.tensor(1.0), name=tname)
    assert f"'{tname}'" in str(error) and "scalar" in str(error), f"{what}: message {str(error)!r}"


@pytest.mark.parametrize("scale", ["prescale_factor", "postscale_factor"])
@pytest.mark.parametrize("value", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_non_finite_scale_factor(scale, value, tname):
    what = ctx("allreduce", torch.float32, (2,), **{scale: value})
    error = expect_raises(hvd.InvalidArgumentError, what, hvd.allreduce, torch.ones(2), name=tname,
                          **{scale: value})
    assert "finite" in str(error), f"{what}: message {str(error)!r}"


def test_bad_reduce_op_arguments(tname):
    what = ctx("allreduce", torch.float32, (2,))
    error = expect_raises(ValueError, what + " op=42", hvd.allreduce, torch.ones(2), name=tname, op=42)
    assert "unknown op" in str(error), f"{what} op=42: message {str(error)!r}"
    error = expect_raises(ValueError, what + " average=True op=Sum", hvd.allreduce, torch.ones(2), name=tname,
                          average=True, op=hvd.Sum)
    assert "either" in str(error), f"{what} average and op: message {str(error)!r}"


@pytest.mark.parametrize("call", ["poll", "synchronize"])
def test_unknown_handle(call):
    fn = hvd.poll if call == "poll" else hvd.synchronize
    for handle in (10 ** 9, -1, "not a handle"):
        error = expect_raises(ValueError, f"rank {hvd.rank()} {call}({handle!r})", fn, handle)
        assert "unknown handle" in str(error), f"rank {hvd.rank()} {call}({handle!r}): message {str(error)!r}"


def test_handle_is_consumed_by_synchronize(tname):
    handle = hvd.allreduce_async(torch.ones(2), name=tname)
    hvd.synchronize(handle)
    for call, fn in (("poll", hvd.poll), ("synchronize", hvd.synchronize)):
        error = expect_raises(ValueError, f"rank {hvd.rank()} {call} of a synchronized allreduce handle", fn, handle)
        assert "unknown handle" in str(error), f"rank {hvd.rank()} {call}: message {str(error)!r}"


# ----------------------------------------------------------------------------------------
# lifecycle, in a fresh single process without mpirun

LIFECYCLE_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import torch
    import concord.torch as hvd

    results = {}

    def attempt(key, fn):
        try:
            value = fn()
            results[key] = ["ok", value if isinstance(value, (bool, int, float, list)) else repr(value)]
        except Exception as error:
            results[key] = [type(error).__name__, str(error)]

    ones = lambda: torch.ones(3)
    collectives = {
        "rank": hvd.rank, "size": hvd.size, "local_rank": hvd.local_rank, "local_size": hvd.local_size,
        "allreduce": lambda: hvd.allreduce(ones(), name="x").tolist(),
        "allreduce_async_": lambda: hvd.allreduce_async_(ones(), name="x"),
        "allgather": lambda: hvd.allgather(ones(), name="x").tolist(),
        "broadcast": lambda: hvd.broadcast(ones(), 0, name="x").tolist(),
        "broadcast_parameters": lambda: hvd.broadcast_parameters({"w": ones()}, 0),
    }

    attempt("before.is_initialized", hvd.is_initialized)
    for key, fn in collectives.items():
        attempt("before." + key, fn)

    os.environ["CONCORD_CYCLE_TIME"] = "not-a-number"
    attempt("bad_env.init", hvd.init)
    attempt("bad_env.is_initialized", hvd.is_initialized)
    del os.environ["CONCORD_CYCLE_TIME"]

    os.environ["CONCORD_ALLREDUCE_ALGORITHM"] = "no_such_algorithm"
    attempt("bad_algorithm.init", hvd.init)
    attempt("bad_algorithm.is_initialized", hvd.is_initialized)
    del os.environ["CONCORD_ALLREDUCE_ALGORITHM"]

    attempt("init", hvd.init)
    attempt("init_again", hvd.init)
    attempt("during.is_initialized", hvd.is_initialized)
    for key in ("rank", "size", "local_rank", "local_size"):
        attempt("during." + key, collectives[key])
    attempt("during.allreduce_sum", lambda: hvd.allreduce(torch.arange(4.0), name="a", op=hvd.Sum).tolist())
    attempt("during.allreduce_average", lambda: hvd.allreduce(torch.arange(4.0), name="a").tolist())
    attempt("during.allgather", lambda: hvd.allgather(torch.arange(4.0).reshape(2, 2), name="g").tolist())
    attempt("during.broadcast", lambda: hvd.broadcast(torch.arange(4.0), 0, name="b").tolist())
    attempt("during.broadcast_object", lambda: hvd.broadcast_object({"k": [1, 2]}, 0))

    attempt("shutdown", hvd.shutdown)
    attempt("after.is_initialized", hvd.is_initialized)
    for key, fn in collectives.items():
        attempt("after." + key, fn)
    attempt("shutdown_again", hvd.shutdown)

    attempt("reinit", hvd.init)
    attempt("reinit.is_initialized", hvd.is_initialized)
    attempt("reinit.size", hvd.size)
    attempt("reinit.rank", hvd.rank)
    attempt("reinit.allreduce_sum", lambda: hvd.allreduce(torch.arange(4.0), name="a", op=hvd.Sum).tolist())
    attempt("reinit.allgather", lambda: hvd.allgather(torch.arange(3.0), name="g").tolist())
    attempt("reinit.shutdown", hvd.shutdown)
    print("RESULTS " + json.dumps(results))
""")

# Variables by which a process learns it was started by mpirun/mpiexec (Open MPI, PMIx,
# MPICH/Hydra) or by a store launcher (torchrun's env://, concord-run --launcher local,
# srun); without them the process is a world of one.
_LAUNCHER_PREFIXES = ("OMPI_", "PMIX_", "PMI_", "HYDRA_", "MPI_LOCAL", "OPAL_", "ORTE_", "RANK", "WORLD_SIZE",
                      "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_", "SLURM_",
                      "CONCORD_STORE", "CONCORD_RUN_")


_lifecycle_process = {}


def _lifecycle_command():
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_PREFIXES)}
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(concord.__file__)))
    paths = [package_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return dict(args=[sys.executable, "-c", LIFECYCLE_SCRIPT], env=env, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True)


def _is_launcher_rank_0():
    return all(os.environ.get(v, "0") == "0" for v in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "RANK"))


def start_background_work(items):
    """Called by conftest once collection is done: on rank 0, start the lifecycle
    subprocess now, so that its start-up (a second interpreter, torch, MPI) overlaps the
    other tests instead of holding every rank up when the lifecycle tests run."""
    if _is_launcher_rank_0() and any(item.name.startswith("test_lifecycle") for item in items):
        process = subprocess.Popen(**_lifecycle_command())
        _lifecycle_process["process"] = process
        atexit.register(lambda: process.poll() is None and process.kill())


@pytest.fixture(scope="module")
def lifecycle():
    """The outcome of LIFECYCLE_SCRIPT, run in a fresh process without the MPI launcher's
    environment: {case: [outcome, value or message]} (outcome "ok" or the exception's
    name). Only rank 0 runs it: the subprocess is independent of the ranks."""
    if hvd.rank() != 0:
        pytest.skip("the single-process lifecycle subprocess runs on rank 0 only")
    process = _lifecycle_process.pop("process", None) or subprocess.Popen(**_lifecycle_command())
    try:
        stdout, stderr = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
    lines = [line for line in stdout.splitlines() if line.startswith("RESULTS ")]
    assert process.returncode == 0 and lines, (
        f"rank {hvd.rank()}: lifecycle subprocess exited with {process.returncode}\n"
        f"stdout:\n{stdout[-3000:]}\nstderr:\n{stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULTS "):])


def _expect(results, key, outcome, value=None, contains=None):
    got = results.get(key)
    where = f"rank {hvd.rank()} lifecycle subprocess (single process, no mpirun), case {key!r}"
    assert got is not None, f"{where}: not run"
    assert got[0] == outcome, f"{where}: outcome {got[0]} ({got[1]!r}), expected {outcome}"
    if value is not None:
        assert got[1] == value, f"{where}: value {got[1]!r}, expected {value!r}"
    if contains is not None:
        assert contains in got[1], f"{where}: message {got[1]!r} lacks {contains!r}"


def test_lifecycle_before_init_raises_state_error(lifecycle):
    _expect(lifecycle, "before.is_initialized", "ok", False)
    for key in ("rank", "size", "local_rank", "local_size", "allreduce", "allreduce_async_", "allgather",
                "broadcast", "broadcast_parameters"):
        _expect(lifecycle, "before." + key, "StateError", contains="not initialized")


def test_lifecycle_malformed_environment_variable(lifecycle):
    _expect(lifecycle, "bad_env.init", "InvalidArgumentError", contains="CONCORD_CYCLE_TIME='not-a-number'")
    _expect(lifecycle, "bad_env.is_initialized", "ok", False)


def test_lifecycle_unknown_algorithm_name(lifecycle):
    _expect(lifecycle, "bad_algorithm.init", "InvalidArgumentError",
            contains="CONCORD_ALLREDUCE_ALGORITHM=no_such_algorithm")
    _expect(lifecycle, "bad_algorithm.init", "InvalidArgumentError", contains="known: ring")
    _expect(lifecycle, "bad_algorithm.is_initialized", "ok", False)


def test_lifecycle_single_process_is_rank_0_of_1(lifecycle):
    _expect(lifecycle, "init", "ok")
    _expect(lifecycle, "init_again", "ok")
    _expect(lifecycle, "during.is_initialized", "ok", True)
    for key, value in (("rank", 0), ("size", 1), ("local_rank", 0), ("local_size", 1)):
        _expect(lifecycle, "during." + key, "ok", value)
    _expect(lifecycle, "during.allreduce_sum", "ok", [0.0, 1.0, 2.0, 3.0])
    _expect(lifecycle, "during.allreduce_average", "ok", [0.0, 1.0, 2.0, 3.0])
    _expect(lifecycle, "during.allgather", "ok", [[0.0, 1.0], [2.0, 3.0]])
    _expect(lifecycle, "during.broadcast", "ok", [0.0, 1.0, 2.0, 3.0])
    _expect(lifecycle, "during.broadcast_object", "ok", repr({"k": [1, 2]}))


def test_lifecycle_after_shutdown_raises_state_error(lifecycle):
    _expect(lifecycle, "shutdown", "ok")
    _expect(lifecycle, "after.is_initialized", "ok", False)
    for key in ("rank", "size", "local_rank", "local_size", "allreduce", "allreduce_async_", "allgather",
                "broadcast", "broadcast_parameters"):
        _expect(lifecycle, "after." + key, "StateError", contains="not initialized")
    _expect(lifecycle, "shutdown_again", "ok")


def test_lifecycle_init_again_after_shutdown(lifecycle):
    _expect(lifecycle, "reinit", "ok")
    _expect(lifecycle, "reinit.is_initialized", "ok", True)
    _expect(lifecycle, "reinit.size", "ok", 1)
    _expect(lifecycle, "reinit.rank", "ok", 0)
    _expect(lifecycle, "reinit.allreduce_sum", "ok", [0.0, 1.0, 2.0, 3.0])
    _expect(lifecycle, "reinit.allgather", "ok", [0.0, 1.0, 2.0])
    _expect(lifecycle, "reinit.shutdown", "ok")
