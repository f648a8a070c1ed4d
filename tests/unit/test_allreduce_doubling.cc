// The recursive halving / doubling allreduces (src/algorithms/allreduce_halving_doubling.h,
// allreduce_recursive_doubling.h) on the in-process transport, beyond the generic registry
// suite (test_algorithm_registry.cc): results must be bit-identical on every rank even where
// the operand order of a reduction shows, i.e. min/max of +0 and -0 and of NaNs, and sums of
// NaNs with different payloads. In recursive doubling both partners reduce the same pair of
// vectors, so they must use one operand order; with a per-rank order these inputs differ.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/registry.h"
#include "allreduce_check.h"
#include "dtype_util.h"
#include "rank_runner.h"

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

using Param = std::tuple<std::string, int>;

class AllreduceOperandOrder : public ::testing::TestWithParam<Param> {};

TEST_P(AllreduceOperandOrder, SignedZerosAndNaNsGiveBitIdenticalResultsOnEveryRank) {
  const auto& [name, P] = GetParam();
  const auto& entry = find_algorithm(allreduce_algorithms(), name);
  constexpr size_t n = 1001;
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kSum}) {
      const std::string what =
          cat(name, " P=", P, " n=", n, " dtype=", dtype_name(dtype), " op=", reduce_op_name(op));
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

}  // namespace
}  // namespace concord
