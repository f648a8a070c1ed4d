// Every registered algorithm run directly on a duplicate of the process's transport world
// (real processes: MPI's nonblocking point-to-point under mpirun, UCX's under a store
// launcher), at 1-5 ranks (device-buffer allreduces on the strict
// emulated device): allreduce for a subset of dtypes x ops x sizes
// {0, 1, P+1, 1023, > 1 MiB odd}, with the default and a small pipeline chunk; allgather,
// broadcast from every root, reduce-scatter and alltoall with known contents. Each rank
// checks its own result against a reference built from every rank's deterministic input,
// and allreduce results must be bit-identical across ranks (64-bit checksums gathered).
#include <numeric>

#include "algorithms/device_capabilities.h"
#include "algorithms/registry.h"
#include "device/emulated_device.h"
#include "patterns/ring.h"
#include "transport/device_pointers.h"
#include "transport/staging_communicator.h"
#include "transport/transport_world.h"
#include "unit/allreduce_check.h"

namespace concord {
namespace {

using testing_util::cat;

class AlgorithmsOverTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = process_world().duplicate("test.algorithms");
    nodes_ = process_world().node_of_rank();
  }
  Problem problem(size_t count, size_t element_size, DataType dtype, ReduceOp op, size_t chunk) const {
    Problem p;
    p.ranks = comm_->size();
    p.nodes = *std::max_element(nodes_.begin(), nodes_.end()) + 1;
    p.count = count;
    p.element_size = element_size;
    p.dtype = dtype;
    p.op = op;
    p.chunk_bytes = chunk;
    p.native_available = comm_->native() != nullptr && comm_->native()->native_allreduce_supported(dtype, op);
    return p;
  }
  template <typename Entry>
  auto create(const Entry& entry, size_t chunk) {
    AlgorithmContext context{*comm_, scratch_, chunk, nodes_};
    return entry.create(context);
  }
  // Checksum of `bytes` gathered from every rank; true when all equal.
  bool identical_on_every_rank(const std::vector<uint8_t>& bytes) {
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
    std::vector<uint64_t> both = {h, ~h};  // AND of h and of ~h: all equal iff AND(h) == h and AND(~h) == ~h
    comm_->allreduce_bits(both, true);
    return both[0] == h && both[1] == ~h;
  }

  std::unique_ptr<Communicator> comm_;
  std::vector<int> nodes_;
  ScratchBuffer scratch_;
};

TEST_F(AlgorithmsOverTransport, AllreduceEveryAlgorithmMatchesReference) {
  const int P = comm_->size(), rank = comm_->rank();
  const DataType dtypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt64,
                             DataType::kFloat64};
  for (const auto& entry : allreduce_algorithms()) {
    if (entry.memory != MemoryKind::kHost) continue;  // DeviceBufferAllreduces below
    for (size_t chunk : {size_t{1} << 19, size_t{4000}}) {
      decltype(create(entry, chunk)) algorithm;  // created on first use; then it serves every call
      for (DataType dtype : dtypes) {
        const size_t large = (size_t{1} << 20) / dtype_size(dtype) + 3;
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kProduct}) {
          for (size_t n : {size_t{0}, size_t{1}, static_cast<size_t>(P + 1), size_t{1023}, large}) {
            if (n == large && (op != ReduceOp::kSum || chunk != (size_t{1} << 19))) continue;
            const Problem p = problem(n, dtype_size(dtype), dtype, op, chunk);
            if (!entry.declines(p).empty()) continue;  // e.g. "mpi" on a transport without MPI's collectives
            if (!algorithm) algorithm = create(entry, chunk);
            const std::string what = cat(entry.name, " P=", P, " n=", n, " dtype=", dtype_name(dtype),
                                         " op=", reduce_op_name(op), " chunk_bytes=", chunk, " rank=", rank);
            SCOPED_TRACE(what);
            std::vector<std::vector<uint8_t>> inputs(P, std::vector<uint8_t>(n * dtype_size(dtype)));
            for (int r = 0; r < P; ++r) testing_util::fill_input(inputs[r].data(), n, dtype, op, r);
            std::vector<uint8_t> mine = inputs[rank];
            algorithm->start(mine.data(), n, dtype, op);
            run_to_completion(*algorithm);
            // The reference check reads rank 0's slot; cross-rank identity is the checksum.
            const std::vector<std::vector<uint8_t>> results(P, mine);
            testing_util::expect_allreduce_results(inputs, results, n, dtype, op, what);
            EXPECT_TRUE(identical_on_every_rank(mine)) << what << ": results differ between ranks";
          }
        }
      }
    }
  }
}

