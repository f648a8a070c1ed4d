// concord-gpubench-allreduce: device-buffer allreduce on one machine, every registry row on
// device buffers (algorithms/registry.h) side by side with the host-memory allreduce (the algorithm the
// cost model picks, on pinned host memory), 1 KiB .. 256 MiB (powers of 4) at several
// ranks (docs/performance.md, "GPU data path"; scripts/gpu_check.sh runs it).
//
// Ranks are threads on Concord's in-process transport, so no mpirun and no MPI job is
// needed (the binary links libconcord, hence the MPI library, which gpu_check.sh checks
// for). On the in-process transport:
//   - the "cuda_aware" rows (the ring's, "cuda_aware_tree", ...) run over DirectCommunicator,
//     the in-process transport that takes device pointers;
//   - "nccl" needs one GPU per rank: it runs for P <= the number of GPUs (rank r on GPU r);
//   - the other variants put every rank on GPU r % G (on a 1-GPU machine all share it,
//     so they measure the staging machinery, not a multi-GPU machine).
// Every point first runs once on known input and checks the result on every rank (exact
// float32 sums of small integers): a wrong result ends the tool with an error naming the
// variant, size, rank and element -- so on a GPU it is also a correctness check of each
// variant's CUDA code (kernels, streams, NCCL).
// Output: one line per (P, bytes, variant): median microseconds of -n runs (each run starts
// after a barrier) on rank 0 and the algorithm bandwidth bytes / seconds.
// Without a usable GPU it prints the CUDA status and exits 0; --emulated runs the whole
// benchmark on the strict emulated device instead (a smoke test of this tool, labelled
// "emulated": those times are NOT GPU numbers).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "algorithms/allreduce_device.h"
#include "algorithms/allreduce_ring.h"
#include "algorithms/device_capabilities.h"
#include "algorithms/registry.h"
#include "device/cuda/cuda_device.h"
#include "device/cuda_status.h"
#include "device/emulated_device.h"
#include "transport/direct_communicator.h"
#include "transport/inprocess_communicator.h"

