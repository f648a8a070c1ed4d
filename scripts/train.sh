#!/usr/bin/env bash
# The main job: sets up and builds Concord, then trains an MLP on the handwritten-digits
# data set with data parallelism on CONCORD_RANKS local ranks (default 4). Extra arguments
# go to examples/train_digits.py (e.g. --epochs 30). It runs the installed package
# (scripts/setup.sh --training-only installs the Debian packages training needs, builds the
# library, tools and Python extension, no tests, and installs them into <build>/prefix).
# When stdout is not a terminal (a log), rank 0 prints one line per epoch and no progress
# bar: under mpirun the ranks' stdout is a pseudo-terminal whatever mpirun's own is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --training-only
bar=()
[ -t 1 ] || bar=(--no-progress-bar)
# concord-run (Horovod's horovodrun flags; installed into <build>/prefix by scripts/setup.sh)
# builds the mpirun command and puts the installed package on every rank's PYTHONPATH;
# --verbose prints that command.
"${CONCORD_BUILD_DIR:-build}/prefix/bin/concord-run" -np "${CONCORD_RANKS:-4}" --verbose \
  /usr/bin/python3 examples/train_digits.py --min-accuracy 0.95 "${bar[@]}" "$@"
