#!/usr/bin/env bash
# Runs an MPI command on two emulated hosts on this one machine, so that multi-node code
# paths (local_size() < size(), TCP between nodes, hierarchical algorithms) can be tested
# without a cluster. A shorthand for scripts/cluster.sh -H 2 (which builds the hosts and
# tears them down; see there), kept for the tests and docs that use it.
#
# Usage: scripts/two_hosts.sh [options] [--] COMMAND [ARGS...]
#   --ranks-per-host N   ranks on each host (default 2: 2 hosts x 2 ranks = mpirun -np 4)
#   --netem "SPEC"       shape the inter-host link, e.g. --netem "delay 1ms rate 1gbit".
#                        tc netem is not in this kernel (no sch_netem module), so only the
#                        "rate R" of SPEC is applied, with tbf on each host's egress; a delay
#                        or loss in SPEC is skipped with a message. Without --netem the link
#                        is not shaped.
#   --check              only check that network namespaces can be created (exit 0 or 77)
#   -h, --help           this text
# Every CONCORD_* variable in the environment is forwarded to all ranks (mpirun -x).
# Extra mpirun flags can be given in CONCORD_TWO_HOSTS_MPIRUN_FLAGS (word-split).
#
# Exit status: that of mpirun; 77 if this machine cannot create network namespaces (the
# ctest tests multihost.* report 77 as SKIPPED); 2 for a usage error.
set -euo pipefail

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
fail() { echo "two_hosts: $*" >&2; exit 2; }

ranks_per_host=2
netem=""
check=()
while (($#)); do
  case "$1" in
    --ranks-per-host) (($# >= 2)) || fail "--ranks-per-host needs a number"; ranks_per_host="$2"; shift 2 ;;
    --netem) (($# >= 2)) || fail "--netem needs a qdisc spec, e.g. \"delay 1ms rate 1gbit\""; netem="$2"; shift 2 ;;
    --check) check=(--check); shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done

rate=none
if [ -n "$netem" ]; then
  read -ra words <<<"$netem"
  for i in "${!words[@]}"; do [ "${words[$i]}" != rate ] || rate="${words[$((i + 1))]:-none}"; done
  [ "$netem" = "rate $rate" ] ||
    echo "two_hosts: tc netem is not available (no sch_netem kernel module): only the rate of \"$netem\" is applied" >&2
fi
export CONCORD_CLUSTER_MPIRUN_FLAGS="${CONCORD_TWO_HOSTS_MPIRUN_FLAGS:-}"
exec "$(dirname "$0")/cluster.sh" -H 2 -r "$ranks_per_host" --rate "$rate" "${check[@]}" -- "$@"
