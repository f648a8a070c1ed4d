#!/usr/bin/env bash
# Reproduces the papers' headline results side by side with their baselines, on the
# emulated cluster of scripts/cluster.sh (rate-limited links) where the result needs a
# network, and prints for each: the paper's claim, what was measured here, the baseline.
# docs/performance.md, "The papers' results on the emulated cluster", explains each number.
#
# Usage: scripts/paper_results.sh [--full] [--out DIR] [--build DIR]
#   --full       the papers' sizes (n = 16M for the sparse allreduces, 256 Ok-Topk calls,
#                allreduce up to 64 MiB; tens of minutes on 2 cores); default: small sizes
#                (a few minutes)
#   --out DIR    raw outputs, JSON and plots (default: paper_results/ in the current directory)
#   --build DIR  the build directory with tools/ (default: build)
#   --no-testbed step 1 only (no network namespaces; scripts/perf_report.sh --quick)
# Steps (each prints "claim | measured | baseline"):
#   1. Ok-Topk's volume (Li & Hoefler, PPoPP 2022): words per rank per call from call 32 on,
#      with the volume cap and with the spec's feedback alone (4 ranks, synthetic stream;
#      no testbed needed); plot of words per call over time.
#   2. testbed calibration: inter-host alpha/beta of concord-calibrate on 2 hosts x 2 ranks.
#   3. sparse vs dense on the testbed (4 and 8 hosts x 1 rank, 1 Gbit/s, d = 1%): time and
#      bytes per call of Ok-Topk, dense and the baselines; plot vs P.
#   4. KVStore designs (Mamidala et al.): depchain vs funneled iteration on 2 and 4 hosts,
#      with the whole backward submitted before the pushes and with a push per layer.
#   5. C-Cube (Cho et al.): gradient turnaround of the overlapped trees vs the trees, 4 hosts;
#      then forward chaining with gradient queuing (tools/torch/iteration_bench.py on the tree and
#      the overlapped tree, 2 hosts: the paper's baseline B, after_backward, and C-Cube's
#      queuing, overlap, with compute alone, plain, backward-order overlap and DDP/Gloo; needs
#      the installed Python package, <build>/prefix, and torch).
#   6. response cache (Horovod's, Sergeev & Del Balso 2018): concord-coordbench on 2, 4 and 8
#      hosts x 1 rank, cache off and on: coordinator bytes and negotiation time per iteration.
#   7. simulator (concord-sim --validate, token-bucket links) against allreduce times measured
#      on 2, 4, 8 hosts, with constants calibrated on as many hosts.
# Steps 2-7 are skipped with a message where network namespaces cannot be made (cluster.sh
# exits 77). Every rank of the testbed shares this machine's cores: with more ranks than
# cores the CPU, not the link, can dominate; the output says the load average.
set -uo pipefail

full=0
testbed=1
out=paper_results
build=build
while (($#)); do
  case "$1" in
    --full) full=1; shift ;;
    --out) out="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --no-testbed) testbed=0; shift ;;
    -h | --help) sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) echo "paper_results: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$(cd "$build" && pwd)/tools"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ -x "$tools/concord-sparsebench" ] || { echo "paper_results: build first ($tools/concord-sparsebench missing)" >&2; exit 2; }
py=/usr/bin/python3
if ((full)); then n_sparse=16M calls_ok=256 n_ok=4M max_bytes=64M; else n_sparse=1M calls_ok=96 n_ok=256K max_bytes=4M; fi

say() { printf '%s\n' "$*"; }
row() { printf '%-44s | %-34s | %s\n' "$1" "$2" "$3"; }
section() { say ""; say "== $* (load: $(cut -d' ' -f1-3 /proc/loadavg))"; row "claim" "measured" "baseline"; }

# 1. Ok-Topk's volume bound.
section "1. Ok-Topk: < 6k words per rank per call (P = 4, n = $n_ok, d = 1%, $calls_ok calls)"
for eps in 0.25 -1; do
  "$root/scripts/mpirun.sh" -np 4 "$tools/concord-sparsebench" -n "$n_ok" -d 0.01 -a oktopk -w 0 -c "$calls_ok" \
    --max-overshoot "$eps" -J "$out/oktopk_calls_eps$eps.json" >"$out/oktopk_calls_eps$eps.txt" 2>&1
done
$py - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def stats(eps):
    calls = json.load(open(f"{out}/oktopk_calls_eps{eps}.json"))["rows"][0]["calls"]
    reuse = [c["k_words"] for c in calls if c["call"] >= 32 and not c["reevaluation"]]
    periods = [sum(c["k_words"] for c in calls[s:s + 32]) / 32 for s in range(32, len(calls) - 31, 32)]
    return max(reuse), max(periods)
cap, spec = stats("0.25"), stats("-1")
print("%-44s | %-34s | worst %.2fk (spec feedback only)" % ("<= 6k words/rank/call from call 32 (reuse)",
                                                          "worst %.2fk (cap eps=0.25)" % cap[0], spec[0]))
