#!/usr/bin/env bash
# Fails when a file of the repository points at a file outside it: the project's private
# specs, papers and style notes (../shared/..., specs/*.md, papers/*.txt, STYLE.md,
# DESIGN.md) are not shipped, so a reader of the code, the docs or the installed package
# cannot follow such a reference. Cite the paper (authors, venue, section) or a page of
# docs/ instead. Usage: tests/docs/external_refs.sh [SOURCE_DIR]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
cd "$root"
pattern='\.\./shared|(^|[^a-z_/])(specs/[a-z_-]+\.md|papers/[a-z_-]+\.txt)|STYLE\.md|DESIGN\.md'
self="tests/docs/external_refs.sh"
paths=(README.md CMakeLists.txt setup.py pyproject.toml bin cmake docs examples include python scripts src tests tools)
if hits=$(grep -rnE "$pattern" --exclude-dir=__pycache__ "${paths[@]}" 2>/dev/null | grep -v "^$self:"); then
  echo "external_refs: references to files outside the repository:" >&2
  echo "$hits" >&2
  exit 1
fi
echo "external_refs: none in ${paths[*]}"
