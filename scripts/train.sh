#!/usr/bin/env bash
# The main job: sets up and builds Concord, then trains an MLP on the handwritten-digits
# data set with data parallelism on CONCORD_RANKS local ranks (default 4). Extra arguments
# go to examples/train_digits.py (e.g. --epochs 30).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# bin/concord-run (Horovod's horovodrun flags) builds the mpirun command and puts python/ on
# every rank's PYTHONPATH; --verbose prints that command.
bin/concord-run -np "${CONCORD_RANKS:-4}" --verbose /usr/bin/python3 examples/train_digits.py --min-accuracy 0.95 "$@"