print("%-44s | %-34s | worst period %.2fk" % ("whole tau periods incl. re-evaluation", "worst period %.2fk" % cap[1], spec[1]))
PY
$py "$root/tools/plot/plot_oktopk_calls.py" "cap=$out/oktopk_calls_eps0.25.json" "spec=$out/oktopk_calls_eps-1.json" \
  -o "$out/oktopk_calls.png" && say "plot: $out/oktopk_calls.png"

cluster() { "$root/scripts/cluster.sh" "$@"; }
((testbed)) || { say ""; say "testbed steps skipped: --no-testbed"; exit 0; }
if ! cluster --check >/dev/null 2>"$out/cluster_check.txt"; then
  say ""; say "testbed steps skipped: $(cat "$out/cluster_check.txt")"; exit 0
fi

# 2. Calibration of the testbed.
section "2. testbed: 1 Gbit/s links (tbf), 2 hosts x 2 ranks"
cluster -H 2 -r 2 -- "$tools/concord-calibrate" -s 4M -o "$out/cost_testbed.json" >"$out/calibrate.txt" 2>&1
$py - "$out/cost_testbed.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
measured = "%.0f MB/s, alpha %.0f us" % (1e-6 / c["inter_beta"], c["inter_alpha"] * 1e6)
print("%-44s | %-34s | intra-host %.0f MB/s" % ("inter-host link = 1 Gbit/s = 125 MB/s", measured, 1e-6 / c["beta"]))
PY

# 3. Sparse vs dense on the testbed.
section "3. Ok-Topk vs dense and baselines, 1 Gbit/s, n = $n_sparse, d = 1%"
for H in 4 8; do
  cluster -H "$H" -r 1 -- "$tools/concord-sparsebench" -n "$n_sparse" -d 0.01 -c 3 -w 1 -a all --max-overshoot 0.25 \
    -J "$out/sparse_H$H.json" >"$out/sparse_H$H.txt" 2>&1
done
$py - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for H in (4, 8):
    rows = {r["algorithm"]: r for r in json.load(open(f"{out}/sparse_H{H}.json"))["rows"]}
    ok, dense = rows["oktopk"], rows["dense"]
    others = ", ".join("%s %.0f" % (a, r["time_s"] * 1e3) for a, r in rows.items() if a not in ("oktopk", "dense"))
    speedup = "%.2fx (%.0f ms)" % (dense["time_s"] / ok["time_s"], ok["time_s"] * 1e3)
    print("%-44s | %-34s | dense %.0f ms; %s ms" % ("P=%d: Ok-Topk >= 5x faster than dense" % H, speedup,
                                                   dense["time_s"] * 1e3, others))
    print("%-44s | %-34s | dense %.0f, topka %.1f" % ("P=%d: bytes/rank, k-words" % H, "Ok-Topk %.2f" % ok["k_words"],
                                                    dense["k_words"], rows["topka"]["k_words"]))
PY
$py "$root/tools/plot/plot_sparse.py" "$out"/sparse_H{4,8}.json -o "$out/sparse_testbed.png" && say "plot: $out/sparse_testbed.png"

# 4. KVStore designs.
section "4. KVStore: depchain >= 1.5x faster than funneled (synthetic DAG; whole backward first, then per layer)"
# Second run per P: --per-layer pushes each gradient from the thread submitting backward, so
# funneled's blocking push also holds back the rest of the backward pass.
for H in 2 4; do
  for submit in whole per_layer; do
    flag=(); [ "$submit" = per_layer ] && flag=(--per-layer)
    cluster -H "$H" -r 1 -- "$tools/concord-dagbench" -n 5 -w 2 -m funneled,depchain ${flag[@]+"${flag[@]}"} \
      -J "$out/dag_${submit}_H$H.json" >"$out/dag_${submit}_H$H.txt" 2>&1
  done
done
$py - "$out" <<'PY'
import json, sys
out = sys.argv[1]
for H in (2, 4):
    for submit in ("whole", "per_layer"):
        res = {r["mode"]: r for r in json.load(open(f"{out}/dag_{submit}_H{H}.json"))["results"]}
        f, d = res["funneled"], res["depchain"]
        # ideal: funneled's time over the shortest iteration of a design that sends the gradients
        # in the order backward computes them: max(compute, first gradient + all communication,
        # last gradient + one layer's communication) (tools/microbench/dag_bench.cc).
        measured = "%.2fx, hidden %.0f%%, ideal %.2fx" % (f["iteration_s"] / d["iteration_s"], 100 * d["hidden_share"],
                                                          f["iteration_s"] / d["ideal_s"])
        claim = "P=%d, %s: funneled / depchain" % (H, submit.replace("_", " "))
        print("%-44s | %-34s | funneled %.0f ms, hidden %.0f%%" % (claim, measured, f["iteration_s"] * 1e3,
                                                                  100 * f["hidden_share"]))
PY

