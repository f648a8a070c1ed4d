// Ring-specific tests of AllreduceRing (src/algorithms/allreduce_ring.h) on the in-process
// transport: pipelining with tiny chunks, chunks that do not divide an element, reuse of one
// object and scratch buffer, and the ring's bytes per rank per step. Correctness over
// P = 1..16 x sizes x dtypes x ops is in test_algorithm_registry.cc, for every algorithm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "algorithms/allreduce_ring.h"
#include "allreduce_check.h"
#include "patterns/ring.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"
#include "transport/inprocess_communicator.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::drive;
using testing_util::expect_allreduce_results;
using testing_util::fill_input;
using testing_util::first_difference;
using testing_util::is_integer;
using testing_util::load;
using testing_util::load_int;
using testing_util::run_ranks;
using testing_util::store;
using testing_util::store_int;
using testing_util::unit_roundoff;

// Sizes that depend on P are named rather than given as numbers.
enum class Size { k0, k1, kPMinus1, kPPlus1, k7, k1023, k100003 };

size_t elements(Size size, int P) {
  switch (size) {
    case Size::k0: return 0;
    case Size::k1: return 1;
    case Size::kPMinus1: return static_cast<size_t>(P - 1);
    case Size::kPPlus1: return static_cast<size_t>(P + 1);
    case Size::k7: return 7;
    case Size::k1023: return 1023;
    case Size::k100003: return 100003;
  }
  return 0;
}

const char* size_name(Size size) {
  switch (size) {
    case Size::k0: return "n0";
    case Size::k1: return "n1";
    case Size::kPMinus1: return "nPminus1";
    case Size::kPPlus1: return "nPplus1";
    case Size::k7: return "n7";
    case Size::k1023: return "n1023";
    case Size::k100003: return "n100003";
  }
  return "?";
}

std::string describe(const char* algorithm, int P, size_t n, DataType dtype, ReduceOp op, size_t chunk) {
  std::ostringstream out;
  out << algorithm << " P=" << P << " n=" << n << " dtype=" << dtype_name(dtype) << " op=" << reduce_op_name(op);
  if (chunk != default_chunk_bytes()) out << " chunk_bytes=" << chunk;
  return out.str();
}

// Runs one AllreduceRing on P in-process ranks and checks every rank's result.
void check_allreduce(int P, size_t n, DataType dtype, ReduceOp op, size_t chunk = default_chunk_bytes()) {
  const std::string what = describe("AllreduceRing", P, n, dtype, op, chunk);
  SCOPED_TRACE(what);
  const size_t element = dtype_size(dtype);
  constexpr size_t kGuard = 16;
  std::vector<std::vector<uint8_t>> inputs(P), results(P);
  std::vector<ScratchBuffer> scratch(P);
  for (int r = 0; r < P; ++r) {
    inputs[r].assign(n * element, 0);
    fill_input(inputs[r].data(), n, dtype, op, r);
    results[r] = inputs[r];
    results[r].resize(n * element + kGuard, 0x5A);
  }
  ASSERT_EQ(run_ranks(P,
                      [&](Communicator& comm, const AbortFlag& aborted) {
                        AllreduceRing ring(comm, scratch[comm.rank()], chunk);
                        ring.start(results[comm.rank()].data(), n, dtype, op);
                        drive(ring, aborted);
                      }),
            "");

  for (int r = 0; r < P; ++r)
    for (size_t b = n * element; b < n * element + kGuard; ++b)
      ASSERT_EQ(results[r][b], 0x5A) << "rank " << r << " wrote past the end of the buffer (byte " << b << ")";

  expect_allreduce_results(inputs, results, n, dtype, op, what);
}

const Size kSmallSizes[] = {Size::k0, Size::k1, Size::kPMinus1, Size::kPPlus1, Size::k7};

// A tiny chunk size: many pipelined messages per segment, and segments of different sizes
// cut into the same number of chunks (some of them empty when n is small).
class AllreduceRingPipelined : public ::testing::TestWithParam<std::tuple<int, Size, DataType>> {};

TEST_P(AllreduceRingPipelined, MatchesReferenceWith64ByteChunks) {
  const auto [P, size, dtype] = GetParam();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) check_allreduce(P, elements(size, P), dtype, op, 64);
}

INSTANTIATE_TEST_SUITE_P(
    Chunk64, AllreduceRingPipelined,
    ::testing::Combine(::testing::Values(2, 3, 7, 16), ::testing::Values(Size::kPPlus1, Size::k1023, Size::k100003),
                       ::testing::Values(DataType::kFloat32, DataType::kBFloat16, DataType::kInt8)),
    [](const auto& info) {
      return testing_util::cat("P", std::get<0>(info.param), "_", size_name(std::get<1>(info.param)), "_",
                               dtype_name(std::get<2>(info.param)));
    });

// Chunk sizes that do not divide the element size (down to 1 byte): chunks are cut in whole
// elements, so some are empty, and the result must not change.
TEST(AllreduceRingChunks, ChunkSmallerThanOrNotAMultipleOfTheElement) {
  check_allreduce(3, 37, DataType::kFloat64, ReduceOp::kSum, 1);
  check_allreduce(4, 101, DataType::kInt32, ReduceOp::kProduct, 6);
  check_allreduce(5, 1023, DataType::kBFloat16, ReduceOp::kMax, 3);
  check_allreduce(2, 3, DataType::kInt64, ReduceOp::kSum, 7);
}