// Every allreduce row on device buffers (src/algorithms/registry.h) on the strict emulated
// device: the tensor lives in memory this process cannot touch except through a stream,
// exactly as on a GPU; results must match the reference and be identical on every rank.
// Each runs over MPI as it is (an algorithm that declines, e.g. "cuda_aware" where MPI is
// not CUDA-aware, is skipped with its reason) and over StagingCommunicator wrapping MPI,
// a transport that takes device pointers, so "cuda_aware" runs under mpirun too.
TEST_F(AlgorithmsOverTransport, DeviceAllreduceEveryAlgorithmOnEmulatedDevice) {
  const int P = comm_->size(), rank = comm_->rank();
  EmulatedDevice device;
  auto stream = device.create_stream();
  StagingCommunicator staging(*comm_, device);
  for (Communicator* transport : {static_cast<Communicator*>(comm_.get()), static_cast<Communicator*>(&staging)}) {
    const DeviceCapabilities caps = agree_device_capabilities(*transport, device);
    const std::string over = transport == &staging ? "staging transport" : process_world().origin().transport;
    for (const auto& entry : allreduce_algorithms()) {
      if (entry.memory != MemoryKind::kDevice) continue;
      Problem declined = problem(1 << 20, 4, DataType::kFloat32, ReduceOp::kSum, size_t{1} << 19);
      declined.memory = MemoryKind::kDevice;
      declined.device = &caps;
      if (const std::string reason = entry.declines(declined); !reason.empty()) {
        if (rank == 0) std::printf("[ skipped ] %s over %s: %s\n", entry.name.c_str(), over.c_str(), reason.c_str());
        continue;
      }
      AlgorithmContext context{*transport, scratch_, 4096, nodes_};
      context.device = &device;
      auto algorithm = entry.create(context);
      for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt64}) {
        for (size_t n : {size_t{0}, size_t{1}, static_cast<size_t>(P + 1), size_t{30011}}) {
          const size_t bytes = n * dtype_size(dtype);
          const std::string what = cat(entry.name, " over ", over, " (emulated device) P=", P, " n=", n,
                                       " dtype=", dtype_name(dtype), " rank=", rank);
          std::vector<std::vector<uint8_t>> inputs(P, std::vector<uint8_t>(bytes));
          for (int r = 0; r < P; ++r) testing_util::fill_input(inputs[r].data(), n, dtype, ReduceOp::kSum, r);
          DeviceBuffer buffer(device, bytes);
          stream->copy(buffer.data(), inputs[rank].data(), bytes, CopyKind::kHostToDevice);
          stream->synchronize();
          algorithm->start(buffer.data(), n, dtype, ReduceOp::kSum);
          run_to_completion(*algorithm);
          std::vector<uint8_t> mine(bytes);
          stream->copy(mine.data(), buffer.data(), bytes, CopyKind::kDeviceToHost);
          stream->synchronize();
          const std::vector<std::vector<uint8_t>> results(P, mine);
          testing_util::expect_allreduce_results(inputs, results, n, dtype, ReduceOp::kSum, what);
          EXPECT_TRUE(identical_on_every_rank(mine)) << what << ": results differ between ranks";
        }
      }
    }
  }
}

// MPI says whether it takes CUDA device pointers (MPIX_Query_cuda_support at run time);
// every rank gets the same answer with a reason, and the communicator reports the same.
TEST_F(AlgorithmsOverTransport, MpiCudaSupportIsReportedWithAReason) {
  if (process_world().origin().transport != "mpi") GTEST_SKIP() << "a question to MPI; the suite runs over UCX";
  const DevicePointerSupport mpi = mpi_cuda_support();
  EXPECT_FALSE(mpi.reason.empty());
  const DevicePointerSupport comm = device_pointer_support(*comm_);
  EXPECT_EQ(comm.supported, mpi.supported);
  EXPECT_EQ(comm.reason, mpi.reason);
  std::vector<uint8_t> answer = {static_cast<uint8_t>(mpi.supported)};
  EXPECT_TRUE(identical_on_every_rank(answer)) << mpi.summary();
}

