#!/usr/bin/env bash
# The two concord-info programs print the same thing: the C++ one (tools/cli/concord_info.cc,
# installed by cmake and the .deb) and the Python one (python/concord/info.py, the console
# script pip installs, or python3 -m concord.info) for text, --json and --version.
# Usage: info_same.sh PREFIX PYTHON   (PYTHONPATH must reach PREFIX's concord package)
set -euo pipefail
prefix="$1"
python="$2"
for form in "" --json --version; do
  if ! diff -u <("$prefix/bin/concord-info" $form) <("$python" -m concord.info $form) >/tmp/concord-info-diff.$$; then
    echo "concord-info ${form:-(text)}: the C++ (-) and Python (+) programs differ:" >&2
    cat /tmp/concord-info-diff.$$ >&2
    rm -f /tmp/concord-info-diff.$$
    exit 1
  fi
done
rm -f /tmp/concord-info-diff.$$
"$python" -m concord.info --json | "$python" -c '
import json, sys
info = json.load(sys.stdin)
settings, algorithms = len(info["settings"]), sum(len(group["algorithms"]) for group in info["collectives"])
print(f"concord-info: same text, JSON and version ({settings} settings, {algorithms} algorithms)")'
