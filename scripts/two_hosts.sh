#!/usr/bin/env bash
# Runs an MPI command on two emulated hosts on this one machine, so that multi-node code
# paths (local_size() < size(), TCP between nodes, hierarchical algorithms) can be tested
# without a cluster.
#
# Usage: scripts/two_hosts.sh [options] [--] COMMAND [ARGS...]
#   --ranks-per-host N   ranks on each host (default 2: 2 hosts x 2 ranks = mpirun -np 4)
#   --netem "SPEC"       shape the inter-host link in both directions with tc netem, e.g.
#                        --netem "delay 1ms rate 1gbit". Without the sch_netem kernel module
#                        the delay is skipped with a message; a "rate R" in SPEC is then
#                        applied with tbf (token bucket) if that qdisc exists.
#   --check              only check that network namespaces can be created (exit 0 or 77)
#   -h, --help           this text
# Every CONCORD_* variable in the environment is forwarded to all ranks (mpirun -x).
# Extra mpirun flags can be given in CONCORD_TWO_HOSTS_MPIRUN_FLAGS (word-split).
#
# What it builds (needs root, iproute2 and util-linux; see scripts/setup.sh):
#   - network namespaces concord-h0 and concord-h1, joined by a veth pair
#     concord-h0 10.231.97.1/24 <-> concord-h1 10.231.97.2/24 (loopback up in both);
#   - /etc/netns/concord-hN/hosts, which `ip netns exec` mounts over /etc/hosts inside the
#     namespace, so the names h0 and h1 resolve to those addresses;
#   - a hostfile "h0 slots=N / h1 slots=N" and an rsh agent for Open MPI (plm_rsh_agent):
#     mpirun runs in concord-h0 under its own UTS namespace with hostname h0; to start its
#     daemon (orted) on h1 it calls the agent, which runs the daemon command line (as ssh
#     would, through sh -c) in concord-h1 under hostname h1. Open MPI therefore sees two
#     nodes: MPI_COMM_TYPE_SHARED (and concord::local_size()) spans one namespace only.
#   - transports: --mca btl tcp,self,vader (vader = shared memory within a host; between
#     the hosts only TCP over the veth, as btl_tcp_if_include and oob_tcp_if_include name
#     the veth subnet).
# Setup first removes anything a killed earlier run left behind; teardown (on any exit,
# via trap) deletes the namespaces, the veth pair and the files. Concurrent runs are
# serialised with flock on /run/lock/concord-two-hosts.lock.
#
# Exit status: that of mpirun; 77 if this machine cannot create network namespaces or veth
# pairs (a container without CAP_SYS_ADMIN/CAP_NET_ADMIN), with the reason on stderr; the
# ctest test multihost.np4 reports 77 as SKIPPED. 2 for a usage error.
set -euo pipefail

readonly SKIP_STATUS=77
readonly NS=(concord-h0 concord-h1)
readonly HOSTS=(h0 h1)
readonly ADDRS=(10.231.97.1 10.231.97.2)
readonly SUBNET=10.231.97.0/24
readonly VETH=(concord-v0 concord-v1)
readonly LOCK=/run/lock/concord-two-hosts.lock

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
fail() { echo "two_hosts: $*" >&2; exit 2; }
skip() { echo "two_hosts: SKIP: $*" >&2; exit "$SKIP_STATUS"; }