TEST_F(AlgorithmsOverTransport, AllgatherEveryAlgorithm) {
  const int P = comm_->size(), rank = comm_->rank();
  for (const auto& entry : allgather_algorithms()) {
    for (size_t total : {size_t{0}, size_t{5}, size_t{1001}, size_t{3u << 20}}) {
      if (!entry.declines(problem(total, 1, DataType::kUInt8, ReduceOp::kSum, size_t{1} << 19)).empty()) continue;
      std::vector<size_t> blocks(P);
      for (int r = 0; r < P; ++r) blocks[r] = patterns::segment(total, P, (r + 1) % P).count;  // uneven
      std::vector<uint8_t> output(std::accumulate(blocks.begin(), blocks.end(), size_t{0}), 0);
      std::vector<uint8_t> expected(output.size());
      for (size_t offset = 0, r = 0; r < blocks.size(); offset += blocks[r], ++r)
        for (size_t i = 0; i < blocks[r]; ++i) expected[offset + i] = static_cast<uint8_t>(r * 31 + i * 7);
      const size_t own = std::accumulate(blocks.begin(), blocks.begin() + rank, size_t{0});
      std::copy(expected.begin() + own, expected.begin() + own + blocks[rank], output.begin() + own);
      auto algorithm = create(entry, size_t{1} << 19);
      algorithm->start(output.data(), blocks);
      run_to_completion(*algorithm);
      EXPECT_EQ(output, expected) << "allgather " << entry.name << " P=" << P << " bytes=" << total << " rank=" << rank;
    }
  }
}

TEST_F(AlgorithmsOverTransport, BroadcastEveryAlgorithmFromEveryRoot) {
  const int P = comm_->size(), rank = comm_->rank();
  for (const auto& entry : broadcast_algorithms()) {
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{4099}, size_t{(1u << 21) + 5}}) {
      if (!entry.declines(problem(bytes, 1, DataType::kUInt8, ReduceOp::kSum, size_t{1} << 16)).empty()) continue;
      auto algorithm = create(entry, size_t{1} << 16);
      for (int root = 0; root < P; ++root) {
        std::vector<uint8_t> data(bytes), expected(bytes);
        for (size_t i = 0; i < bytes; ++i) expected[i] = static_cast<uint8_t>(root * 13 + i * 5);
        if (rank == root) data = expected;
        algorithm->start(data.data(), bytes, root);
        run_to_completion(*algorithm);
        EXPECT_EQ(data, expected) << "broadcast " << entry.name << " P=" << P << " bytes=" << bytes << " root=" << root
                                  << " rank=" << rank;
      }
    }
  }
}

TEST_F(AlgorithmsOverTransport, ReduceScatterEveryAlgorithm) {
  const int P = comm_->size(), rank = comm_->rank();
  for (const auto& entry : reduce_scatter_algorithms()) {
    for (size_t n : {size_t{0}, size_t{1}, static_cast<size_t>(P + 1), size_t{100003}}) {
      if (!entry.declines(problem(n, 4, DataType::kInt32, ReduceOp::kSum, size_t{1} << 19)).empty()) continue;
      std::vector<int32_t> data(n);
      for (size_t i = 0; i < n; ++i) data[i] = static_cast<int32_t>(i * 3 + rank);
      auto algorithm = create(entry, size_t{1} << 19);
      algorithm->start(data.data(), n, DataType::kInt32, ReduceOp::kSum);
      run_to_completion(*algorithm);
      const auto block = patterns::segment(n, P, rank);
      for (size_t i = block.offset; i < block.offset + block.count; ++i) {
        const int32_t want = static_cast<int32_t>(i * 3 * P + P * (P - 1) / 2);
        ASSERT_EQ(data[i], want) << "reduce_scatter " << entry.name << " P=" << P << " n=" << n << " rank=" << rank
                                 << " element " << i;
      }
    }
  }
}

TEST_F(AlgorithmsOverTransport, AlltoallEveryAlgorithm) {
  const int P = comm_->size(), rank = comm_->rank();
  for (const auto& entry : alltoall_algorithms()) {
    for (size_t block : {size_t{0}, size_t{1}, size_t{777}, size_t{300000}}) {
      if (!entry.declines(problem(block * P, 1, DataType::kUInt8, ReduceOp::kSum, size_t{1} << 19)).empty()) continue;
      std::vector<uint8_t> send(block * P), recv(block * P, 0);
      for (int j = 0; j < P; ++j)
        for (size_t i = 0; i < block; ++i) send[j * block + i] = static_cast<uint8_t>(rank * 17 + j * 5 + i);
      auto algorithm = create(entry, size_t{1} << 19);
      algorithm->start(send.data(), recv.data(), block);
      run_to_completion(*algorithm);
      for (int j = 0; j < P; ++j)
        for (size_t i = 0; i < block; ++i)
          ASSERT_EQ(recv[j * block + i], static_cast<uint8_t>(j * 17 + rank * 5 + i))
              << "alltoall " << entry.name << " P=" << P << " block_bytes=" << block << " rank=" << rank
              << " from rank " << j << " byte " << i;
    }
  }
}

}  // namespace
}  // namespace concord
