#!/usr/bin/env bash
# Builds examples/cpp/allreduce.cc out of tree against an installed Concord and runs it on
# 2 ranks. Usage:
#   consumer.sh cmake|pkgconfig PREFIX WORKDIR -- LAUNCHER...   (LAUNCHER without -np)
# cmake: configures examples/cpp with find_package(Concord) (CMAKE_PREFIX_PATH=PREFIX) and
# builds it with the same cmake; pkgconfig: compiles with $CXX (default c++) and the flags of
# `pkg-config concord` from PREFIX. Exit status: that of the build or of the program.
set -euo pipefail
mode="$1" prefix="$2" workdir="$3"
shift 3
[ "${1:-}" = "--" ] && shift
(($#)) || { echo "consumer.sh: no launcher given" >&2; exit 2; }
source_dir="$(cd "$(dirname "$0")/../../examples/cpp" && pwd)"
rm -rf "$workdir"
mkdir -p "$workdir"

case "$mode" in
  cmake)
    "${CMAKE:-cmake}" -S "$source_dir" -B "$workdir" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
    "${CMAKE:-cmake}" --build "$workdir"
    ;;
  pkgconfig)
    export PKG_CONFIG_PATH="$(ls -d "$prefix"/lib*/pkgconfig "$prefix"/lib/*/pkgconfig 2>/dev/null | tr '\n' ':')"
    flags=$(pkg-config --cflags --libs concord)
    libdir=$(pkg-config --variable=libdir concord)
    echo "pkg-config concord $(pkg-config --modversion concord): $flags"
    # shellcheck disable=SC2086  # pkg-config's flags are words
    "${CXX:-c++}" -std=c++17 -O2 "$source_dir/allreduce.cc" $flags -Wl,-rpath,"$libdir" \
      -o "$workdir/concord_allreduce_example"
    ;;
  *) echo "consumer.sh: mode must be cmake or pkgconfig, got '$mode'" >&2; exit 2 ;;
esac
"$@" -np 2 "$workdir/concord_allreduce_example" 1001
