// The registry's rows on device buffers (src/algorithms/registry.h) and their transport pieces on the
// in-process transport and the strict emulated device: StagingCommunicator keeps MPI's
// message order with device and host pointers mixed; "cuda_aware" declines, naming why,
// on a transport that moves host memory only and is chosen where device pointers are
// taken; capabilities are agreed over the ranks; the GPU-reduction staged variant equals
// the CPU-reduction one bit for bit (the same ring on the same data); the cost model
// ranks the variants as docs/algorithms.md says.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "algorithms/allreduce_device.h"
#include "algorithms/allreduce_ring.h"
#include "algorithms/allreduce_staged.h"
#include "algorithms/device_capabilities.h"
#include "allreduce_check.h"
#include "device/emulated_device.h"
#include "device_cases.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"
#include "transport/request_set.h"
#include "transport/staging_communicator.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::cat;
using testing_util::drive;
using testing_util::fill_input;
using testing_util::first_difference;
using testing_util::run_ranks;

using testing_util::allreduce_row;
using testing_util::DeviceProblem;
using testing_util::select_device;

const AllreduceEntry& entry(const std::string& name) { return allreduce_row(name); }

// True for the rows over `transport`: the ring's ("cuda_aware") and every other host
// algorithm's ("cuda_aware_tree", ...).
bool over(DeviceTransport transport, const std::string& row) { return device_transport_of(row) == transport; }

// Rank 0 sends five messages with one tag -- device, host, device, device, host, the
// largest device one first so its copy finishes last -- rank 1 receives them into device
// and host memory in order: every message must arrive where MPI's order puts it.
TEST(StagingCommunicator, KeepsMessageOrderAcrossDeviceAndHostPointers) {
  const std::vector<size_t> sizes = {1 << 20, 7, 4096, 1, 300};
  const std::vector<bool> on_device = {true, false, true, true, false};
  const std::string error = run_ranks(2, [&](Communicator& comm, const AbortFlag& aborted) {
    EmulatedDevice device;
    StagingCommunicator transport(comm, device);
    auto stream = device.create_stream();
    std::vector<DeviceBuffer> device_buffers;
    std::vector<std::vector<uint8_t>> host_buffers(sizes.size());
    std::vector<RequestPtr> requests;
    for (size_t m = 0; m < sizes.size(); ++m) {
      std::vector<uint8_t>& host = host_buffers[m];
      host.resize(sizes[m]);
      for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<uint8_t>(m * 37 + i);
      device_buffers.emplace_back(device, sizes[m]);
      if (comm.rank() == 0 && on_device[m]) {
        stream->copy(device_buffers[m].data(), host.data(), host.size(), CopyKind::kHostToDevice);
        stream->synchronize();
      }
      if (comm.rank() == 1) host.assign(host.size(), 0);
      void* data = on_device[m] ? device_buffers[m].data() : host.data();
      requests.push_back(comm.rank() == 0 ? transport.isend(data, sizes[m], 1, 5)
                                          : transport.irecv(data, sizes[m], 0, 5));
    }
    Backoff backoff;
    for (auto& request : requests) {
      while (!reap_one(request)) {
        if (aborted.load()) throw std::runtime_error("another rank failed");
        backoff.wait();
      }
    }
    if (comm.rank() == 1) {
      for (size_t m = 0; m < sizes.size(); ++m) {
        std::vector<uint8_t> got = host_buffers[m];
        if (on_device[m]) {
          stream->copy(got.data(), device_buffers[m].data(), got.size(), CopyKind::kDeviceToHost);
          stream->synchronize();
        }
        for (size_t i = 0; i < got.size(); ++i)
          if (got[i] != static_cast<uint8_t>(m * 37 + i))
            throw std::runtime_error(cat("message ", m, " byte ", i, ": got ", int(got[i])));
      }
      const uint64_t total = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
      if (transport.counters().bytes_received != total)
        throw std::runtime_error(cat("counted ", transport.counters().bytes_received, " bytes received"));
    }
  });
  EXPECT_EQ(error, "");
}

