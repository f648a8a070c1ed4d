"""pytest setup of the Python suite.

Run it on one rank (``python -m pytest tests/python``) or on several
(``mpirun -np 4 python -m pytest tests/python``): every rank runs every test in the same
order, so the collectives inside a test meet the same test's collectives on the other
ranks. Tests therefore run all of their collectives before asserting, so that a failing
check on one rank does not leave the other ranks waiting. Each rank prints its own summary;
failure messages start with ``rank R/N``.

``concord.torch`` is initialised once for the whole session (``hvd.init()``) and shut down
at its end; the lifecycle tests (before init / after shutdown) run in a subprocess.
"""

import os

import pytest

import concord.torch as hvd


def _launcher_rank():
    for variable in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "RANK"):
        if variable in os.environ:
            return os.environ[variable]
    return "0"


def pytest_report_header(config):
    return f"concord: rank {_launcher_rank()} (from the launcher's environment)"


_WHERE = {"text": f"rank {_launcher_rank()}"}


@pytest.fixture(scope="session", autouse=True)
def concord_runtime():
    """hvd.init() once per session (collective: every rank runs it before its first test),
    hvd.shutdown() at the end. CONCORD_TEST_INIT_PROCESS_SETS=dynamic makes it
    ``hvd.init(process_sets="dynamic")`` (Horovod's way of allowing add_process_set())."""
    hvd.init(process_sets=os.environ.get("CONCORD_TEST_INIT_PROCESS_SETS"))
    _WHERE["text"] = f"rank {hvd.rank()} of {hvd.size()}"
    yield
    hvd.shutdown()


@pytest.fixture
def rank():
    return hvd.rank()


@pytest.fixture
def size():
    return hvd.size()


@pytest.fixture
def tname(request):
    """A tensor-name prefix unique to the test (the same on every rank)."""
    return request.node.nodeid.split("::", 1)[-1]


def pytest_collection_finish(session):
    """Let test modules start slow work that does not involve the ranks (a module-level
    ``start_background_work(items)``) before the first test runs."""
    for module in {item.module for item in session.items if hasattr(item, "module")}:
        start = getattr(module, "start_background_work", None)
        if start is not None:
            start(session.items)


def pytest_terminal_summary(terminalreporter):
    stats = terminalreporter.stats
    counts = ", ".join(f"{len(stats.get(key, []))} {key}" for key in ("passed", "failed", "skipped", "error")
                       if stats.get(key))
    terminalreporter.write_line(f"[concord {_WHERE['text']}] {counts}")
