#!/usr/bin/env bash
# GPU check (docs/performance.md, "Not measured here": the GPU path): on a machine with an NVIDIA GPU and the
# CUDA toolkit, builds Concord with CONCORD_WITH_CUDA=ON (no MPI needed for what runs
# here), runs the device-layer suite (CUDA kernels bit-identical to the CPU kernels,
# batched copies, events, the driver-backed pointer cache; none of them may skip) and
# concord-gpubench, and writes everything to $OUT (default gpu_results/) for
# docs/performance.md. Exits non-zero when there is no usable GPU or a test fails.
#
# The allreduce comparison (concord-gpubench-allreduce: staged vs staged_gpu vs cuda_aware
# vs nccl vs host-memory allreduce, 1 KiB .. 256 MiB, 1/2/4 ranks as threads on the
# in-process transport -- no mpirun) links libconcord and so needs the MPI library to
# build and load: where MPI is missing only the device targets are built
# (concord_device_tests, concord-gpubench) and the comparison is reported as skipped.
# cuda_aware runs over DirectCommunicator (device-to-device copies between the ranks of
# the process, as a CUDA-aware MPI inside a node; a real CUDA-aware MPI needs mpirun);
# nccl runs at P <= number of GPUs. Every point is first checked for the exact result.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-gpu_results}"
build="${CONCORD_GPU_BUILD_DIR:-build-gpu}"
mkdir -p "$out"
{
  date -u
  uname -a
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || true
  nvcc --version | tail -1
} | tee "$out/machine.txt"

full=1
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCONCORD_WITH_CUDA=ON -DCONCORD_BUILD_TESTS=ON \
  -DCONCORD_BUILD_PYTHON=OFF -DPython_EXECUTABLE=/usr/bin/python3 > "$out/configure.txt" 2>&1 || {
  # No MPI (or another optional dependency) here: configure just the device layer.
  full=0
  echo "full configure failed (see configure.txt); building the device layer alone" | tee -a "$out/machine.txt"
  cmake -S scripts/gpu_device_only -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >> "$out/configure.txt" 2>&1
}
targets=(concord_device_tests concord-gpubench)
[ "$full" = 1 ] && targets+=(concord-gpubench-allreduce)
cmake --build "$build" --target "${targets[@]}" 2>&1 | tail -5

status=0
"$build/tests/device/concord_device_tests" --gtest_output="json:$out/device_tests.json" 2>&1 \
  | tee "$out/device_tests.txt" || status=1
if grep -q "SKIPPED" "$out/device_tests.txt"; then
  echo "gpu_check: CUDA tests skipped: no usable GPU" | tee -a "$out/device_tests.txt"
  status=1
fi
"$build/tools/concord-gpubench" | tee "$out/gpubench.txt" || status=1
if [ "$full" = 1 ]; then
  "$build/tools/concord-gpubench-allreduce" --ranks 1,2,4 | tee "$out/gpubench_allreduce.txt" || status=1
else
  echo "concord-gpubench-allreduce: skipped (no MPI library on this machine; libconcord links it)" \
    | tee "$out/gpubench_allreduce.txt"
fi
exit $status