TEST(DeviceCapabilities, CudaAwareDeclinesOnAHostOnlyTransportAndIsChosenWhereDevicePointersAreTaken) {
  const std::string error = run_ranks(3, [&](Communicator& comm, const AbortFlag&) {
    EmulatedDevice device;
    StagingCommunicator transport(comm, device);
    DeviceProblem plain{Problem{}, agree_device_capabilities(comm, device)};
    plain.problem.ranks = 3;
    plain.problem.count = size_t{1} << 20;
    EXPECT_FALSE(plain.caps.transport.supported);
    EXPECT_EQ(entry("cuda_aware").declines(plain.get()),
              "the transport does not take device pointers: this transport moves host memory only");
    EXPECT_FALSE(over(DeviceTransport::kCudaAware, select_device(plain, CostParams{}, StagingParams{}).name));
    // Forcing it falls back to the cost model's choice.
    EXPECT_FALSE(
        over(DeviceTransport::kCudaAware, select_device(plain, CostParams{}, StagingParams{}, "cuda_aware").name));
    EXPECT_NE(entry("cuda_aware_tree").declines(plain.get()), "");

    DeviceProblem aware{plain.problem, agree_device_capabilities(transport, device)};
    EXPECT_TRUE(aware.caps.transport.supported) << aware.caps.transport.reason;
    EXPECT_EQ(entry("cuda_aware").declines(aware.get()), "");
    // Forcing (CONCORD_ALLREDUCE_ALGORITHM) reaches every device row of the host algorithms.
    for (const AllreduceEntry& row : allreduce_algorithms()) {
      if (!device_transport_of(row.name)) continue;
      EXPECT_EQ(select_device(aware, CostParams{}, StagingParams{}, row.name).name, row.name);
      if (over(DeviceTransport::kStagedGpu, row.name))
        EXPECT_EQ(select_device(plain, CostParams{}, StagingParams{}, row.name).name, row.name);
    }
    // No copies: a cuda_aware row is cheaper than every staged one at every size.
    for (size_t bytes = 1024; bytes <= (size_t{256} << 20); bytes *= 4) {
      aware.problem.count = bytes / 4;
      EXPECT_TRUE(over(DeviceTransport::kCudaAware, select_device(aware, CostParams{}, StagingParams{}).name))
          << bytes << ": " << select_device(aware, CostParams{}, StagingParams{}).name;
    }
    // Ranks that disagree agree on "no": rank 1 offers a host-only transport.
    Communicator& mine = comm.rank() == 1 ? comm : static_cast<Communicator&>(transport);
    const DeviceCapabilities mixed = agree_device_capabilities(mine, device);
    EXPECT_FALSE(mixed.transport.supported);
    if (comm.rank() != 1) {
      EXPECT_EQ(mixed.transport.reason, "device pointers are not taken on every rank of the communicator");
    }
  });
  EXPECT_EQ(error, "");
}

TEST(DeviceRegistry, ForcedUnknownAndAdasum) {
  DeviceProblem problem;
  problem.problem.ranks = 4;
  problem.problem.count = 1000;
  EXPECT_THROW(select_device(problem, CostParams{}, StagingParams{}, "nope"), InvalidArgument);
  EXPECT_EQ(select_device(problem, CostParams{}, StagingParams{}, "staged_gpu").name, "staged_gpu");
  problem.problem.op = ReduceOp::kAdasum;
  try {
    select_device(problem, CostParams{}, StagingParams{});
    ADD_FAILURE() << "adasum on device buffers was accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("staged: adasum is not element-wise"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cuda_aware: the transport does not take device pointers"), std::string::npos)
        << e.what();
  }
}

// The documented ranking of the two staged variants (docs/algorithms.md): CPU reduction
// for small messages (one copy each way instead of one per ring message), GPU reduction
// for large ones once the host reduction is the larger cost than the extra copies' latency.
TEST(DeviceRegistry, CostModelPicksBetweenCpuAndGpuReduction) {
  DeviceProblem problem;
  problem.problem.ranks = 8;
  const CostParams params;
  const StagingParams staging;
  problem.problem.count = 256;  // 1 KiB
  EXPECT_EQ(select_device(problem, params, staging).name, "staged");
  problem.problem.count = size_t{64} << 20;  // 256 MiB
  EXPECT_EQ(select_device(problem, params, staging).name, "staged_gpu");
  // A slow device kernel makes the CPU variant win again.
  StagingParams slow_kernel = staging;
  slow_kernel.kernel_gamma = 10 * params.gamma;
  EXPECT_EQ(select_device(problem, params, slow_kernel).name, "staged");
  double previous = 0;
  for (size_t bytes = 4; bytes <= (size_t{256} << 20); bytes *= 4) {
    problem.problem.count = bytes / 4;
    CostParams with_staging = params;
    with_staging.staging = staging;
    const double seconds = AllreduceStagedGpu::seconds(problem.get(), with_staging);
    EXPECT_GE(seconds, previous) << bytes;
    EXPECT_LE(AllreduceCudaAware::seconds(problem.get(), with_staging), seconds) << bytes;
    previous = seconds;
  }
}

