#!/usr/bin/env bash
# Fails when a file of the repository (text or name) speaks of the project's own history of
# work or its issue tracker: a session, issue, item or stop followed by its number, a session
# called earlier, previous, last or next, a period of work. Such words mean nothing to a reader of the code, the docs or the installed
# package, and history lives in git: a comment states the reason or the fact instead.
# Not checked: docs/data/ (raw benchmark output, written by scripts) and fuzz/corpus/
# (fuzzer inputs: arbitrary bytes, not prose). In a git checkout the tracked and untracked
# (not ignored) files are searched; elsewhere (a source archive) the source folders.
# Usage: tests/docs/tracker_refs.sh [SOURCE_DIR]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root"
# The bracketed letters keep this file from matching itself.
pattern='\bsess[i]ons?[ _-]?#?[0-9]|\b(this|that|an? earlier|earlier|previous|last|next|later) sess[i]on\b'
pattern+='|\biss[u]es?[ _-]?#?[0-9]|\bit[e]ms?[ _-][0-9]|\bst[o]ps?[ _-][0-9]|\bwork[ -]?peri[o]ds?\b'
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  excluded=(':!docs/data' ':!fuzz/corpus')
  hits=$(git grep --untracked -n -I -i -P "$pattern" -- . "${excluded[@]}" || true)
  names=$(git ls-files --cached --others --exclude-standard -- . "${excluded[@]}" | grep -i -P "$pattern" || true)
else
  paths=(README.md CMakeLists.txt setup.py pyproject.toml bin cmake docs examples fuzz include python scripts src
         tests tools)
  hits=$(grep -rnIiP "$pattern" --exclude-dir=__pycache__ --exclude-dir=data --exclude-dir=corpus "${paths[@]}" \
           2>/dev/null || true)
  names=$(find "${paths[@]}" -not -path 'docs/data/*' -not -path 'fuzz/corpus/*' 2>/dev/null | grep -i -P "$pattern" || true)
fi
if [ -n "$hits$names" ]; then
  echo "tracker_refs: wording about the project's history of work or its issue tracker (state the reason instead):" >&2
  [ -z "$hits" ] || echo "$hits" >&2
  [ -z "$names" ] || printf 'file name: %s\n' $names >&2
  exit 1
fi
echo "tracker_refs: none outside docs/data/ and fuzz/corpus/"
