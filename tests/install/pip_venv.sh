#!/usr/bin/env bash
# `pip install --no-build-isolation .` into a fresh virtual environment made with
# --system-site-packages (Debian's torch and numpy stay visible), then, from another
# directory and without PYTHONPATH: import concord.torch from the venv, the versions of
# concord.__version__, the installed metadata and `concord-info --version` must all equal
# the CMake project version, and a 2-rank allreduce through concord.torch must be right.
# Usage: pip_venv.sh PYTHON SOURCE_DIR WORKDIR VERSION -- LAUNCHER...   (LAUNCHER without -np)
# The CMake build directory of the extension ($CONCORD_PIP_BUILD_DIR, else WORKDIR/cmake) is
# kept between runs, so a rerun only recompiles what changed; the venv is made afresh every
# time.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="$1" source_dir="$2" workdir="$3" version="$4"
shift 4
[ "${1:-}" = "--" ] && shift
(($#)) || { echo "pip_venv.sh: no launcher given" >&2; exit 2; }
venv="$workdir/venv"
rm -rf "$venv"
mkdir -p "$workdir"
unset PYTHONPATH
"$python" -m venv --system-site-packages --without-pip "$venv"
# The system's pip (python3-pip) installs into the venv it is run from.
(cd "$source_dir" && CONCORD_PIP_BUILD_DIR="${CONCORD_PIP_BUILD_DIR:-$workdir/cmake}" CONCORD_PIP_JOBS="${CONCORD_PIP_JOBS:-2}" \
  "$venv/bin/python" -m pip install --no-build-isolation --no-deps --no-index --no-cache-dir \
  --disable-pip-version-check -q .)
# The extension is built under $workdir/cmake and installed into the venv, never written into
# the source tree (python/concord/ holds only sources).
if built=$(find "$source_dir/python" -name '_core*.so' | grep .); then
  echo "pip install wrote the extension into the source tree: $built" >&2
  exit 1
fi

cd /
"$venv/bin/python" - "$venv" "$version" <<'PY'
import importlib.metadata, os, sys
import concord, concord.torch
venv, version = sys.argv[1], sys.argv[2]
where = os.path.realpath(concord.__file__)
assert where.startswith(os.path.realpath(venv)), f"concord imported from {where}, not from the venv {venv}"
found = {"concord.__version__": concord.__version__, "metadata": importlib.metadata.version("concord")}
assert all(v == version for v in found.values()), f"versions differ from CMake's {version}: {found}"
print(f"concord {version} from {where}")
PY
info=$("$venv/bin/concord-info" --version)
[ "$info" = "concord-info $version" ] || { echo "concord-info --version printed '$info', expected 'concord-info $version'" >&2; exit 1; }
"$venv/bin/concord-info" | grep CONCORD_FUSION_THRESHOLD >/dev/null
"$venv/bin/concord-info" --json | "$venv/bin/python" -c "import json, sys; assert json.load(sys.stdin)[\"collectives\"]"
if [ -e "$source_dir/python/concord/run.py" ]; then
  "$venv/bin/concord-run" --help >/dev/null
fi

"$@" -np 2 "$venv/bin/python" "$here/allreduce_check.py" "$venv"