// One AllreduceRing and one ScratchBuffer reused for a sequence of different allreduces, as
// the executor reuses its scratch buffer.
TEST(AllreduceRingReuse, SameObjectForSuccessiveOperations) {
  constexpr int P = 5;
  struct Op {
    size_t n;
    DataType dtype;
    ReduceOp op;
  };
  const std::vector<Op> sequence = {{1000, DataType::kFloat32, ReduceOp::kSum},
                                    {3, DataType::kInt64, ReduceOp::kMax},
                                    {0, DataType::kFloat16, ReduceOp::kSum},
                                    {4099, DataType::kInt32, ReduceOp::kSum},
                                    {17, DataType::kFloat64, ReduceOp::kProduct}};
  std::vector<std::vector<std::vector<uint8_t>>> results(P);
  std::vector<ScratchBuffer> scratch(P);
  for (int r = 0; r < P; ++r) {
    for (const auto& op : sequence) {
      results[r].emplace_back(op.n * dtype_size(op.dtype));
      fill_input(results[r].back().data(), op.n, op.dtype, op.op, r);
    }
  }
  ASSERT_EQ(run_ranks(P,
                      [&](Communicator& comm, const AbortFlag& aborted) {
                        AllreduceRing ring(comm, scratch[comm.rank()], 256);
                        for (size_t k = 0; k < sequence.size(); ++k) {
                          ring.start(results[comm.rank()][k].data(), sequence[k].n, sequence[k].dtype, sequence[k].op);
                          drive(ring, aborted);
                        }
                      }),
            "");
  for (size_t k = 0; k < sequence.size(); ++k) {
    const auto& op = sequence[k];
    // A fresh run of the same operation with fresh objects is the reference.
    std::vector<std::vector<uint8_t>> fresh(P, std::vector<uint8_t>(op.n * dtype_size(op.dtype)));
    std::vector<ScratchBuffer> fresh_scratch(P);
    for (int r = 0; r < P; ++r) fill_input(fresh[r].data(), op.n, op.dtype, op.op, r);
    ASSERT_EQ(run_ranks(P,
                        [&](Communicator& comm, const AbortFlag& aborted) {
                          AllreduceRing ring(comm, fresh_scratch[comm.rank()]);
                          ring.start(fresh[comm.rank()].data(), op.n, op.dtype, op.op);
                          drive(ring, aborted);
                        }),
              "");
    for (int r = 0; r < P; ++r)
      EXPECT_EQ(first_difference(results[r][k], fresh[0], dtype_size(op.dtype)), -1)
          << "operation " << k << " (" << describe("AllreduceRing", P, op.n, op.dtype, op.op, 256) << ") rank " << r;
  }
}

// ---------------------------------------------------------------------------------------
// Bytes on the wire of the ring allreduce: each rank sends (and receives) 2(P-1)/P * n
// elements, up to the rounding of n into P segments.

void check_traffic(int P, size_t n, size_t chunk) {
  const size_t element = sizeof(float);
  std::vector<TrafficCounters> counters(P);
  std::vector<std::vector<float>> data(P, std::vector<float>(n, 1.0f));
  std::vector<ScratchBuffer> scratch(P);
  ASSERT_EQ(run_ranks(P,
                      [&](Communicator& comm, const AbortFlag& aborted) {
                        AllreduceRing ring(comm, scratch[comm.rank()], chunk);
                        ring.start(data[comm.rank()].data(), n, DataType::kFloat32, ReduceOp::kSum);
                        drive(ring, aborted);
                        counters[comm.rank()] = comm.counters();
                      }),
            "")
      << "AllreduceRing P=" << P << " n=" << n << " chunk_bytes=" << chunk;
  const uint64_t lower = 2 * (P - 1) * (n / P) * element;
  const uint64_t upper = 2 * (P - 1) * ((n + P - 1) / P) * element;
  const uint64_t segment_bytes = ((n + P - 1) / P) * element;
  const uint64_t chunks = n == 0 ? 0 : std::max<uint64_t>(1, (segment_bytes + chunk - 1) / chunk);
  uint64_t total_sent = 0, total_received = 0;
  for (int r = 0; r < P; ++r) {
    SCOPED_TRACE(::testing::Message() << "AllreduceRing P=" << P << " n=" << n << " float32 chunk_bytes=" << chunk
                                      << " rank " << r);
    const patterns::Ring ring{r, P};
    uint64_t exact = 0;
    for (int s = 0; s < ring.steps(); ++s)
      exact += (patterns::segment(n, P, ring.reduce_scatter_send(s)).count +
                patterns::segment(n, P, ring.allgather_send(s)).count) *
               element;
    EXPECT_GE(counters[r].bytes_sent, lower);
    EXPECT_LE(counters[r].bytes_sent, upper);
    EXPECT_EQ(counters[r].bytes_sent, exact);
    EXPECT_EQ(counters[r].messages_sent, 2 * (P - 1) * chunks) << "2(P-1) steps of " << chunks << " chunks";
    EXPECT_EQ(counters[r].messages_received, counters[r].messages_sent);
    total_sent += counters[r].bytes_sent;
    total_received += counters[r].bytes_received;
  }
  EXPECT_EQ(total_sent, total_received);
  EXPECT_EQ(total_sent, 2 * static_cast<uint64_t>(P - 1) * n * element) << "every segment crosses 2(P-1) links";
}

class AllreduceRingTraffic : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(AllreduceRingTraffic, BytesPerRankAreTwoPMinusOneOverPTimesN) {
  const auto [P, n] = GetParam();
  for (size_t chunk : {size_t{64}, default_chunk_bytes()}) check_traffic(P, n, chunk);
}

INSTANTIATE_TEST_SUITE_P(
    SizesAndChunks, AllreduceRingTraffic,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 7, 16),
                       ::testing::Values(size_t{0}, size_t{1}, size_t{5}, size_t{1023}, size_t{100003})),
    [](const auto& info) { return testing_util::cat("P", std::get<0>(info.param), "_n", std::get<1>(info.param)); });

}  // namespace
}  // namespace concord
