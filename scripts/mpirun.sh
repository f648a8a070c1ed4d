#!/usr/bin/env bash
# mpirun with the flags a local run needs: --oversubscribe (more ranks than cores) and,
# as root, --allow-run-as-root. Usage: scripts/mpirun.sh -np 4 COMMAND...
flags=(--oversubscribe)
[ "$(id -u)" -eq 0 ] && flags+=(--allow-run-as-root)
exec mpirun "${flags[@]}" "$@"
