"""concord.engine for Python callables: each rank runs its own engines (no collectives).

Covers push order per var, concurrent reads (observed through a barrier), exception
propagation to dependents and waits (the original exception object, rethrown once),
versions, deferred deletion, priorities with one worker, shutdown and argument errors."""

import subprocess
import sys
import textwrap
import threading

import pytest

from concord import InvalidArgumentError, StateError
from concord.engine import Engine


def test_writes_in_push_order_and_versions(rank):
    with Engine(cpu_threads=3) as engine:
        a, b = engine.new_var(), engine.new_var()
        log = []
        for i in range(50):
            engine.push(lambda i=i: log.append(i), writes=[a], kind="comm" if i % 3 == 0 else "cpu")
        seen = []
        engine.push(lambda: seen.append(list(log)), reads=[a], writes=[b])
        engine.wait_for_var(b)
        assert seen == [list(range(50))], f"rank {rank}: writes on one var out of push order: {seen}"
        assert engine.version(a) == 50, f"rank {rank}: version {engine.version(a)}"
        assert engine.version(b) == 1


def test_reads_run_concurrently(rank):
    readers = 3
    barrier = threading.Barrier(readers, timeout=60)  # passes only if all readers overlap
    with Engine(cpu_threads=readers) as engine:
        v = engine.new_var()
        passed = []
        for _ in range(readers):
            engine.push(lambda: passed.append(barrier.wait()), reads=[v])
        engine.wait_all()
        assert sorted(passed) == list(range(readers)), f"rank {rank}: readers did not overlap"


class LayerError(Exception):
    pass


def test_exceptions_reach_dependents_and_waits_once(rank):
    with Engine() as engine:
        a, b, c = engine.new_var(), engine.new_var(), engine.new_var()
        ran = []

        def fail():
            raise LayerError("gradient of layer 3")

        engine.push(fail, writes=[a], name="backward3")
        engine.push(lambda: ran.append("dependent"), reads=[a], writes=[b])
        engine.push(lambda: ran.append("independent"), writes=[c])
        with pytest.raises(LayerError, match="gradient of layer 3"):
            engine.wait_for_var(b)
        engine.wait_for_var(b)  # cleared
        engine.wait_for_var(c)
        assert ran == ["independent"], f"rank {rank}: the dependent must be skipped, ran {ran}"
        with pytest.raises(LayerError):
            engine.wait_all()  # still stored on a
        engine.wait_all()
        engine.push(lambda: ran.append("after"), reads=[a], writes=[b])
        engine.wait_for_var(b)
        assert ran[-1] == "after"


def test_async_operations_complete_from_a_python_thread(rank):
    with Engine(cpu_threads=2) as engine:
        v, w = engine.new_var(), engine.new_var()
        log, threads = [], []

        def start(i):
            def op(on_complete):
                def later():
                    log.append(i)
                    on_complete(LayerError(f"async {i}") if i == 3 else None)
                thread = threading.Thread(target=later)
                threads.append(thread)
                thread.start()
            return op

        for i in range(3):
            engine.push(start(i), writes=[v], kind="comm", asynchronous=True)
        seen = []
        engine.push(lambda: seen.append(list(log)), reads=[v], writes=[w])
        engine.wait_for_var(w)
        assert seen == [[0, 1, 2]], f"rank {rank}: async writes out of order: {seen}"
        engine.push(start(3), writes=[v], asynchronous=True)
        with pytest.raises(LayerError, match="async 3"):
            engine.wait_for_var(v)
        twice, returned = [], threading.Event()

        def complete_twice(on_complete):
            on_complete()  # the operation ends here, before this function returns
            try:
                on_complete()
            except StateError:
                twice.append("refused")
            returned.set()

        engine.push(complete_twice, writes=[v], asynchronous=True)
        assert returned.wait(60)
        engine.wait_all()
        for thread in threads:
            thread.join()
        assert engine.version(v) == 5
        assert twice == ["refused"], f"rank {rank}: a second on_complete() must raise StateError"


def test_priorities_with_one_worker(rank):
    with Engine(cpu_threads=1) as engine:
        started, release = threading.Event(), threading.Event()
        engine.push(lambda: (started.set(), release.wait(60)))
        assert started.wait(60)
        order = []
        priorities = [1, 5, -2, 5, 0]
        for i, p in enumerate(priorities):
            engine.push(lambda i=i: order.append(i), priority=p)
        release.set()
        engine.wait_all()
        expected = sorted(range(len(priorities)), key=lambda i: -priorities[i])  # stable
        assert order == expected, f"rank {rank}: order {order}, expected {expected}"


def test_delete_var_and_argument_errors(rank):
    engine = Engine(cpu_threads=2)
    v, w = engine.new_var(), engine.new_var()
    done = []
    engine.push(lambda: done.append(1), writes=[v])
    engine.delete_var(v)
    with pytest.raises(InvalidArgumentError):
        engine.push(lambda: None, reads=[v])
    with pytest.raises(InvalidArgumentError, match="my_op"):
        engine.push(lambda: None, reads=[w], writes=[w], name="my_op")
    with pytest.raises(InvalidArgumentError):
        engine.push(lambda: None, kind="gpu")
    other = Engine(cpu_threads=1)
    with pytest.raises(InvalidArgumentError):
        engine.push(lambda: None, writes=[other.new_var()])
    other.shutdown()
    with pytest.raises(InvalidArgumentError):
        Engine(cpu_threads=0)
    engine.shutdown()
    assert done == [1], f"rank {rank}: the write queued before delete_var must run"
    with pytest.raises(StateError):
        engine.push(lambda: None, writes=[w])
    engine.shutdown()  # idempotent


def test_shutdown_runs_pending_python_work(rank):
    engine = Engine(cpu_threads=2, comm_threads=1)
    v = engine.new_var()
    total = []
    for i in range(200):
        engine.push(lambda i=i: total.append(i), writes=[v] if i % 2 else [], kind="comm" if i % 5 == 0 else "cpu")
    engine.shutdown()
    assert sorted(total) == list(range(200)), f"rank {rank}: {len(total)} of 200 ran"
    assert engine.version(v) == 100


def test_engine_left_running_at_exit_finishes_its_work(rank, tmp_path):
    """An engine nobody shut down still runs its pending Python operations at exit."""
    out = tmp_path / f"exit_{rank}.txt"
    script = textwrap.dedent(f"""
        import time
        from concord.engine import Engine
        engine = Engine(cpu_threads=2)
        v = engine.new_var()
        def slow_append(i):
            time.sleep(0.001)
            with open({str(out)!r}, "a") as f:
                f.write(f"{{i}}\\n")
        for i in range(20):
            engine.push(lambda i=i: slow_append(i), writes=[v])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"rank {rank}: exit code {result.returncode}: {result.stderr}"
    lines = out.read_text().split()
    assert lines == [str(i) for i in range(20)], f"rank {rank}: {lines}"
