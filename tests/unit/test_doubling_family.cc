// The recursive halving / doubling family beyond the generic registry suite
// (test_algorithm_registry.cc): costs follow the textbook formulas (Thakur, Rabenseifner &
// Gropp 2005), written out here independently of the step lists the code counts from; and
// on the in-process transport the allreduces' results must be bit-identical on every rank
// even where the operand order of a reduction shows, i.e. min/max of +0 and -0 and of NaNs,
// and sums of NaNs with different payloads. In recursive doubling both partners reduce the same pair of
// vectors, so they must use one operand order; with a per-rank order these inputs differ.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/allgather_recursive_doubling.h"
#include "algorithms/allreduce_halving_doubling.h"
#include "algorithms/allreduce_recursive_doubling.h"
#include "algorithms/reduce_scatter_halving.h"
#include "algorithms/reduce_scatter_ring.h"
#include "algorithms/registry.h"
#include "allreduce_check.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"
#include "transport/tags.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::cat;
using testing_util::drive;
using testing_util::first_difference;
using testing_util::mix;
using testing_util::run_ranks;
using testing_util::store;

// +0, -0, a NaN whose payload names the rank, or a small number, by hash.
void fill_order_sensitive(void* buffer, size_t count, DataType dtype, int rank) {
  for (size_t i = 0; i < count; ++i) {
    const uint64_t h = mix(rank, i, 77);
    switch (h % 4) {
      case 0: store(buffer, i, dtype, 0.0); break;
      case 1: store(buffer, i, dtype, -0.0); break;
      case 2: store(buffer, i, dtype, static_cast<double>(h % 5)); break;
      default:
        if (dtype == DataType::kFloat32) {
          const uint32_t bits = 0x7FC00000u | static_cast<uint32_t>(rank + 1);
          std::memcpy(static_cast<uint8_t*>(buffer) + 4 * i, &bits, 4);
        } else if (dtype == DataType::kFloat64) {
          const uint64_t bits = 0x7FF8000000000000ull | static_cast<uint64_t>(rank + 1);
          std::memcpy(static_cast<uint8_t*>(buffer) + 8 * i, &bits, 8);
        } else {
          store(buffer, i, dtype, NAN);
        }
    }
  }
}

Problem problem_of(int P, size_t count, size_t element_size) {
  Problem problem;
  problem.ranks = P;
  problem.count = count;
  problem.element_size = element_size;
  return problem;
}

// Power-of-two P and n divisible by P: exact closed forms for messages and bytes.
TEST(DoublingCost, PowerOfTwoMatchesTextbookFormulas) {
  for (int P : {2, 4, 8, 16, 64}) {
    int L = 0;
    while ((1 << L) < P) ++L;
    const size_t count = 1024 * 3;  // divisible by every P above
    const double n = 4.0 * count;
    SCOPED_TRACE(cat("P=", P, " n=", n, " bytes"));
    const uint64_t share = static_cast<uint64_t>(n) / P * (P - 1);  // (P-1)/P n
    const Cost hd = AllreduceHalvingDoubling::cost(problem_of(P, count, 4));
    EXPECT_EQ(hd.rounds, 2 * L);
    EXPECT_DOUBLE_EQ(hd.wire_bytes, 2 * (P - 1) * n / P);
    EXPECT_DOUBLE_EQ(hd.reduce_bytes, (P - 1) * n / P);
    EXPECT_EQ(hd.max_messages_sent, 2u * L);
    EXPECT_EQ(hd.max_bytes_sent, 2 * share);
    EXPECT_EQ(hd.total_bytes_sent, 2 * share * P);
    const Cost rd = AllreduceRecursiveDoubling::cost(problem_of(P, count, 4));
    EXPECT_EQ(rd.rounds, L);
    EXPECT_DOUBLE_EQ(rd.wire_bytes, L * n);
    EXPECT_DOUBLE_EQ(rd.reduce_bytes, L * n);
    EXPECT_EQ(rd.max_messages_sent, static_cast<uint64_t>(L));
    EXPECT_EQ(rd.total_bytes_sent, static_cast<uint64_t>(L * n * P));
    for (const Cost& rs :
         {ReduceScatterHalving::cost(problem_of(P, count, 4)), ReduceScatterRing::cost(problem_of(P, count, 4))}) {
      EXPECT_DOUBLE_EQ(rs.wire_bytes, (P - 1) * n / P);
      EXPECT_DOUBLE_EQ(rs.reduce_bytes, (P - 1) * n / P);
      EXPECT_EQ(rs.max_bytes_sent, share);
      EXPECT_EQ(rs.total_bytes_sent, share * P);
    }
    EXPECT_EQ(ReduceScatterHalving::cost(problem_of(P, count, 4)).rounds, L);
    EXPECT_EQ(ReduceScatterRing::cost(problem_of(P, count, 4)).rounds, P - 1);
    const Cost ag = AllgatherRecursiveDoubling::cost(problem_of(P, 4 * count, 1));
    EXPECT_EQ(ag.rounds, L);
    EXPECT_DOUBLE_EQ(ag.wire_bytes, (P - 1) * n / P);
    EXPECT_EQ(ag.reduce_bytes, 0);
    EXPECT_EQ(ag.max_bytes_sent, share);
    EXPECT_EQ(ag.total_messages_sent, static_cast<uint64_t>(L) * P);
  }
}

