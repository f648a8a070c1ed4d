#!/usr/bin/env bash
# Runs the benchmarks behind docs/performance.md and rewrites its tables from their raw
# results in docs/data/<topic>/ (tools/report/perf_report.py --help: topics, --quick, --render,
# --check). The full run is for a quiet machine; --quick is CI's smoke test.
set -euo pipefail
exec /usr/bin/python3 "$(dirname "$0")/../tools/report/perf_report.py" "$@"
