#!/usr/bin/env bash
# Run by `scripts/cluster.sh --launcher command` on node0 of the emulated cluster: concord-run's
# elastic driver starts one worker per emulated host through the cluster's agent (as it would
# over ssh), serving its store at node0's address; arguments go to the elastic example.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 -m concord.run -np 4 --min-np 2 -H "$CONCORD_CLUSTER_HOSTS" \
  --rsh-agent "$CONCORD_CLUSTER_AGENT" --store-address 10.231.98.1 --heartbeat-timeout 5 \
  /usr/bin/python3 "$here/../../examples/train_digits_elastic.py" "$@"
