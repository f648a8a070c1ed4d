#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang-14, ASan+UBSan) in build-fuzz/ and runs each
# on its corpus in fuzz/corpus/<target>/; new inputs it finds go to build-fuzz/new/<target>/
# (-m takes them into the repository's corpus).
# Usage: scripts/fuzz.sh [-t SECONDS | -r RUNS | -m] [target ...]
#   -t SECONDS  wall time per target (default 30: the CI run)
#   -r RUNS     executions per target instead (e.g. 10000000)
#   -m          minimise instead of fuzzing: fuzz/corpus/<target> and build-fuzz/new/<target>
#               become the fewest inputs that reach every edge they reach together (libFuzzer
#               -set_cover_merge=1 -use_counters=0: hit counts are not kept apart), plus the
#               seed_* files, so the corpus stays small and the CI replay short
# Exits non-zero when a target crashes, leaks or triggers a sanitizer report (the input is
# left in build-fuzz/artifacts/).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-max_total_time=30)
minimise=0
while getopts "t:r:m" option; do
  case "$option" in
    t) limit=(-max_total_time="$OPTARG") ;;
    r) limit=(-runs="$OPTARG") ;;
    m) minimise=1 ;;
    *) echo "usage: $0 [-t SECONDS | -r RUNS | -m] [target ...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
launcher=()
# ccache as in cmake/ConcordCcache.cmake: paths relative to the checkout, so clones share it.
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER="env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=1;ccache")
cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Debug "${launcher[@]}" >/dev/null
cmake --build build-fuzz
targets=("$@")
((${#targets[@]})) || targets=(fuzz_control_messages fuzz_key_check fuzz_sparse_wire fuzz_cost_model fuzz_timeline_repair)
[ -d fuzz/corpus/fuzz_control_messages ] || build-fuzz/seed_corpus fuzz/corpus
mkdir -p build-fuzz/artifacts
for target in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$target" "build-fuzz/new/$target"
  start=$SECONDS
  if ((minimise)); then
    out="build-fuzz/minimised/$target"
    rm -rf "$out" && mkdir -p "$out"
    find "fuzz/corpus/$target" -maxdepth 1 -name 'seed_*' -exec cp {} "$out/" \;
    before=$(find "fuzz/corpus/$target" "build-fuzz/new/$target" -type f | wc -l)
    build-fuzz/"$target" -set_cover_merge=1 -use_counters=0 -max_len=4096 "$out" "fuzz/corpus/$target" \
      "build-fuzz/new/$target" >"build-fuzz/$target.merge.log" 2>&1 || {
      tail -40 "build-fuzz/$target.merge.log"; echo "fuzz: $target: minimising FAILED"; exit 1; }
    rm -rf "fuzz/corpus/$target" "build-fuzz/new/$target" && mv "$out" "fuzz/corpus/$target"
    echo "fuzz: $target minimised: $before -> $(find "fuzz/corpus/$target" -type f | wc -l) inputs"
    continue
  fi
  log="build-fuzz/$target.log"
  if ! build-fuzz/"$target" "${limit[@]}" -max_len=4096 -print_final_stats=1 \
      -artifact_prefix=build-fuzz/artifacts/ "build-fuzz/new/$target" "fuzz/corpus/$target" >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz: $target FAILED after $((SECONDS - start)) s (log: $log)"
    exit 1
  fi
  runs=$(grep -o "stat::number_of_executed_units: *[0-9]*" "$log" | grep -o "[0-9]*$" || echo "?")
  echo "fuzz: $target ok: $runs executions in $((SECONDS - start)) s"
done
