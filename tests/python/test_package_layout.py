"""The Python package's modules import each other without cycles (none at module level, none
deferred into a function), so each concept's module can be read and loaded on its own; and
Horovod's module name concord.torch.mpi_ops still offers every name horovod.torch.mpi_ops
scripts use."""

import ast
import os

import concord


def _imports(path, package):
    """The concord modules `path` imports anywhere in its code (module level or inside
    functions)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("concord"):
            found.add(node.module)
            for alias in node.names:  # "from concord.torch import handles" imports a module
                candidate = f"{node.module}.{alias.name}"
                if candidate in package:
                    found.add(candidate)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("concord"))
    return found


def _package_modules():
    root = os.path.dirname(concord.__file__)
    modules = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                relative = os.path.relpath(os.path.join(folder, name), os.path.dirname(root))[:-3]
                module = relative.replace(os.sep, ".").removesuffix(".__init__")
                modules[module] = os.path.join(folder, name)
    return modules


def test_no_import_cycles():
    modules = _package_modules()
    graph = {m: {i for i in _imports(p, modules) if i in modules and i != m} for m, p in modules.items()}
    # a package's __init__ imports its submodules by design; cycles through it do not count
    packages = {m for m, p in modules.items() if p.endswith("__init__.py")}
    state = {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module] - packages):
            if state.get(target) == "open":
                cycle = path[path.index(target):] + [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(set(graph) - packages):
        if module not in state:
            visit(module, [module])


def test_mpi_ops_keeps_horovods_names():
    from concord.torch import mpi_ops
    from concord.torch import autograd, collectives
    horovod_names = ["allreduce", "allreduce_async", "allreduce_", "allreduce_async_", "grouped_allreduce",
                     "grouped_allreduce_async", "allgather", "allgather_async", "broadcast", "broadcast_async",
                     "broadcast_", "broadcast_async_", "alltoall", "alltoall_async", "reducescatter",
                     "reducescatter_async", "join", "barrier", "poll", "synchronize", "Average", "Sum", "Adasum"]
    missing = [n for n in horovod_names if not hasattr(mpi_ops, n)]
    assert not missing, f"concord.torch.mpi_ops lacks {missing}"
    # Horovod's mpi_ops.allreduce is the differentiable one
    assert mpi_ops.allreduce is autograd.allreduce and mpi_ops.allreduce_async is collectives.allreduce_async
