#!/usr/bin/env bash
# Runs a command as the ranks of a job on H emulated hosts on this one machine, with each
# host's network egress rate-limited, so that the network (not the shared memory bus) is the
# bottleneck of inter-host communication: the testbed of docs/performance.md ("The papers'
# results on the emulated cluster"). The ranks are started by Open MPI's mpirun (the MPI
# transport) or, with --launcher store, by this script itself over Concord's UCX transport.
#
# Usage: scripts/cluster.sh -H HOSTS [-r RANKS_PER_HOST] [options] -- COMMAND [ARGS...]
#   -H, --hosts N          emulated hosts, 2..8
#   -r, --ranks-per-host N ranks on each host, 1..2 (default 1): H*N ranks
#   --launcher L           mpirun (default): mpirun -np H*N over Open MPI;
#                          store: no MPI; H*N ranks over Concord's UCX transport (below);
#                          command: COMMAND runs once on node0, a launcher of its own
#                          (concord-run's elastic driver, or concord-run --launcher local -H)
#                          starting the ranks through the agent in CONCORD_CLUSTER_AGENT on
#                          the hosts of CONCORD_CLUSTER_HOSTS (node0:N,node1:N,...)
#   --rate R               egress rate of every host (tc units: 1gbit, 100mbit, ...;
#                          default 1gbit; "none" leaves the links unshaped)
#   --burst B              tbf bucket size (default 256kb; >= R/HZ, see tc-tbf(8))
#   --latency L            tbf queueing limit in time (default 50ms)
#   --check                only check that namespaces and a bridge can be made (exit 0 or 77)
#   -h, --help             this text
# Every CONCORD_* variable in the environment is forwarded to all ranks (mpirun -x).
# Extra mpirun flags can be given in CONCORD_CLUSTER_MPIRUN_FLAGS (word-split).
#
# --launcher store starts the ranks itself, as torchrun or `concord-run --launcher local`
# would on real hosts: rank R = I*N + L runs in host I's namespace (hostname nodeI) with
# RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, CONCORD_TRANSPORT=ucx and
# CONCORD_STORE=tcp:10.231.98.1:29400 (rank 0 on node0 serves the TCP store the ranks
# exchange their UCX worker addresses through) and the whole environment otherwise. When a
# rank fails, the others get 15 s to end by themselves (Concord reports the lost peer), then
# SIGTERM. UCX picks its transports itself (UCX_TLS as the environment has it), with
# UCX_NET_DEVICES=eth0 unless the environment sets it (as btl_tcp_if_include for Open MPI).
# UCX's own protocol settings stay at their defaults: of the TCP rendezvous settings tried
# (UCX_TCP_PUT_ENABLE=n, UCX_PROTO_ENABLE=y, UCX_RNDV_THRESH), none was faster at every
# algorithm and size (docs/tuning.md, "Transports: MPI or UCX").
# The emulated hosts share one kernel, and UCX tells hosts apart by the boot id
# (/proc/sys/kernel/random/boot_id, its "system id"): with the machine's own in every
# namespace, UCX took all ranks for one host and joined ranks of different hosts by shared
# memory (sysv) and CMA, at 3.5 GB/s past a 1 Gbit/s link. So each host gets a boot id of its
# own (bind-mounted over that file in its processes' mount namespace, below); then UCX uses
# sysv and CMA within a host and tcp/eth0 between hosts, as Open MPI's vader and tcp BTLs do.
# UCX_LOG_LEVEL=info prints each endpoint's lanes ("ep_cfg[N]: tag(tcp/eth0)"); the test
# scripts.cluster checks them.
#
# What it builds (needs root, iproute2 and util-linux; see scripts/setup.sh). Nothing is
# created in the root network namespace and only addresses of 10.231.98.0/24 inside the
# namespaces below are used:
#   - a "switch" namespace concord-csw holding a bridge br0 (an emulated top-of-rack switch);
#   - host namespaces concord-c0 .. concord-c{H-1}; host i has a veth pair whose one end,
#     eth0 with 10.231.98.(i+1)/24, is in the host and whose other end is a bridge port in
#     the switch; loopback up everywhere;
#   - egress shaping: tbf (token bucket filter) with RATE/BURST/LATENCY as the root qdisc
#     of every host's eth0, so each host sends at most RATE into the switch (a full-duplex
#     NIC of that rate; what a host receives is bounded by its peers' egress). tc netem is
#     NOT available in this kernel (no sch_netem module: "Specified qdisc kind is
#     unknown"), so no delay or loss is emulated; the latency is that of the veth/bridge
#     path (tens of microseconds), below a real switch's;
#   - /etc/netns/concord-cI/hosts (mounted over /etc/hosts by `ip netns exec`) naming the
#     hosts node0 .. node{H-1};
#   - a boot id per host: /proc/sys/kernel/random/boot_id reads 00..07 in its last two
#     digits on host 0..7 (UCX's test for "same machine", see above);
#   - a hostfile and an rsh agent for Open MPI (plm_rsh_agent): mpirun runs in concord-c0
#     with hostname node0; to start its daemon on nodeI it runs the daemon's command line
#     in concord-cI under its own UTS and mount namespaces with hostname nodeI and host I's
#     boot id, as ssh would; the store launcher starts its ranks through the same agent. Open MPI
#     sees H nodes, MPI_COMM_TYPE_SHARED (concord::local_size()) spans one host;
#   - transports: --mca btl tcp,self,vader (shared memory within a host, TCP over eth0
#     between hosts), --bind-to none (every emulated host sees the same cores).
# All ranks still share this machine's CPUs: with more ranks than cores the CPU, not the
# link, can become the bottleneck (say so next to any number measured here). So that a
# waiting rank yields its core instead of spinning, every run gets --mca
# mpi_yield_when_idle 1 (unless CONCORD_CLUSTER_MPIRUN_FLAGS or OMPI_MCA_mpi_yield_when_idle
# sets it):
# without it, at 4 hosts on 2 cores, MPI_Allreduce of 4 bytes took 4.7-8.2 ms instead of
# 43-48 us, and Concord's small-message algorithms 2-4x their time (docs/performance.md).
# Every run also gets concord-run's TCP settings (TCP_SETTINGS in python/concord/run.py; each
# group unless CONCORD_CLUSTER_MPIRUN_FLAGS or OMPI_MCA_<name> sets one of its names;
# docs/tuning.md):
# - btl_tcp_flags send,inplace,need-ack,need-csum (Open MPI's TCP BTL without its PUT
#   protocol), so that both directions of a link carry data at once, as on a full-duplex NIC.
#   With PUT (Open MPI 4.1's default), a large message goes as one fragment of up to 2 GiB
#   (btl_tcp_rdma_pipeline_frag_size), and a rendezvous reply for the other direction waits
#   behind it: in about half of the simultaneous 16 MiB exchanges between two hosts
#   (MPI_Sendrecv, 1 Gbit/s) one direction waited for the other to finish, 277 ms instead of
#   140 ms (docs/troubleshooting.md, "Simultaneous exchanges over TCP take twice the time").
# - btl_tcp_eager_limit, btl_tcp_rndv_eager_limit, btl_tcp_max_send_size 1 MiB (defaults 64,
#   64 and 128 KiB), so that messages up to 1 MiB, among them the algorithms' 512 KiB chunks,
#   go without a rendezvous round trip each: with the defaults, at 8 hosts, recursive
#   doubling of 256 KiB took 39-53 ms instead of 6.6 and a 64 MiB tree 2.9-3.0 s instead of
#   1.7-1.8 (docs/troubleshooting.md, "Allreduce over TCP far slower than the link").
# Setup first removes anything a killed earlier run left behind; teardown (on any exit,
# Ctrl-C or SIGTERM, via trap) kills the processes left in the namespaces, deletes the
# namespaces (their veth ends and the bridge go with them) and the files (a SIGKILLed
# run's are removed by the next run). Concurrent runs
# are serialised with flock on /run/lock/concord-cluster.lock.
#
# Exit status: that of mpirun (--launcher store: 0 when every rank exits 0, else the first
# failing rank's status, 128 + N for a signal N); 77 if this machine cannot create network namespaces, veth
# pairs or a bridge (a container without CAP_SYS_ADMIN/CAP_NET_ADMIN), with the reason on
# stderr (ctest reports 77 as SKIPPED); 2 for a usage error.
set -euo pipefail

