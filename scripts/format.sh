#!/usr/bin/env bash
# Formats the C++ sources with clang-format and the repository's .clang-format (Debian's
# clang-format-14; scripts/setup.sh installs it).
# Usage: scripts/format.sh [--check] [FILE...]
#   FILE...   default: every tracked .cc, .h, .cu and .cuh file (git ls-files; without git,
#             those under src tools include python tests examples fuzz)
#   --check   change nothing: list the files clang-format would change, with the number of
#             changed lines each, and a total; exit 1 when any would change
# Exit status 77 (ctest's "skipped") when clang-format is not installed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
check=0
if [ "${1:-}" = "--check" ]; then
  check=1
  shift
fi
format=""
for candidate in clang-format-14 clang-format; do
  command -v "$candidate" >/dev/null && { format="$candidate"; break; }
done
[ -n "$format" ] || { echo "format.sh: no clang-format (Debian's clang-format-14; scripts/setup.sh installs it)" >&2; exit 77; }

if (($#)); then
  files=()
  for file in "$@"; do  # clang-format would rewrite any other file as if it were C++
    case "$file" in
      *.cc | *.h | *.cu | *.cuh) files+=("$file") ;;
      *) echo "format.sh: $file left alone (not C++: .cc, .h, .cu, .cuh)" >&2 ;;
    esac
  done
  ((${#files[@]})) || exit 0
elif git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh')
else
  mapfile -t files < <(find src tools include python tests examples fuzz -type f \
    \( -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi

if ((!check)); then
  "$format" -i --style=file "${files[@]}"
  exit 0
fi
changed=0
lines=0
for file in "${files[@]}"; do
  # Lines of the file that clang-format would rewrite (the '-' side of the diff).
  count=$("$format" --style=file "$file" | diff "$file" - | grep -c '^<' || true)
  if ((count)); then
    echo "$file: $count lines"
    changed=$((changed + 1))
    lines=$((lines + count))
  fi
done
echo "format.sh: $changed of ${#files[@]} files would change ($lines lines); scripts/format.sh applies it"
((changed == 0))