// The two staged variants on the same data: the CPU variant with one staging chunk runs
// AllreduceRing on the pinned copy, the GPU variant runs the same ring on the device; the
// results must be identical for every dtype and op.
TEST(DeviceRegistry, StagedGpuEqualsStagedCpuBitForBit) {
  const int P = 4;
  const size_t n = 3001, ring_chunk = 512;
  for (DataType dtype : all_dtypes()) {
    for (ReduceOp op : all_ops()) {
      const size_t bytes = n * dtype_size(dtype);
      const std::string what = cat("P=", P, " n=", n, " ", dtype_name(dtype), " ", reduce_op_name(op));
      std::vector<std::vector<uint8_t>> inputs(P), cpu(P, std::vector<uint8_t>(bytes)),
          gpu(P, std::vector<uint8_t>(bytes));
      for (int r = 0; r < P; ++r) {
        inputs[r].resize(bytes);
        fill_input(inputs[r].data(), n, dtype, op, r);
      }
      const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
        const int r = comm.rank();
        EmulatedDevice device;
        auto stream = device.create_stream();
        ScratchBuffer scratch;
        AlgorithmContext ctx{comm, scratch, ring_chunk, {}};
        ctx.device = &device;
        AllreduceStaged staged(device, std::make_unique<AllreduceRing>(comm, scratch, ring_chunk), bytes);
        auto staged_gpu = entry("staged_gpu").create(ctx);
        AllreduceAlgorithm* variants[2] = {&staged, staged_gpu.get()};
        std::vector<uint8_t>* results[2] = {&cpu[r], &gpu[r]};
        for (int v = 0; v < 2; ++v) {
          DeviceBuffer buffer(device, bytes);
          stream->copy(buffer.data(), inputs[r].data(), bytes, CopyKind::kHostToDevice);
          stream->synchronize();
          variants[v]->start(buffer.data(), n, dtype, op);
          drive(*variants[v], aborted);
          stream->copy(results[v]->data(), buffer.data(), bytes, CopyKind::kDeviceToHost);
          stream->synchronize();
        }
      });
      ASSERT_EQ(error, "") << what;
      for (int r = 0; r < P; ++r) {
        const long diff = first_difference(gpu[r], cpu[r], dtype_size(dtype));
        EXPECT_EQ(diff, -1) << "rank " << r << " element " << diff << ": staged_gpu differs from staged (" << what
                            << ")";
      }
      testing_util::expect_allreduce_results(inputs, gpu, n, dtype, op, what);
    }
  }
}

// Out of place on device buffers (the default of AllreduceAlgorithm would memcpy device
// memory on the host): every entry that runs here equals its in-place result, and the
// input is left unchanged.
TEST(DeviceRegistry, EveryEntryOutOfPlaceEqualsInPlace) {
  const int P = 3;
  const size_t n = 2049, bytes = n * 4;
  for (const auto& e : allreduce_algorithms()) {
    if (e.memory != MemoryKind::kDevice) continue;
    std::vector<std::vector<uint8_t>> inputs(P), in_place(P, std::vector<uint8_t>(bytes)),
        out_of_place(P, std::vector<uint8_t>(bytes)), input_after(P, std::vector<uint8_t>(bytes));
    for (int r = 0; r < P; ++r) {
      inputs[r].resize(bytes);
      fill_input(inputs[r].data(), n, DataType::kFloat32, ReduceOp::kSum, r);
    }
    bool ran = true;
    const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
      const int r = comm.rank();
      EmulatedDevice device;
      StagingCommunicator transport(comm, device);  // so "cuda_aware" runs too
      DeviceProblem problem{Problem{}, agree_device_capabilities(transport, device)};
      problem.problem.ranks = P;
      problem.problem.count = n;
      if (!e.declines(problem.get()).empty()) {
        ran = false;
        return;
      }
      ScratchBuffer scratch;
      AlgorithmContext ctx{transport, scratch, 1000, {}};
      ctx.device = &device;
      auto algorithm = e.create(ctx);
      auto stream = device.create_stream();
      DeviceBuffer input(device, bytes), output(device, bytes);
      stream->copy(input.data(), inputs[r].data(), bytes, CopyKind::kHostToDevice);
      stream->synchronize();
      algorithm->start_out_of_place(input.data(), output.data(), n, DataType::kFloat32, ReduceOp::kSum);
      drive(*algorithm, aborted);
      stream->copy(out_of_place[r].data(), output.data(), bytes, CopyKind::kDeviceToHost);
      stream->copy(input_after[r].data(), input.data(), bytes, CopyKind::kDeviceToHost);
      stream->synchronize();
      algorithm->start(input.data(), n, DataType::kFloat32, ReduceOp::kSum);
      drive(*algorithm, aborted);
      stream->copy(in_place[r].data(), input.data(), bytes, CopyKind::kDeviceToHost);
      stream->synchronize();
    });
    ASSERT_EQ(error, "") << e.name;
    if (!ran) continue;
    for (int r = 0; r < P; ++r) {
      EXPECT_EQ(input_after[r], inputs[r]) << e.name << " rank " << r << ": out of place changed its input";
      EXPECT_EQ(first_difference(out_of_place[r], in_place[r], 4), -1) << e.name << " rank " << r;
    }
  }
}

}  // namespace
}  // namespace concord
