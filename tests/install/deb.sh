#!/usr/bin/env bash
# The Debian package as a cluster admin gets it: `cpack -G DEB` in the build directory, then
# checks of its name and fields (Depends on libopenmpi3, Python and the packages named in
# CONCORD_DEB_DEPENDS, e.g. "libucx0 libpmix2 libzmq5" for a build with UCX and PMIx;
# Recommends python3-torch), `dpkg -x` into WORKDIR, and from the extracted tree: `concord-info
# --version`, a 2-rank allreduce through concord.torch (Python package from
# usr/lib/python3/dist-packages) and the C++ example built against usr/ (find_package).
# Usage: deb.sh BUILD_DIR WORKDIR PYTHON VERSION -- LAUNCHER...   (LAUNCHER without -np)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build_dir="$1" workdir="$2" python="$3" version="$4"
shift 4
[ "${1:-}" = "--" ] && shift
(($#)) || { echo "deb.sh: no launcher given" >&2; exit 2; }
fail() { echo "deb.sh: $*" >&2; exit 1; }

arch=$(dpkg --print-architecture)
deb="$build_dir/package/concord_${version}_${arch}.deb"
rm -f "$deb"
(cd "$build_dir" && "${CPACK:-cpack}" -G DEB)
[ -f "$deb" ] || fail "cpack did not write $deb (found: $(ls "$build_dir/package" 2>/dev/null))"

depends=$(dpkg-deb -f "$deb" Depends)
recommends=$(dpkg-deb -f "$deb" Recommends)
echo "Depends: $depends"
echo "Recommends: $recommends"
grep -q "libopenmpi3" <<<"$depends" || fail "Depends lacks libopenmpi3: $depends"
grep -q "python3 (>=" <<<"$depends" || fail "Depends lacks the python3 version: $depends"
for package in ${CONCORD_DEB_DEPENDS:-}; do
  grep -Eq "(^|, )$package( |,|$)" <<<"$depends" || fail "Depends lacks $package: $depends"
done
# Gloo is a build-tree measurement's (concord-pingpong), never the package's dependency.
! grep -q "libgloo" <<<"$depends" || fail "Depends names libgloo: $depends"
grep -q "python3-torch" <<<"$recommends" || fail "Recommends lacks python3-torch: $recommends"
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/concord-info ./usr/bin/concord-run ./usr/include/concord/concord.h ./usr/lib/python3/dist-packages/concord/__init__.py \
  ./usr/lib/python3/dist-packages/concord/torch/__init__.py; do
  grep -q " $path\$" <<<"$contents" || fail "the package lacks $path"
done

root="$workdir/root"
rm -rf "$root"
mkdir -p "$root"
dpkg -x "$deb" "$root"
info=$("$root/usr/bin/concord-info" --version)
[ "$info" = "concord-info $version" ] || fail "concord-info --version printed '$info', expected 'concord-info $version'"

cd /
PYTHONPATH="$root/usr/lib/python3/dist-packages" "$@" -np 2 -x PYTHONPATH "$python" \
  "$here/allreduce_check.py" "$root"

"$here/consumer.sh" cmake "$root/usr" "$workdir/consumer" -- "$@"
