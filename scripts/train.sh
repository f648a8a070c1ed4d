#!/usr/bin/env bash
# The main job: sets up and builds Concord, then trains an MLP on the handwritten-digits
# data set with data parallelism on CONCORD_RANKS local ranks (default 4). Extra arguments
# go to examples/train_digits.py (e.g. --epochs 30). It runs the installed package
# (scripts/setup.sh installs into <build>/prefix).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PYTHONPATH="$PWD/${CONCORD_BUILD_DIR:-build}/prefix/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}"
scripts/mpirun.sh -np "${CONCORD_RANKS:-4}" /usr/bin/python3 examples/train_digits.py --min-accuracy 0.95 "$@"