namespace {

using namespace concord;

struct Options {
  std::vector<int> ranks = {1, 2, 4};
  size_t min_bytes = 1024;
  size_t max_bytes = size_t{256} << 20;
  int iterations = 5;
  bool emulated = false;
};

double run_once(Communicator& comm, AllreduceAlgorithm& algorithm, void* data, size_t count) {
  comm.barrier();
  const auto begin = std::chrono::steady_clock::now();
  algorithm.start(data, count, DataType::kFloat32, ReduceOp::kSum);
  run_to_completion(algorithm);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

// Rank r's input: element i = (r + 1) * (i % 5 + 1), small integers in float32, so every
// variant's sum is exact: (i % 5 + 1) * P (P + 1) / 2.
void fill(std::vector<float>& values, int rank) {
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((rank + 1) * (i % 5 + 1));
}

// Throws naming the variant, size, rank and first wrong element unless `values` hold the sum.
void check(const std::vector<float>& values, int P, int rank, const std::string& variant, size_t bytes) {
  for (size_t i = 0; i < values.size(); ++i) {
    const float expected = static_cast<float>((i % 5 + 1) * P * (P + 1) / 2);
    if (values[i] != expected) {
      throw std::runtime_error(variant + " at " + std::to_string(bytes) + " bytes, rank " + std::to_string(rank) +
                               ": element " + std::to_string(i) + " is " + std::to_string(values[i]) + ", expected " +
                               std::to_string(expected));
    }
  }
}

double median(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// One rank of one P: every size, the host algorithm then every device entry.
// `shared` is the emulated device every rank uses (null: rank r uses CUDA device r % gpus).
void bench_rank(Communicator& comm, const Options& options, int gpus, Device* shared, std::mutex& print) {
  const int P = comm.size(), r = comm.rank();
  std::unique_ptr<Device> own;
  if (shared == nullptr) own = std::make_unique<cuda::CudaDevice>(r % gpus);
  Device* device = shared != nullptr ? shared : own.get();
  const DeviceCapabilities caps = agree_device_capabilities(comm, *device);
  DirectCommunicator direct(comm, *device);  // the in-process CUDA-aware transport, for cuda_aware
  const DeviceCapabilities direct_caps = agree_device_capabilities(direct, *device);
  DeviceBuffer buffer(*device, options.max_bytes);
  void* host = device->allocate_host(options.max_bytes);
  auto stream = device->create_stream();
  ScratchBuffer scratch;
  AlgorithmContext ctx{comm, scratch, default_chunk_bytes(), {}};
  ScratchBuffer direct_scratch;
  AlgorithmContext direct_ctx{direct, direct_scratch, default_chunk_bytes(), {}};
  AlgorithmContext device_ctx = ctx, direct_device_ctx = direct_ctx;  // for the rows on device buffers
  device_ctx.device = direct_device_ctx.device = device;
  const auto report = [&](size_t bytes, const std::string& name, const std::vector<double>& times,
                          const std::string& skipped) {
    if (r != 0) return;
    std::lock_guard<std::mutex> lock(print);
    if (!skipped.empty()) {
      std::printf("%3d %12zu %-34s skipped: %s\n", P, bytes, name.c_str(), skipped.c_str());
    } else {
      const double seconds = median(times);
      std::printf("%3d %12zu %-34s %12.1f %10.3f\n", P, bytes, name.c_str(), seconds * 1e6, bytes / seconds / 1e9);
    }
    std::fflush(stdout);
  };
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 4) {
    const size_t count = bytes / 4;
    {  // host memory: the host algorithm the cost model picks for this size
      const Problem problem = make_problem(ctx, count, DataType::kFloat32, ReduceOp::kSum);
      const auto& entry = select_algorithm(allreduce_algorithms(), problem, ctx.cost_params);
      auto algorithm = entry.create(ctx);
      std::vector<float> values(count);
      fill(values, r);
      std::memcpy(host, values.data(), bytes);
      run_once(comm, *algorithm, host, count);  // warm-up, checked
      std::memcpy(values.data(), host, bytes);
      check(values, P, r, "host:" + entry.name, bytes);
      std::vector<double> times;
      for (int i = 0; i < options.iterations; ++i) times.push_back(run_once(comm, *algorithm, host, count));
      report(bytes, "host:" + entry.name, times, "");
    }
    for (const auto& entry : allreduce_algorithms()) {
      if (entry.memory != MemoryKind::kDevice) continue;
      // The cuda_aware rows (the ring's and every other host algorithm's) need a transport
      // that takes device pointers.
      const bool over_direct = device_transport_of(entry.name) == DeviceTransport::kCudaAware;
      const AlgorithmContext& context = over_direct ? direct_device_ctx : device_ctx;
      Problem problem = make_problem(context, count, DataType::kFloat32, ReduceOp::kSum);
      problem.memory = MemoryKind::kDevice;
      problem.device = over_direct ? &direct_caps : &caps;
      std::string skipped = entry.declines(problem);
      if (skipped.empty() && entry.name == "nccl" && P > gpus) {
        skipped = "NCCL needs one GPU per rank (" + std::to_string(P) + " ranks, " + std::to_string(gpus) + " GPUs)";
      }
      if (!skipped.empty()) {
        report(bytes, entry.name, {}, skipped);
        continue;
      }
      auto algorithm = entry.create(context);
      std::vector<float> values(count);
      fill(values, r);
      stream->copy(buffer.data(), values.data(), bytes, CopyKind::kHostToDevice);
      stream->synchronize();
      run_once(comm, *algorithm, buffer.data(), count);  // warm-up, checked
      comm.barrier();  // over DirectCommunicator the peers read this buffer until their copies are done
      stream->copy(values.data(), buffer.data(), bytes, CopyKind::kDeviceToHost);
      stream->synchronize();
      check(values, P, r, entry.name, bytes);
      std::vector<double> times;
      for (int i = 0; i < options.iterations; ++i) times.push_back(run_once(comm, *algorithm, buffer.data(), count));
      comm.barrier();
      report(bytes, entry.name, times, "");
    }
  }
  device->free_host(host);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"concord-gpubench-allreduce: staged vs staged_gpu vs cuda_aware vs nccl vs host-memory allreduce"};
  Options options;
  app.add_option("--ranks", options.ranks, "rank counts (threads on the in-process transport)")->delimiter(',');
  app.add_option("--min-bytes", options.min_bytes, "smallest message (bytes, float32)");
  app.add_option("--max-bytes", options.max_bytes, "largest message (bytes; sizes go up by 4x)");
  app.add_option("-n,--iterations", options.iterations, "timed runs per point (median reported)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--emulated", options.emulated, "run on the strict emulated device (smoke test; NOT GPU numbers)");
  CLI11_PARSE(app, argc, argv);
  const CudaStatus status = cuda_status();
  std::printf("%s\n", status.summary().c_str());
  if (status.devices == 0 && !options.emulated) return 0;
  std::printf("# device: %s; ranks are threads on the in-process transport\n",
              options.emulated ? "emulated (strict) -- NOT a GPU: these times say nothing about GPUs" : "CUDA");
  std::printf("%3s %12s %-34s %12s %10s\n", "P", "bytes", "variant", "us", "GB/s");
  std::mutex print;
  try {
    std::unique_ptr<EmulatedDevice> emulated;
    if (options.emulated) emulated = std::make_unique<EmulatedDevice>();
    for (int P : options.ranks) {
      InProcessWorld::run(P, [&](Communicator& comm) {
        bench_rank(comm, options, std::max(status.devices, 1), emulated.get(), print);
      });
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "concord-gpubench-allreduce: %s\n", e.what());
    return 1;
  }
  return 0;
}