# 5. C-Cube turnaround.
section "5. C-Cube: overlapped trees finish the first chunk earlier (4 hosts)"
cluster -H 4 -r 1 -- "$tools/concord-turnaround" -b 1M -e "$max_bytes" -f 4 -n 3 -w 1 \
  -a tree,overlapped_tree,double_tree,overlapped_double_tree >"$out/turnaround_H4.txt" 2>&1
grep -v '^#' "$out/turnaround_H4.txt" | tail -n 8

section "5b. C-Cube: forward chaining cuts the iteration >= 20% where communication >= 30% (2 hosts)"
pypath="$(cd "$build" && pwd)/prefix/lib/python3/dist-packages"
if [ -d "$pypath/concord" ]; then
  if ((full)); then model=(); else model=(--layers 4 --width 1024); fi
  cluster -H 2 -r 1 -- env PYTHONPATH="$pypath" MASTER_ADDR=10.231.98.1 GLOO_SOCKET_IFNAME=eth0 \
    "$py" "$root/tools/torch/iteration_bench.py" "${model[@]}" --iters 3 --warmup 1 --algorithms tree,overlapped_tree \
    --modes ddp,compute,after_backward,plain,overlap,overlap_eager,overlap_priority >"$out/iteration_H2.txt" 2>&1
  # The rows, then the comparisons: the paper's CC (queuing on the overlapped tree) against its
  # baseline B (all allreduces after backward, on the tree), and per tree each mode against
  # after_backward and against plain (which already overlaps with backward).
  grep -v '^# iteration_bench' "$out/iteration_H2.txt" | tail -n 16
else
  say "skipped: no installed Python package under $pypath (cmake --install $build --prefix $build/prefix)"
fi

# 6. Response cache.
# The coordinator's bytes are counted by the control communicator (deterministic for a seed);
# the times are wall clock on the testbed.
section "6. response cache: coordinator bytes per iteration independent of P once cached"
for H in 2 4 8; do
  cluster -H "$H" -r 1 -- "$tools/concord-coordbench" -i 50 -w 5 -t 160 -k 10 >"$out/coordbench_H$H.txt" 2>&1
done
$py - "$out" <<'PY'
import sys
out = sys.argv[1]
for H in (2, 4, 8):
    rows = {}
    for line in open(f"{out}/coordbench_H{H}.txt"):
        f = line.split()
        if len(f) == 9 and f[0].isdigit():
            rows["off" if f[1] == "off" else "on"] = f
    off, on = rows["off"], rows["on"]
    print("%-44s | %-34s | cache off: %s B, %s us" % (
        "P=%d: coordinator B/iteration (cache on)" % H, "%s B, %s us, gathers %s" % (on[7], on[5], on[3]),
        off[7], off[5]))
PY

# 7. Simulator validation. Each row runs for at least 0.3 s (-T), so the times are the link's
# steady state, and the simulator models the links as the token buckets tbf makes of them
# (cluster.sh's default --burst 256kb; the unshaped link's rate calibrated with --rate
# none), predicting the steady state of back-to-back calls. The constants of each P are
# calibrated on that many hosts: with more ranks than cores the per-message latency is the
# scheduler's and grows with P. Of that latency only the calibrated LogGP gap (inter_gap)
# occupies a link; the rest overlaps with other messages (concord-sim --inter-gap).
section "7. concord-sim --validate: mean error <= 25% (allreduce, 1 rank per host)"
cluster -H 2 -r 1 --rate none -- "$tools/concord-calibrate" -s 4M -o "$out/cost_line.json" >"$out/calibrate_line.txt" 2>&1
line_beta=$($py -c 'import json, sys; print(json.load(open(sys.argv[1]))["inter_beta"])' "$out/cost_line.json" 2>/dev/null ||
  true)
if [ -z "$line_beta" ]; then
  say "skipped: the unshaped link could not be calibrated (see $out/calibrate_line.txt)"
  exit 1
fi
for H in 2 4 8; do
  cluster -H "$H" -r 1 -- "$tools/concord-calibrate" -s 4M -o "$out/cost_H$H.json" >"$out/calibrate_H$H.txt" 2>&1
  cluster -H "$H" -r 1 -- "$tools/concord-bench" -a ring,tree,halving_doubling,recursive_doubling -b 4 -e "$max_bytes" \
    -f 16 -n 3 -w 1 -T 0.3 -J "$out/bench_H$H.json" >"$out/bench_H$H.txt" 2>&1
  gap=$($py -c 'import json, sys; print(json.load(open(sys.argv[1])).get("inter_gap", -1))' "$out/cost_H$H.json" 2>/dev/null ||
    echo -1)
  gap_flag=()
  [[ "$gap" == -* ]] || gap_flag=(--inter-gap "$gap")
  CONCORD_COST_MODEL="$out/cost_H$H.json" "$tools/concord-sim" --validate "$out/bench_H$H.json" -r 1 \
    --link-bucket 256K --line-beta "$line_beta" "${gap_flag[@]}" >"$out/validate_H$H.txt" 2>&1
  say "P=$H: $(grep -iE 'mean|worst' "$out/validate_H$H.txt" | tr '\n' ' ')"
done
say ""; say "raw outputs: $out"
