#!/bin/bash
# Section 6 of scripts/paper_results.sh --full, alone (run from the repository root).
set -uo pipefail
out=$1; mkdir -p "$out"; tools=$PWD/build/tools; py=/usr/bin/python3
cluster() { scripts/cluster.sh "$@"; }
echo "start $(date) load $(cut -d' ' -f1-3 /proc/loadavg)"
cluster -H 2 -r 1 --rate none -- "$tools/concord-calibrate" -s 4M -o "$out/cost_line.json" >"$out/calibrate_line.txt" 2>&1
line_beta=$($py -c 'import json, sys; print(json.load(open(sys.argv[1]))["inter_beta"])' "$out/cost_line.json")
for H in 2 4 8; do
  echo "H=$H $(date) load $(cut -d' ' -f1-3 /proc/loadavg)"
  cluster -H "$H" -r 1 -- "$tools/concord-calibrate" -s 4M -o "$out/cost_H$H.json" >"$out/calibrate_H$H.txt" 2>&1
  cluster -H "$H" -r 1 -- "$tools/concord-bench" -a ring,tree,halving_doubling,recursive_doubling -b 4 -e 64M \
    -f 16 -n 3 -w 1 -T 0.3 -J "$out/bench_H$H.json" >"$out/bench_H$H.txt" 2>&1
  gap=$($py -c 'import json, sys; print(json.load(open(sys.argv[1])).get("inter_gap", -1))' "$out/cost_H$H.json" 2>/dev/null || echo -1)
  gap_flag=(); [[ "$gap" == -* ]] || gap_flag=(--inter-gap "$gap")
  CONCORD_COST_MODEL="$out/cost_H$H.json" "$tools/concord-sim" --validate "$out/bench_H$H.json" -r 1 \
    --link-bucket 256K --line-beta "$line_beta" "${gap_flag[@]}" >"$out/validate_H$H.txt" 2>&1
  echo "P=$H: $(grep -iE 'mean|worst' "$out/validate_H$H.txt" | tr '\n' ' ')"
done
echo "end $(date) load $(cut -d' ' -f1-3 /proc/loadavg)"
