#!/usr/bin/env bash
# Sanitizer runs (CI, issue 15): builds only the test targets they need, with ccache when
# installed (cmake/ConcordCcache.cmake), and fails on any test failure or sanitizer report.
#   asan: ASan+UBSan (build type Asan) of the unit suite and of the MPI suite at 2 ranks
#         (build-asan/; Open MPI's own allocations are not leak-checked under mpirun).
#   tsan: TSan (build type Tsan) of the unit tests of the threaded parts only
#         (concord_threaded_tests of tests/unit/CMakeLists.txt: the dependency engine and
#         KVStore, the negotiator, coordinator and stall inspector, the wake-up logic, the
#         tensor queue, the transport, the in-process runtime and process sets; build-tsan/).
# Usage: scripts/sanitize.sh [asan] [tsan]   (default: both). Prints each step's seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
((${#kinds[@]})) || kinds=(asan tsan)
jobs="-j$(nproc)"

# Only the libraries and test binaries: no Python module, no tools, no CUDA code (its
# kernels cannot run here; the Release build compiles them). ccache: cmake/ConcordCcache.cmake.
configure() {  # build-dir build-type
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE="$2" -DCONCORD_BUILD_TESTS=ON -DCONCORD_BUILD_PYTHON=OFF \
    -DCONCORD_BUILD_TOOLS=OFF -DCONCORD_WITH_CUDA=OFF -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
}
step() {  # label command...
  local start=$SECONDS
  echo "sanitize: $1"
  "${@:2}"
  echo "sanitize: $1: done in $((SECONDS - start)) s"
}

export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
for kind in "${kinds[@]}"; do
  case "$kind" in
    asan)
      configure build-asan Asan
      step "asan build" cmake --build build-asan "$jobs" --target concord_unit_tests concord_mpi_tests
      step "asan unit suite" env ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
        build-asan/tests/unit/concord_unit_tests --gtest_brief=1
      step "asan mpi suite (2 ranks)" scripts/mpirun.sh -np 2 -x UBSAN_OPTIONS \
        -x ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" build-asan/tests/mpi/concord_mpi_tests --gtest_brief=1
      ;;
    tsan)
      configure build-tsan Tsan
      step "tsan build" cmake --build build-tsan "$jobs" --target concord_threaded_tests
      step "tsan threaded unit tests (engine, kvstore, negotiator, runtime, transport)" \
        env TSAN_OPTIONS="halt_on_error=1" build-tsan/tests/unit/concord_threaded_tests --gtest_brief=1
      ;;
    *)
      echo "sanitize: unknown kind '$kind' (asan, tsan)" >&2
      exit 2
      ;;
  esac
done
