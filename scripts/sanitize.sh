#!/usr/bin/env bash
# Sanitizer runs (CI step 3, .ci/run): builds only the test targets they need, with ccache when
# installed (cmake/ConcordCcache.cmake), and fails on any test failure or sanitizer report.
#   asan: ASan+UBSan (build type Asan) of the unit suite and of the MPI suite at 2 ranks
#         (build-asan/; Open MPI's own allocations are not leak-checked under mpirun).
#         The unit suite runs in $(nproc) parallel gtest shards, without the instances at 9-16
#         in-process ranks (over 40% of its time; the same code paths as at 2-8 ranks):
#   large: those instances (unit tests at 9-16 ranks) in the Release build (build/, from
#         scripts/setup.sh), so that every unit test still runs in CI.
#   tsan: TSan (build type Tsan) of the unit tests of the threaded parts only
#         (concord_threaded_tests of tests/unit/CMakeLists.txt: the dependency engine and
#         KVStore, the negotiator, coordinator and stall inspector, the wake-up logic, the
#         tensor queue, the transport, the in-process runtime and process sets; build-tsan/).
# Usage: scripts/sanitize.sh [asan] [large] [tsan]   (default: all). Prints each step's seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
kinds=("$@")
((${#kinds[@]})) || kinds=(asan large tsan)
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

# gtest filter of the parameterised instances at 9-16 ranks (names end in /P12, /P12_...,
# _P12 or contain _P12_).
large_ranks=""
for p in 9 10 11 12 13 14 15 16; do large_ranks+="${large_ranks:+:}*/P$p:*/P${p}_*:*_P$p:*_P${p}_*"; done
# Runs a gtest binary in $(nproc) parallel shards; fails if any shard fails.
sharded() {  # binary gtest-args...
  local shards pids=() status=0
  shards=$(nproc)
  for ((shard = 0; shard < shards; ++shard)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard "$@" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  return $status
}

export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# libconcord links UCX, whose libucm patches madvise/mmap to watch memory; under TSan the
# patched madvise of a thread's exit takes a lock in TSan's torn-down thread state and
# crashes every run. The sanitized suites use the in-process and MPI transports only.
export UCX_MEM_EVENTS=no
for kind in "${kinds[@]}"; do
  case "$kind" in
    asan)
      configure build-asan Asan
      step "asan build" cmake --build build-asan "$jobs" --target concord_unit_tests concord_mpi_tests
      step "asan unit suite (2-8 ranks, $(nproc) shards)" sharded env ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
        build-asan/tests/unit/concord_unit_tests --gtest_brief=1 --gtest_filter="-$large_ranks"
      step "asan mpi suite (2 ranks)" scripts/mpirun.sh -np 2 -x UBSAN_OPTIONS \
        -x ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" build-asan/tests/mpi/concord_mpi_tests --gtest_brief=1
      ;;
    large)
      step "release unit tests at 9-16 ranks" build/tests/unit/concord_unit_tests --gtest_brief=1 \
        --gtest_filter="$large_ranks"
      ;;
    tsan)
      configure build-tsan Tsan
      step "tsan build" cmake --build build-tsan "$jobs" --target concord_threaded_tests
      step "tsan threaded unit tests (engine, kvstore, negotiator, runtime, transport)" \
        env TSAN_OPTIONS="halt_on_error=1:suppressions=$PWD/scripts/tsan.supp" \
        build-tsan/tests/unit/concord_threaded_tests --gtest_brief=1
      ;;
    *)
      echo "sanitize: unknown kind '$kind' (asan, large, tsan)" >&2
      exit 2
      ;;
  esac
done