readonly SKIP_STATUS=77
readonly SWITCH_NS=concord-csw
readonly HOST_NS_PREFIX=concord-c
readonly SUBNET=10.231.98.0/24
readonly LOCK=/run/lock/concord-cluster.lock
readonly MAX_HOSTS=8

usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
fail() { echo "cluster: $*" >&2; exit 2; }
skip() { echo "cluster: SKIP: $*" >&2; exit "$SKIP_STATUS"; }

hosts=""
ranks_per_host=1
rate=1gbit
burst=256kb
latency=50ms
check_only=0
launcher=mpirun
while (($#)); do
  case "$1" in
    -H | --hosts) (($# >= 2)) || fail "$1 needs a number"; hosts="$2"; shift 2 ;;
    -r | --ranks-per-host) (($# >= 2)) || fail "$1 needs a number"; ranks_per_host="$2"; shift 2 ;;
    --rate) (($# >= 2)) || fail "--rate needs a tc rate, e.g. 1gbit"; rate="$2"; shift 2 ;;
    --burst) (($# >= 2)) || fail "--burst needs a tc size, e.g. 256kb"; burst="$2"; shift 2 ;;
    --latency) (($# >= 2)) || fail "--latency needs a tc time, e.g. 50ms"; latency="$2"; shift 2 ;;
    --launcher) (($# >= 2)) || fail "--launcher needs mpirun, store or command"; launcher="$2"; shift 2 ;;
    --check) check_only=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) fail "unknown option $1 (see --help)" ;;
    *) break ;;
  esac
done
if ((check_only)) && [ -z "$hosts" ]; then hosts=2; fi
[[ "$hosts" =~ ^[0-9]+$ ]] && ((hosts >= 2 && hosts <= MAX_HOSTS)) ||
  fail "-H must be a number of hosts in 2..$MAX_HOSTS, got '${hosts}'"
[[ "$ranks_per_host" =~ ^[1-9][0-9]*$ ]] ||
  fail "-r must be a positive number of ranks per host, got '$ranks_per_host'"
((ranks_per_host <= 2)) ||
  echo "cluster: warning: $ranks_per_host ranks per host x $hosts hosts on $(nproc) cores: CPU-bound" >&2
((check_only || $#)) || fail "no command given (see --help)"
[[ "$launcher" =~ ^(mpirun|store|command)$ ]] || fail "--launcher must be mpirun, store or command, got '$launcher'"

# --- can this machine do it at all? -------------------------------------------------------
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces (run as root or via sudo)"
for tool in ip unshare flock; do
  command -v "$tool" >/dev/null || skip "'$tool' is not installed (scripts/setup.sh installs iproute2 and util-linux)"
done
unshare --net --uts true 2>/dev/null ||
  skip "cannot create network/UTS namespaces here (unshare -n -u failed: no CAP_SYS_ADMIN, or a restricted container)"

mkdir -p "$(dirname "$LOCK")"
exec 9>"$LOCK"
flock -w 900 9 || fail "another cluster.sh run held $LOCK for 15 minutes"

all_namespaces() {
  local i
  echo "$SWITCH_NS"
  for ((i = 0; i < MAX_HOSTS; i++)); do echo "$HOST_NS_PREFIX$i"; done
}
teardown() {
  local ns
  [ -z "${mpirun_pid:-}" ] || kill -TERM "$mpirun_pid" 2>/dev/null || true
  ((${#rank_pids[@]} == 0)) || kill -TERM "${rank_pids[@]}" 2>/dev/null || true
  for ns in $(all_namespaces); do
    # Processes still in a namespace (daemons or ranks of a run killed with SIGKILL) were
    # started by this script; end them before the namespace goes.
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true  # its veth ends and the bridge go with it
    rm -rf "/etc/netns/$ns"
  done
  rmdir /etc/netns 2>/dev/null || true  # only if empty: other namespaces may use it
  [ -z "${workdir:-}" ] || rm -rf "$workdir"
}
workdir=""
mpirun_pid=""
rank_pids=()
trap teardown EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
teardown
# Work directories of earlier runs killed with SIGKILL (runs are serialised by the lock).
rm -rf /tmp/concord-cluster.*

probe_error=""
if ! probe_error=$(ip netns add "$SWITCH_NS" 2>&1 && ip -n "$SWITCH_NS" link add br0 type bridge 2>&1 &&
  ip netns add "${HOST_NS_PREFIX}0" 2>&1 &&
  ip -n "$SWITCH_NS" link add p0 type veth peer name eth0 netns "${HOST_NS_PREFIX}0" 2>&1); then
  skip "cannot create network namespaces, a bridge or a veth pair here: ${probe_error:-ip failed}"
fi
((check_only)) && { echo "cluster: network namespaces, bridges and veth pairs work"; exit 0; }

# --- the switch and the hosts -------------------------------------------------------------
hosts_file=$(printf '127.0.0.1 localhost\n::1 localhost\n'
  for ((i = 0; i < hosts; i++)); do printf '10.231.98.%d node%d\n' $((i + 1)) "$i"; done)
ip -n "$SWITCH_NS" link set lo up
ip -n "$SWITCH_NS" link set br0 up
for ((i = 0; i < hosts; i++)); do
  ns="$HOST_NS_PREFIX$i"
  if ((i > 0)); then
    ip netns add "$ns"
    ip -n "$SWITCH_NS" link add "p$i" type veth peer name eth0 netns "$ns"
  fi
  ip -n "$SWITCH_NS" link set "p$i" master br0
  ip -n "$SWITCH_NS" link set "p$i" up
  ip -n "$ns" addr add "10.231.98.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  mkdir -p "/etc/netns/$ns"
  echo "$hosts_file" >"/etc/netns/$ns/hosts"
done

if [ "$rate" != none ]; then
  command -v tc >/dev/null || skip "'tc' is not installed (iproute2): cannot shape the links"
  for ((i = 0; i < hosts; i++)); do
    ip netns exec "$HOST_NS_PREFIX$i" tc qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency "$latency" ||
      fail "tc tbf rate $rate burst $burst latency $latency failed on host $i (bad value, or no sch_tbf)"
  done
  echo "cluster: $hosts hosts x $ranks_per_host ranks, egress of every host shaped with tbf rate $rate burst $burst" \
    "latency $latency (netem is not in this kernel: no delay/loss emulated)" >&2
else
  echo "cluster: $hosts hosts x $ranks_per_host ranks, links not shaped" >&2
fi

# --- running a command on a host ----------------------------------------------------------
workdir=$(mktemp -d /tmp/concord-cluster.XXXXXX)
# Each host's own boot id: UCX tells hosts apart by /proc/sys/kernel/random/boot_id (its
# system id), which the namespaces share with this machine, so without it UCX takes every
# rank for a process of one host and joins ranks of different hosts by shared memory and CMA,
# past the shaped link. The agent bind-mounts boot_id.I over it for host I's processes only.
boot_id=$(cat /proc/sys/kernel/random/boot_id)
for ((i = 0; i < hosts; i++)); do printf '%s%02x\n' "${boot_id:0:34}" "$i" >"$workdir/boot_id.$i"; done
# Called as "agent HOST WORD..." (by mpirun for its daemons, and below); like ssh it runs the
# words as one shell command line, here in HOST's network namespace, under its own UTS and
# mount namespaces, with HOST as host name and HOST's boot id.
cat >"$workdir/agent" <<AGENT
#!/usr/bin/env bash
host="\$1"; shift
case "\$host" in
  node[0-7]) i="\${host#node}" ;;
  10.231.98.*) i=\$(( \${host##*.} - 1 )) ;;
  *) echo "cluster agent: unknown host '\$host'" >&2; exit 255 ;;
esac
exec ip netns exec "$HOST_NS_PREFIX\$i" unshare --uts bash -c \\
  'mount --bind "\$1" /proc/sys/kernel/random/boot_id && hostname "\$2" && shift 2 && exec bash -c "\$*"' \\
  agent "$workdir/boot_id.\$i" "node\$i" "\$@"
AGENT
chmod +x "$workdir/agent"
on_host() {  # on_host I COMMAND [ARGS...]: runs the command on host I (its words kept as they are)
  local host="node$1"
  shift
  "$workdir/agent" "$host" "$(printf '%q ' "$@")"
}

# --- the store launcher: every rank started here, UCX between them -------------------------
readonly STORE_PORT=29400
readonly GRACE_SECONDS=15
if [ "$launcher" = command ]; then
  # The command starts the ranks itself (e.g. concord-run --rsh-agent "$CONCORD_CLUSTER_AGENT"
  # -H "$CONCORD_CLUSTER_HOSTS" --store-address 10.231.98.1 ...), as it would with ssh.
  hosts_list=$(for ((i = 0; i < hosts; i++)); do printf 'node%d:%d,' "$i" "$ranks_per_host"; done)
  export UCX_NET_DEVICES="${UCX_NET_DEVICES-eth0}" CONCORD_CLUSTER_AGENT="$workdir/agent" \
    CONCORD_CLUSTER_HOSTS="${hosts_list%,}"
  status=0
  on_host 0 "$@" 9>&- &
  rank_pids=($!)
  wait "${rank_pids[0]}" || status=$?
  rank_pids=()
  exit "$status"
fi
if [ "$launcher" = store ]; then
  export UCX_NET_DEVICES="${UCX_NET_DEVICES-eth0}"
  size=$((hosts * ranks_per_host))
  declare -A rank_of_pid=()
  for ((i = 0; i < hosts; i++)); do
    for ((l = 0; l < ranks_per_host; l++)); do
      rank=$((i * ranks_per_host + l))
      on_host "$i" env RANK="$rank" WORLD_SIZE="$size" LOCAL_RANK="$l" LOCAL_WORLD_SIZE="$ranks_per_host" \
        CONCORD_TRANSPORT=ucx CONCORD_STORE="tcp:10.231.98.1:$STORE_PORT" CONCORD_RUN_ID="cluster-$$" \
        "$@" 9>&- &
      rank_pids+=($!)
      rank_of_pid[$!]=$rank
    done
  done
  status=0 stopper=""
  while ((${#rank_pids[@]})); do
    code=0 done_pid=""
    wait -n -p done_pid "${rank_pids[@]}" || code=$?
    [ -n "$done_pid" ] || break  # nothing left to wait for
    running=()
    for pid in "${rank_pids[@]}"; do [ "$pid" = "$done_pid" ] || running+=("$pid"); done
    rank_pids=("${running[@]}")
    if ((code != 0 && status == 0)); then
      status=$code
      echo "cluster: rank ${rank_of_pid[$done_pid]} exited with status $code; stopping the others in ${GRACE_SECONDS} s" >&2
      if ((${#rank_pids[@]})); then
        (sleep "$GRACE_SECONDS"; kill -TERM "${rank_pids[@]}" 2>/dev/null) 9>&- &
        stopper=$!
      fi
    fi
  done
  [ -z "$stopper" ] || kill "$stopper" 2>/dev/null || true
  rank_pids=()
  exit "$status"
fi

# --- Open MPI: hostfile, rsh agent, mpirun -----------------------------------------------
for ((i = 0; i < hosts; i++)); do printf 'node%d slots=%s\n' "$i" "$ranks_per_host"; done >"$workdir/hostfile"
# shellcheck disable=SC2054  # the commas in "tcp,self,vader" belong to the value
mpirun_flags=(
  --allow-run-as-root --bind-to none
  -np $((hosts * ranks_per_host)) --hostfile "$workdir/hostfile"
  --mca plm_rsh_agent "$workdir/agent"
  --mca btl tcp,self,vader --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET"
)
while IFS='=' read -r name _; do
  mpirun_flags+=(-x "$name")
done < <(env | grep -E "^CONCORD_[A-Za-z0-9_]*=" | grep -v "^CONCORD_CLUSTER_" || true)
[[ "${CONCORD_CLUSTER_MPIRUN_FLAGS:-}" == *mpi_yield_when_idle* || -n "${OMPI_MCA_mpi_yield_when_idle:-}" ]] ||
  mpirun_flags+=(--mca mpi_yield_when_idle 1)
# Groups of NAME=VALUE that go together (the rendezvous part must not exceed the eager limit);
# a group is left out when the flags or the environment set any of its names.
tcp_settings=("btl_tcp_flags=send,inplace,need-ack,need-csum"
  "btl_tcp_eager_limit=1048576 btl_tcp_rndv_eager_limit=1048576 btl_tcp_max_send_size=1048576")
for group in "${tcp_settings[@]}"; do
  given=0 mca=()
  for setting in $group; do
    name="${setting%%=*}" variable="OMPI_MCA_${setting%%=*}"
    [[ " ${CONCORD_CLUSTER_MPIRUN_FLAGS:-} " == *" $name "* || " ${CONCORD_CLUSTER_MPIRUN_FLAGS:-}" == *" $variable="* ||
      -n "${!variable:-}" ]] && given=1
    mca+=(--mca "$name" "${setting#*=}")
  done
  ((given)) || mpirun_flags+=("${mca[@]}")
done
# shellcheck disable=SC2206  # word splitting of the extra flags is intended
[ -z "${CONCORD_CLUSTER_MPIRUN_FLAGS:-}" ] || mpirun_flags+=($CONCORD_CLUSTER_MPIRUN_FLAGS)

# mpirun runs in the background and is waited for, so that a SIGTERM to this script runs
# the teardown at once instead of after mpirun exits.
status=0
on_host 0 mpirun "${mpirun_flags[@]}" "$@" 9>&- &
mpirun_pid=$!
wait "$mpirun_pid" || status=$?
mpirun_pid=""
exit "$status"