// Not a power of two: the fold adds two rounds, n bytes before and n (or a block) after.
TEST(DoublingCost, FoldAddsItsStepsWhenPIsNotAPowerOfTwo) {
  const size_t count = 1000;
  const double n = 4.0 * count;
  for (int P : {3, 5, 6, 7, 12}) {
    int pof2 = 1, L = 0;
    while (pof2 * 2 <= P) pof2 *= 2, ++L;
    SCOPED_TRACE(cat("P=", P, " pof2=", pof2));
    const double block = 4.0 * ((count + pof2 - 1) / pof2);
    const Cost hd = AllreduceHalvingDoubling::cost(problem_of(P, count, 4));
    EXPECT_EQ(hd.rounds, 2 * L + 2);
    EXPECT_DOUBLE_EQ(hd.wire_bytes, 2 * (pof2 - 1) * block + 2 * n);
    EXPECT_DOUBLE_EQ(hd.reduce_bytes, (pof2 - 1) * block + n);
    // The odd rank of a fold pair sends 2L exchange messages and the result back.
    EXPECT_EQ(hd.max_messages_sent, 2u * L + 1);
    const Cost rd = AllreduceRecursiveDoubling::cost(problem_of(P, count, 4));
    EXPECT_EQ(rd.rounds, L + 2);
    EXPECT_DOUBLE_EQ(rd.wire_bytes, (L + 2) * n);
    EXPECT_EQ(rd.max_messages_sent, static_cast<uint64_t>(L) + 1);
    // Every rank sends the whole vector once per round it takes part in, fold included.
    const uint64_t extra = P - pof2;
    EXPECT_EQ(rd.total_bytes_sent, static_cast<uint64_t>(n) * (pof2 * L + 2 * extra));
    EXPECT_EQ(ReduceScatterHalving::cost(problem_of(P, count, 4)).rounds, L + 2);
    EXPECT_EQ(AllgatherRecursiveDoubling::cost(problem_of(P, 4 * count, 1)).rounds, L + 2);
  }
}

TEST(DoublingCost, OneRankOrNothingToSendCostsNothing) {
  for (const Problem& problem : {problem_of(1, 1000, 4), problem_of(7, 0, 4)}) {
    for (const Cost& cost : {AllreduceHalvingDoubling::cost(problem), AllreduceRecursiveDoubling::cost(problem),
                             ReduceScatterHalving::cost(problem), ReduceScatterRing::cost(problem),
                             AllgatherRecursiveDoubling::cost(problem)}) {
      EXPECT_EQ(cost.total_messages_sent, 0u) << "P=" << problem.ranks << " n=" << problem.count;
      EXPECT_EQ(cost.seconds(CostParams{}), 0) << "P=" << problem.ranks << " n=" << problem.count;
    }
  }
}

using Param = std::tuple<std::string, int>;

class AllreduceOperandOrder : public ::testing::TestWithParam<Param> {};

TEST_P(AllreduceOperandOrder, SignedZerosAndNaNsGiveBitIdenticalResultsOnEveryRank) {
  const auto& [name, P] = GetParam();
  const auto& entry = find_algorithm(allreduce_algorithms(), name);
  constexpr size_t n = 1001;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kSum}) {
      const std::string what = cat(name, " P=", P, " n=", n, " dtype=", dtype_name(dtype), " op=", reduce_op_name(op));
      std::vector<std::vector<uint8_t>> data(P, std::vector<uint8_t>(n * dtype_size(dtype)));
      for (int r = 0; r < P; ++r) fill_order_sensitive(data[r].data(), n, dtype, r);
      std::vector<ScratchBuffer> scratch(P);
      ASSERT_EQ(run_ranks(P,
                          [&](Communicator& comm, const AbortFlag& aborted) {
                            auto algorithm = entry.create(AlgorithmContext{comm, scratch[comm.rank()]});
                            algorithm->start(data[comm.rank()].data(), n, dtype, op);
                            drive(*algorithm, aborted);
                          }),
                "")
          << what;
      for (int r = 1; r < P; ++r) {
        const long diff = first_difference(data[r], data[0], dtype_size(dtype));
        EXPECT_EQ(diff, -1) << "rank " << r << " differs from rank 0 at element " << diff << " (" << what << ")";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DoublingFamily, AllreduceOperandOrder,
                         ::testing::Combine(::testing::Values("halving_doubling", "recursive_doubling"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 12, 16)),
                         [](const auto& info) { return cat(std::get<0>(info.param), "_P", std::get<1>(info.param)); });

// A step whose reduction writes the range its own send reads (as recursive doubling's),
// sent in many pieces: the pieces must not be reduced before the send has gone, or the
// partner receives partly reduced data (the in-process transport copies a waiting send
// when the receive is tested, as MPI's shared memory does).
TEST(ExchangeSchedulePieces, OverlappingSendAndReductionWaitForTheSend) {
  constexpr size_t kCount = 1001;  // float32, 4,004 bytes: 63 pieces of 64 bytes
  std::vector<std::vector<float>> data(2);
  std::vector<ScratchBuffer> scratch(2);
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < kCount; ++i) data[r].push_back(static_cast<float>(r * 1000 + i));
  const std::string error = run_ranks(2, [&](Communicator& comm, const AbortFlag& aborted) {
    const int peer = 1 - comm.rank();
    const patterns::Segment whole{0, kCount * sizeof(float)};
    ExchangeSchedule schedule(comm, scratch[comm.rank()], tags::kAllreduceRecursiveDoubling, 64);
    schedule.start(reinterpret_cast<uint8_t*>(data[comm.rank()].data()),
                   {exchange_step(peer, whole, whole, Combine::kReduce)}, DataType::kFloat32, ReduceOp::kSum);
    while (schedule.progress() != Progress::kDone) {
      if (aborted.load()) throw std::runtime_error("stopped: another rank failed");
      std::this_thread::yield();
    }
  });
  ASSERT_EQ(error, "");
  for (int r = 0; r < 2; ++r)
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(data[r][i], static_cast<float>(1000 + 2 * i)) << "rank " << r << " element " << i;
}

}  // namespace
}  // namespace concord