ranks_per_host=2
netem=""
check_only=0
while (($#)); do
  case "$1" in
    --ranks-per-host) (($# >= 2)) || fail "--ranks-per-host needs a number"; ranks_per_host="$2"; shift 2 ;;
    --netem) (($# >= 2)) || fail "--netem needs a qdisc spec, e.g. \"delay 1ms rate 1gbit\""; netem="$2"; shift 2 ;;
    --check) check_only=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
[[ "$ranks_per_host" =~ ^[1-9][0-9]*$ ]] || fail "--ranks-per-host must be a positive integer, got '$ranks_per_host'"
((check_only || $#)) || fail "no command given (see --help)"

# --- can this machine do it at all? -------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (run as root or via sudo)"
for tool in ip unshare flock; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed (scripts/setup.sh installs iproute2 and util-linux)"
done
unshare --net --uts true 2>/dev/null ||
  skip "cannot create network/UTS namespaces here (unshare -n -u failed: no CAP_SYS_ADMIN, or a restricted container)"

mkdir -p "$(dirname "$LOCK")"
exec 9>"$LOCK"
flock -w 600 9 || fail "another two_hosts.sh run held $LOCK for 10 minutes"

teardown() {
  local i
  for i in 0 1; do
    # Processes still in a namespace (daemons or ranks of a run killed with SIGKILL) were
    # started by this script; end them before the namespace goes.
    ip netns pids "${NS[$i]}" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "${NS[$i]}" 2>/dev/null || true  # deleting a namespace deletes its veth end
    rm -rf "/etc/netns/${NS[$i]}"
  done
  rmdir /etc/netns 2>/dev/null || true  # only if empty: other namespaces may use it
  ip link del "${VETH[0]}" 2>/dev/null || true  # only left in the root namespace by a failed setup
  [ -z "${workdir:-}" ] || rm -rf "$workdir"
}
workdir=""
trap teardown EXIT
trap 'exit 130' INT TERM
teardown

probe_error=""
if ! probe_error=$(ip netns add "${NS[0]}" 2>&1 && ip netns add "${NS[1]}" 2>&1 &&
  ip link add "${VETH[0]}" type veth peer name "${VETH[1]}" 2>&1); then
  skip "cannot create network namespaces or a veth pair here: ${probe_error:-ip failed}"
fi
((check_only)) && { echo "two_hosts: network namespaces and veth pairs work"; exit 0; }

# --- the two hosts ------------------------------------------------------------------------
for i in 0 1; do
  ip link set "${VETH[$i]}" netns "${NS[$i]}"
  ip -n "${NS[$i]}" addr add "${ADDRS[$i]}/24" dev "${VETH[$i]}"
  ip -n "${NS[$i]}" link set "${VETH[$i]}" up
  ip -n "${NS[$i]}" link set lo up
  mkdir -p "/etc/netns/${NS[$i]}"
  printf '127.0.0.1 localhost\n::1 localhost\n%s %s\n%s %s\n' \
    "${ADDRS[0]}" "${HOSTS[0]}" "${ADDRS[1]}" "${HOSTS[1]}" >"/etc/netns/${NS[$i]}/hosts"
done

# Replaces the root qdisc of both veth ends with netem SPEC, or with tbf at SPEC's rate when
# netem is missing from the kernel.
shape_link() {
  local spec="$1" i rate="" words
  read -ra words <<<"$spec"
  if ip netns exec "${NS[0]}" tc qdisc add dev "${VETH[0]}" root netem "${words[@]}" 2>/dev/null; then
    ip netns exec "${NS[1]}" tc qdisc add dev "${VETH[1]}" root netem "${words[@]}"
    echo "two_hosts: inter-host link shaped with netem: $spec" >&2
    return
  fi
  echo "two_hosts: tc netem is not available (no sch_netem kernel module): link delay/loss skipped" >&2
  for i in "${!words[@]}"; do [ "${words[$i]}" != rate ] || rate="${words[$((i + 1))]:-}"; done
  [ -n "$rate" ] || return 0
  for i in 0 1; do
    if ! ip netns exec "${NS[$i]}" tc qdisc add dev "${VETH[$i]}" root tbf rate "$rate" burst 256kb latency 50ms 2>/dev/null; then
      echo "two_hosts: tbf is not available either: link rate $rate skipped" >&2
      return 0
    fi
  done
  echo "two_hosts: inter-host link rate limited to $rate with tbf" >&2
}
[ -z "$netem" ] || { command -v tc >/dev/null && shape_link "$netem" || echo "two_hosts: 'tc' missing: --netem skipped" >&2; }

# --- Open MPI: hostfile, rsh agent, mpirun -----------------------------------------------
workdir=$(mktemp -d /tmp/concord-two-hosts.XXXXXX)
printf '%s slots=%s\n' "${HOSTS[0]}" "$ranks_per_host" "${HOSTS[1]}" "$ranks_per_host" >"$workdir/hostfile"
# Called by mpirun as "agent HOST WORD..."; like ssh it runs the words as one shell command
# line, here inside HOST's namespace with HOST as hostname.
cat >"$workdir/agent" <<EOF
#!/usr/bin/env bash
host="\$1"; shift
case "\$host" in
  ${HOSTS[0]} | ${ADDRS[0]}) ns=${NS[0]} name=${HOSTS[0]} ;;
  ${HOSTS[1]} | ${ADDRS[1]}) ns=${NS[1]} name=${HOSTS[1]} ;;
  *) echo "two_hosts agent: unknown host '\$host'" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c 'hostname "\$1"; shift; exec sh -c "\$*"' agent "\$name" "\$@"
EOF
chmod +x "$workdir/agent"

# shellcheck disable=SC2054  # the commas in "tcp,self,vader" belong to the value
mpirun_flags=(
  --allow-run-as-root
  -np $((2 * ranks_per_host)) --hostfile "$workdir/hostfile"
  --mca plm_rsh_agent "$workdir/agent"
  --mca btl tcp,self,vader --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET"
)
while IFS='=' read -r name _; do
  mpirun_flags+=(-x "$name")
done < <(env | grep -E "^CONCORD_[A-Za-z0-9_]*=" | grep -v "^CONCORD_TWO_HOSTS_" || true)
# shellcheck disable=SC2206  # word splitting of the extra flags is intended
[ -z "${CONCORD_TWO_HOSTS_MPIRUN_FLAGS:-}" ] || mpirun_flags+=($CONCORD_TWO_HOSTS_MPIRUN_FLAGS)

status=0
# shellcheck disable=SC2016  # $1 and $@ are expanded by the inner sh
ip netns exec "${NS[0]}" unshare --uts sh -c 'hostname "$1"; shift; exec "$@"' two_hosts "${HOSTS[0]}" \
  mpirun "${mpirun_flags[@]}" "$@" 9>&- || status=$?
exit "$status"
