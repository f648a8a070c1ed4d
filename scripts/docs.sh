#!/usr/bin/env bash
# Builds the documentation site into <build>/docs/html (open index.html): Doxygen XML of
# the public headers, then Sphinx over docs/ (Markdown pages, Python API from the installed
# package's docstrings, C++ API through breathe) with warnings as errors. Needs the build
# installed into <build>/prefix (scripts/setup.sh does it) and Debian's doxygen,
# python3-sphinx, python3-breathe and python3-myst-parser (scripts/setup.sh installs them).
# Usage: scripts/docs.sh [--allow-warnings] [BUILD_DIR]   (default: $CONCORD_BUILD_DIR or build)
# Sphinx warnings fail the build (-W) unless --allow-warnings is given. $PYTHON is the
# interpreter the package was built for (default Debian's /usr/bin/python3; ctest passes the
# build's Python_EXECUTABLE). Exit status 77 (ctest's "skipped") when doxygen, Sphinx, breathe
# or the MyST parser is missing; the message names the Debian packages.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
strict=(-W --keep-going)
if [ "${1:-}" = "--allow-warnings" ]; then
  strict=()
  shift
fi
build="${1:-${CONCORD_BUILD_DIR:-build}}"
[[ "$build" = /* ]] || build="$root/$build"
out="$build/docs"
python_dir="$build/prefix/lib/python3/dist-packages"
[ -d "$python_dir/concord" ] || { echo "docs.sh: no installed package in $python_dir: run scripts/setup.sh" >&2; exit 2; }
python="${PYTHON:-/usr/bin/python3}"

missing=()
command -v doxygen >/dev/null || missing+=(doxygen)
for module in sphinx:python3-sphinx breathe:python3-breathe myst_parser:python3-myst-parser; do
  "$python" -c "import ${module%%:*}" 2>/dev/null || missing+=("${module#*:}")
done
if ((${#missing[@]})); then
  echo "docs.sh: SKIPPED, missing ${missing[*]} (Debian packages; scripts/setup.sh installs them)" >&2
  exit 77
fi
version=$(sed -n 's/^project(Concord VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")

rm -rf "$out/html" "$out/screenshots"  # never leave an earlier build for docs.render to check
mkdir -p "$out/doxygen"
doxygen - >"$out/doxygen/log.txt" <<DOXYFILE
PROJECT_NAME = Concord
PROJECT_NUMBER = $version
INPUT = $root/include/concord
FILE_PATTERNS = *.h
STRIP_FROM_PATH = $root/include
OUTPUT_DIRECTORY = $out/doxygen
GENERATE_XML = YES
GENERATE_HTML = NO
GENERATE_LATEX = NO
EXTRACT_ALL = YES
QUIET = YES
WARN_AS_ERROR = NO
DOXYFILE

PYTHONPATH="$python_dir${PYTHONPATH:+:$PYTHONPATH}" CONCORD_DOCS_VERSION="$version" \
  CONCORD_DOCS_DOXYGEN_XML="$out/doxygen/xml" \
  "$python" -m sphinx -E -a "${strict[@]}" -q -b html -d "$out/doctrees" "$root/docs" "$out/html"
echo "docs: $out/html/index.html"
