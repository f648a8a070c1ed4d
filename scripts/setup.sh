#!/usr/bin/env bash
# Installs the Debian packages Concord needs (only those missing), then configures and
# builds it into build/ (override with CONCORD_BUILD_DIR) and installs it into
# <build>/prefix (cmake --install: libraries, tools, headers, the Python package under
# prefix/lib/python3/dist-packages), which scripts/train.sh and the tests use. Safe to run
# repeatedly.
# Usage: scripts/setup.sh [--training-only]
#   (default)        everything the tests, CI and the scripts need: the GoogleTest suites
#                    are built, and the docs toolchain, clang (fuzzing) etc. installed
#   --training-only  what scripts/train.sh needs: the library, the tools and the Python
#                    extension, configured with CONCORD_BUILD_TESTS=OFF (a later default run
#                    turns the tests on again in the same build directory)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") training_only=0 tests=ON ;;
  --training-only) training_only=1 tests=OFF ;;
  *) echo "usage: $0 [--training-only]" >&2; exit 2 ;;
esac

packages=(  # the build of the library, tools and Python extension, and the training example
  g++ cmake ninja-build pkg-config
  ccache  # cmake/ConcordCcache.cmake: every build tree of every clone shares compiled objects
  openmpi-bin libopenmpi-dev
  libucx-dev  # the UCX transport (CONCORD_WITH_UCX, src/transport/ucx/): torchrun, srun, concord-run
  libpmix-dev  # the UCX world's rendezvous through mpirun's PMIx server (CONCORD_WITH_PMIX)
  libzmq3-dev  # the TCP rendezvous store (src/transport/rendezvous/)
  libspdlog-dev libcli11-dev nlohmann-json3-dev pybind11-dev python3-dev
  python3-torch python3-numpy python3-sklearn
  python3-tqdm  # examples/train_digits.py's progress bar
)
((training_only)) || packages+=(  # the tests, CI and the other scripts
  clang-14 libclang-rt-14-dev  # libFuzzer: scripts/fuzz.sh
  clang-format-14  # scripts/format.sh (.clang-format)
  iproute2 util-linux  # ip netns, tc, unshare, flock: scripts/cluster.sh
  libgtest-dev python3-pytest python3-mpi4py
  python3-matplotlib  # the plots of examples/ and tools/
  libjemalloc2  # concord-run --allocator jemalloc (python.concord_run_allocator)
  libgloo-dev  # concord-pingpong: Gloo's TCP pairs beside Concord's UCX transport (docs/architecture.md)
  ucx-utils  # ucx_info: UCX's transports and protocol thresholds (docs/tuning.md)
  python3-pip python3-setuptools python3-wheel dpkg-dev  # pip install ., cpack -G DEB (tests/install/)
  doxygen python3-sphinx python3-breathe python3-myst-parser  # scripts/docs.sh (docs.build)
  chromium fonts-dejavu-core  # docs.render opens the built site headless (~300 MB installed)
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir="${CONCORD_BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${CONCORD_BUILD_TYPE:-Release}" \
  -DCONCORD_BUILD_TESTS="$tests" -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
cmake --build "$build_dir"
cmake --install "$build_dir" --prefix "$build_dir/prefix" >/dev/null
