"""Concord's Python package: ``python3 -m pip install --no-build-isolation .``

Installs ``concord`` (with ``concord.torch``, the Horovod-compatible PyTorch API), the
``concord._core`` extension and the console scripts ``concord-info`` (and ``concord-run``,
the launcher, where python/concord/run.py exists). The extension is built by CMake
(CMakeLists.txt, target ``_core``) with static Concord libraries linked in, so the installed
package needs no other Concord file; Open MPI comes from the system (libopenmpi3).

Build inputs: Debian's cmake, g++, ninja-build (used when found), pybind11-dev,
libopenmpi-dev, libspdlog-dev, nlohmann-json3-dev, python3-setuptools and python3-wheel; no
network (hence ``--no-build-isolation``). Environment:

* ``CONCORD_PIP_BUILD_DIR``: the CMake build directory (default: under setuptools' build
  directory, ``build/pip/...``); kept between builds, so a rebuild only recompiles changes.
* ``CONCORD_PIP_JOBS``: parallel compile jobs (default: the number of CPUs).
* ``CMAKE_CXX_COMPILER_LAUNCHER`` (e.g. ``ccache``) is honoured by CMake itself.

The version is the one of ``project(Concord VERSION ...)`` in CMakeLists.txt, the same that
``concord.__version__`` and ``concord-info --version`` report.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def cmake_version():
    """The version in ``project(Concord VERSION x.y.z ...)`` of CMakeLists.txt.

    Raises:
        RuntimeError: no such project() line.
    """
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(\s*Concord\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", text)
    if not match:
        raise RuntimeError("CMakeLists.txt has no 'project(Concord VERSION x.y.z ...)' line")
    return match.group(1)


class CMakeBuild(build_ext):
    """Builds each extension (only ``concord._core``) by configuring and building the CMake
    project with the running interpreter, static Concord libraries and no tests or tools,
    then copies the module to where setuptools expects it."""

    def build_extension(self, ext):
        build_dir = Path(os.environ.get("CONCORD_PIP_BUILD_DIR") or Path(self.build_temp) / "cmake").resolve()
        build_dir.mkdir(parents=True, exist_ok=True)
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build_dir),
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DCONCORD_BUILD_TESTS=OFF", "-DCONCORD_BUILD_TOOLS=OFF", "-DCONCORD_BUILD_PYTHON=ON",
            "-DCONCORD_SHARED_LIBS=OFF",
        ]
        if shutil.which("ninja") and not (build_dir / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja"]
        jobs = os.environ.get("CONCORD_PIP_JOBS") or str(os.cpu_count() or 1)
        subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_core", "-j", jobs], check=True)
        built = sorted((build_dir / "python" / "concord").glob("_core*.so"))
        if not built:
            raise RuntimeError(f"the CMake build did not produce concord/_core*.so under {build_dir}/python")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[-1], target)


def console_scripts():
    """``concord-info`` always; ``concord-run`` once the launcher module exists."""
    scripts = ["concord-info = concord.info:main"]
    if (ROOT / "python" / "concord" / "run.py").exists():
        scripts.append("concord-run = concord.run:main")
    return scripts


# setuptools' own build and egg-info directories: under build/ (ignored by git), never in
# the source tree.
PIP_BUILD_BASE = "build/pip"
(ROOT / PIP_BUILD_BASE).mkdir(parents=True, exist_ok=True)

setup(
    name="concord",
    version=cmake_version(),
    description="Collective communication for data-parallel training: Horovod-compatible "
                "PyTorch API over Concord's C++ runtime (MPI)",
    long_description=(ROOT / "README.md").read_text(),
    long_description_content_type="text/markdown",
    python_requires=">=3.9",
    package_dir={"": "python"},
    packages=find_packages("python"),
    ext_modules=[Extension("concord._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    entry_points={"console_scripts": console_scripts()},
    options={"build": {"build_base": PIP_BUILD_BASE}, "egg_info": {"egg_base": PIP_BUILD_BASE}},
    zip_safe=False,
)
