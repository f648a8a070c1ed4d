#!/usr/bin/env bash
# Sets up and builds Concord, then runs every test suite through ctest: C++ unit tests,
# the multi-rank GoogleTest suites under mpirun (1-4 ranks), pytest under mpirun and the
# training example, and the installed package (ctest's install.prefix installs the build into
# <build>/prefix, as scripts/setup.sh does; the Python suites and examples import it from
# there, and tests/install/ builds and packages against it). Extra arguments go to ctest
# (e.g. -R unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cd "${CONCORD_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 -j"$(nproc)" "$@"
