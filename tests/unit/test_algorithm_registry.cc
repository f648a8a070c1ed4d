// Every algorithm in the registry (src/algorithms/registry.h), on the in-process multi-rank
// transport (threads as ranks):
//   - allreduce: P = 1..16 x dtype, each with every op and the sizes 0, 1, P-1, P+1, 7,
//     1023 (and 100003 for sum), against a float64 / modular reference; every rank
//     bit-identical to rank 0; tiny pipeline chunks too; out of place
//     (start_out_of_place into a garbage-filled output: the input must stay unchanged and
//     the result bit-identical to the same algorithm in place);
//   - every collective: the exact message and byte counts its cost() predicts equal the
//     transport's counters (busiest rank and sum over ranks);
//   - selection: forced names, declining algorithms falling back, unknown names.
// Nodes are emulated for hierarchical algorithms: node = rank / R (emulated_ranks_per_node).
// An algorithm that declines a problem (e.g. needs several nodes) is skipped for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>
#include <vector>

#include "algorithms/allreduce_adasum.h"
#include "algorithms/registry.h"
#include "allreduce_check.h"
#include "common/enforce.h"
#include "cost_check.h"
#include "patterns/ring.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::all_dtypes;
using testing_util::all_ops;
using testing_util::cat;
using testing_util::drive;
using testing_util::expect_allreduce_results;
using testing_util::expect_counts;
using testing_util::fill_input;
using testing_util::run_ranks;

// Ranks per emulated node: 2 for even P, the smallest odd divisor for odd composite P, 1
// (every rank its own node) for prime P.
int emulated_ranks_per_node(int P) {
  if (P % 2 == 0 && P > 2) return 2;
  for (int d = 3; d * d <= P; d += 2)
    if (P % d == 0) return d;
  return 1;
}

std::vector<int> emulated_nodes(int P) {
  std::vector<int> nodes(P);
  const int R = emulated_ranks_per_node(P);
  for (int r = 0; r < P; ++r) nodes[r] = r / R;
  return nodes;
}

Problem make_problem(int P, size_t count, DataType dtype, ReduceOp op, size_t chunk) {
  Problem problem;
  problem.ranks = P;
  problem.nodes = P / emulated_ranks_per_node(P);
  problem.count = count;
  problem.element_size = dtype_size(dtype);
  problem.dtype = dtype;
  problem.op = op;
  problem.chunk_bytes = chunk;
  problem.native_available = false;  // the in-process transport has no MPI_Allreduce
  return problem;
}

template <typename Entry>
std::vector<std::string> names(const std::vector<Entry>& entries) {
  std::vector<std::string> result;
  // The rows on device buffers run on the strict emulated device in their own suites
  // (test_device_selection.cc, test_allreduce_device.cc, test_allreduce_staged.cc),
  // the adasum row (op adasum only, not element-wise) in test_allreduce_adasum.cc.
  for (const auto& entry : entries)
    if (entry.memory == MemoryKind::kHost && entry.name != AllreduceAdasum::kName) result.push_back(entry.name);
  return result;
}

// Runs body(algorithm, comm) for the named entry on P ranks; returns each rank's counters.
template <typename Entry, typename Body>
std::vector<TrafficCounters> run_entry(const Entry& entry, int P, size_t chunk, const Body& body) {
  std::vector<ScratchBuffer> scratch(P);
  std::vector<TrafficCounters> counters(P);
  const std::vector<int> nodes = emulated_nodes(P);
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    AlgorithmContext context{comm, scratch[comm.rank()], chunk, nodes};
    auto algorithm = entry.create(context);
    comm.reset_counters();  // construction may split the communicator; count only the call
    body(*algorithm, comm.rank());
    drive(*algorithm, aborted);
    counters[comm.rank()] = comm.counters();
  });
  EXPECT_EQ(error, "") << entry.name << " P=" << P;
  return counters;
}

// ---------------------------------------------------------------------------------------
// Allreduce correctness.

using AllreduceParam = std::tuple<std::string, int, DataType>;

class RegistryAllreduce : public ::testing::TestWithParam<AllreduceParam> {};

// In place on a copy of each rank's input, or out of place from a separate input (with a
// guard after it) into a garbage-filled output.
void check_allreduce(const AllreduceEntry& entry, int P, size_t n, DataType dtype, ReduceOp op, size_t chunk,
                     bool out_of_place = false) {
  if (!entry.declines(make_problem(P, n, dtype, op, chunk)).empty()) return;
  const std::string what = cat(entry.name, " P=", P, " n=", n, " dtype=", dtype_name(dtype), " op=", reduce_op_name(op),
                               " chunk_bytes=", chunk, out_of_place ? " out of place" : "");
  SCOPED_TRACE(what);
  const size_t element = dtype_size(dtype);
  constexpr size_t kGuard = 16;
  std::vector<std::vector<uint8_t>> inputs(P), results(P), sources(P);
  for (int r = 0; r < P; ++r) {
    inputs[r].assign(n * element, 0);
    fill_input(inputs[r].data(), n, dtype, op, r);
    results[r] = inputs[r];
    if (out_of_place) std::fill(results[r].begin(), results[r].end(), 0xA5);
    results[r].resize(n * element + kGuard, 0x5A);
    sources[r] = inputs[r];
    sources[r].resize(n * element + kGuard, 0x5A);
  }
  run_entry(entry, P, chunk, [&](AllreduceAlgorithm& algorithm, int rank) {
    if (out_of_place) {
      algorithm.start_out_of_place(sources[rank].data(), results[rank].data(), n, dtype, op);
    } else {
      algorithm.start(results[rank].data(), n, dtype, op);
    }
  });
  for (int r = 0; r < P; ++r) {
    sources[r].resize(n * element);
    const long changed = testing_util::first_difference(sources[r], inputs[r], element);
    ASSERT_EQ(changed, -1) << entry.name << ": rank " << r << " changed its input at element " << changed;
  }
  for (int r = 0; r < P; ++r)
    for (size_t b = n * element; b < n * element + kGuard; ++b)
      ASSERT_EQ(results[r][b], 0x5A) << entry.name << ": rank " << r << " wrote past the end (byte " << b << ")";
  for (auto& result : results) result.resize(n * element);
  expect_allreduce_results(inputs, results, n, dtype, op, what);
  if (!out_of_place) return;
  // Out of place must be bit-identical to the same algorithm in place (the runtime serves
  // hvd.allreduce and hvd.allreduce_ with one choice): same operands, same order.
  std::vector<std::vector<uint8_t>> in_place = inputs;
  run_entry(entry, P, chunk,
            [&](AllreduceAlgorithm& algorithm, int rank) { algorithm.start(in_place[rank].data(), n, dtype, op); });
  for (int r = 0; r < P; ++r) {
    const long differs = testing_util::first_difference(results[r], in_place[r], element);
    ASSERT_EQ(differs, -1) << entry.name << ": rank " << r << " out of place differs from in place at element "
                           << differs;
  }
}

TEST_P(RegistryAllreduce, EveryOpAndSizeMatchesReferenceOnEveryRank) {
  const auto& [name, P, dtype] = GetParam();
  const auto& entry = find_algorithm(allreduce_algorithms(), name);
  const size_t sizes[] = {0, 1, static_cast<size_t>(P - 1), static_cast<size_t>(P + 1), 7, 1023};
  for (ReduceOp op : all_ops())
    for (size_t n : sizes) check_allreduce(entry, P, n, dtype, op, size_t{1} << 19);
  check_allreduce(entry, P, 100003, dtype, ReduceOp::kSum, size_t{1} << 19);
}

std::string allreduce_param_name(const ::testing::TestParamInfo<AllreduceParam>& info) {
  return cat(std::get<0>(info.param), "_P", std::get<1>(info.param), "_", dtype_name(std::get<2>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, RegistryAllreduce,
                         ::testing::Combine(::testing::ValuesIn(names(allreduce_algorithms())), ::testing::Range(1, 17),
                                            ::testing::ValuesIn(all_dtypes())),
                         allreduce_param_name);

// Out of place: the result lands in a separate output, the input is only read.
class RegistryAllreduceOutOfPlace : public ::testing::TestWithParam<AllreduceParam> {};

TEST_P(RegistryAllreduceOutOfPlace, MatchesReferenceAndLeavesTheInput) {
  const auto& [name, P, dtype] = GetParam();
  const auto& entry = find_algorithm(allreduce_algorithms(), name);
  const size_t sizes[] = {0, 1, static_cast<size_t>(P + 1), 7, 1023};
  for (ReduceOp op : all_ops())
    for (size_t n : sizes) check_allreduce(entry, P, n, dtype, op, size_t{1} << 19, true);
  check_allreduce(entry, P, 10007, dtype, ReduceOp::kSum, 256, true);  // pipelined in many chunks
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, RegistryAllreduceOutOfPlace,
                         ::testing::Combine(::testing::ValuesIn(names(allreduce_algorithms())),
                                            ::testing::Values(1, 2, 3, 4, 5, 8, 13, 16),
                                            ::testing::ValuesIn(all_dtypes())),
                         allreduce_param_name);

// Operand order out of place: min and max of NaNs and signed zeros depend on which operand
// is left, so out of place must keep the in-place operands in the same order (the check
// above uses finite inputs, where any order gives the same bits). Bits only, no reference.
class RegistryAllreduceOperandOrder : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(RegistryAllreduceOperandOrder, OutOfPlaceKeepsInPlaceOperandsForNaNAndSignedZero) {
  const auto& [name, P] = GetParam();
  const auto& entry = find_algorithm(allreduce_algorithms(), name);
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat16})
    for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax})
      for (size_t n : {size_t{1}, static_cast<size_t>(P + 1), size_t{1023}}) {
        if (!entry.declines(make_problem(P, n, dtype, op, 256)).empty()) continue;
        const size_t element = dtype_size(dtype);
        std::vector<std::vector<uint8_t>> inputs(P), in_place(P), out_of_place(P);
        for (int r = 0; r < P; ++r) {
          inputs[r].assign(n * element, 0);
          for (size_t i = 0; i < n; ++i) {  // per element and rank: NaN of either sign, +-0, or a number
            const int kind = static_cast<int>((i * 7 + static_cast<size_t>(r) * 3) % 5);
            const double value = kind == 0   ? std::nan("")
                                 : kind == 1 ? -std::nan("")
                                 : kind == 2 ? 0.0
                                 : kind == 3 ? -0.0
                                             : static_cast<double>(i % 11) - 5;
            testing_util::store(inputs[r].data(), i, dtype, value);
          }
          in_place[r] = inputs[r];
          out_of_place[r].assign(n * element, 0xA5);
        }
        run_entry(entry, P, 256, [&](AllreduceAlgorithm& algorithm, int rank) {
          algorithm.start(in_place[rank].data(), n, dtype, op);
        });
        run_entry(entry, P, 256, [&](AllreduceAlgorithm& algorithm, int rank) {
          algorithm.start_out_of_place(inputs[rank].data(), out_of_place[rank].data(), n, dtype, op);
        });
        for (int r = 0; r < P; ++r) {
          const long differs = testing_util::first_difference(out_of_place[r], in_place[r], element);
          ASSERT_EQ(differs, -1) << name << " P=" << P << " n=" << n << " " << dtype_name(dtype) << " "
                                 << reduce_op_name(op) << ": rank " << r
                                 << " out of place differs from in place at element " << differs;
        }
      }
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, RegistryAllreduceOperandOrder,
                         ::testing::Combine(::testing::ValuesIn(names(allreduce_algorithms())),
                                            ::testing::Values(2, 3, 5, 8)),
                         [](const auto& info) { return cat(std::get<0>(info.param), "_P", std::get<1>(info.param)); });

// Tiny chunks: many pipelined messages per step, some of them empty.
class RegistryAllreducePipelined : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(RegistryAllreducePipelined, MatchesReferenceWith64ByteChunks) {
  const auto& [name, P] = GetParam();
  const auto& entry = find_algorithm(allreduce_algorithms(), name);
  for (DataType dtype : {DataType::kFloat32, DataType::kBFloat16, DataType::kInt8})
    for (size_t n : {static_cast<size_t>(P + 1), size_t{1023}, size_t{10007}})
      check_allreduce(entry, P, n, dtype, ReduceOp::kSum, 64);
  check_allreduce(entry, P, 1023, DataType::kFloat64, ReduceOp::kMax, 24);
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, RegistryAllreducePipelined,
                         ::testing::Combine(::testing::ValuesIn(names(allreduce_algorithms())),
                                            ::testing::Values(2, 3, 5, 8, 13, 16)),
                         [](const auto& info) { return cat(std::get<0>(info.param), "_P", std::get<1>(info.param)); });

// ---------------------------------------------------------------------------------------
// cost() counts == transport counters, for every collective.

using CountParam = std::tuple<int, size_t>;  // P, n
const auto kCountParams = ::testing::Combine(
    ::testing::Range(1, 17), ::testing::Values(size_t{0}, size_t{1}, size_t{13}, size_t{1023}, size_t{100003}));
std::string count_param_name(const ::testing::TestParamInfo<CountParam>& info) {
  return cat("P", std::get<0>(info.param), "_n", std::get<1>(info.param));
}

class RegistryCounts : public ::testing::TestWithParam<CountParam> {};

TEST_P(RegistryCounts, AllreduceCostCountsEqualTransportCounters) {
  const auto [P, n] = GetParam();
  for (const auto& entry : allreduce_algorithms()) {
    for (size_t chunk : {size_t{64}, size_t{1} << 19}) {
      const Problem problem = make_problem(P, n, DataType::kFloat32, ReduceOp::kSum, chunk);
      if (!entry.declines(problem).empty()) continue;
      std::vector<std::vector<float>> data(P, std::vector<float>(n, 1.0f));
      const auto counters = run_entry(entry, P, chunk, [&](AllreduceAlgorithm& algorithm, int rank) {
        algorithm.start(data[rank].data(), n, DataType::kFloat32, ReduceOp::kSum);
      });
      expect_counts(cat("allreduce ", entry.name, " P=", P, " n=", n, " chunk_bytes=", chunk), entry.cost(problem),
                    counters);
    }
  }
}

TEST_P(RegistryCounts, ReduceScatterCostCountsEqualTransportCounters) {
  const auto [P, n] = GetParam();
  for (const auto& entry : reduce_scatter_algorithms()) {
    const Problem problem = make_problem(P, n, DataType::kFloat32, ReduceOp::kSum, size_t{1} << 19);
    if (!entry.declines(problem).empty()) continue;
    std::vector<std::vector<float>> data(P, std::vector<float>(n, 1.0f));
    const auto counters = run_entry(entry, P, problem.chunk_bytes, [&](ReduceScatterAlgorithm& algorithm, int rank) {
      algorithm.start(data[rank].data(), n, DataType::kFloat32, ReduceOp::kSum);
    });
    expect_counts(cat("reduce_scatter ", entry.name, " P=", P, " n=", n), entry.cost(problem), counters);
  }
}

TEST_P(RegistryCounts, AllgatherCostCountsEqualTransportCounters) {
  const auto [P, n] = GetParam();
  for (const auto& entry : allgather_algorithms()) {
    Problem problem = make_problem(P, n, DataType::kUInt8, ReduceOp::kSum, size_t{1} << 19);
    if (!entry.declines(problem).empty()) continue;
    std::vector<size_t> blocks(P);
    for (int r = 0; r < P; ++r) blocks[r] = patterns::segment(n, P, r).count;
    std::vector<std::vector<uint8_t>> output(P, std::vector<uint8_t>(n, 7));
    const auto counters = run_entry(entry, P, problem.chunk_bytes, [&](AllgatherAlgorithm& algorithm, int rank) {
      algorithm.start(output[rank].data(), blocks);
    });
    expect_counts(cat("allgather ", entry.name, " P=", P, " bytes=", n), entry.cost(problem), counters);
  }
}

TEST_P(RegistryCounts, BroadcastCostCountsEqualTransportCounters) {
  const auto [P, n] = GetParam();
  for (const auto& entry : broadcast_algorithms()) {
    for (size_t chunk : {size_t{64}, size_t{1} << 19}) {
      const Problem problem = make_problem(P, n, DataType::kUInt8, ReduceOp::kSum, chunk);
      if (!entry.declines(problem).empty()) continue;
      std::vector<std::vector<uint8_t>> data(P, std::vector<uint8_t>(n, 3));
      const auto counters = run_entry(
          entry, P, chunk, [&](BroadcastAlgorithm& algorithm, int rank) { algorithm.start(data[rank].data(), n, 0); });
      expect_counts(cat("broadcast ", entry.name, " P=", P, " bytes=", n, " chunk_bytes=", chunk), entry.cost(problem),
                    counters);
    }
  }
}

TEST_P(RegistryCounts, AlltoallCostCountsEqualTransportCounters) {
  const auto [P, n] = GetParam();
  for (const auto& entry : alltoall_algorithms()) {
    const size_t block = n / P;
    Problem problem = make_problem(P, block * P, DataType::kUInt8, ReduceOp::kSum, size_t{1} << 19);
    if (!entry.declines(problem).empty()) continue;
    std::vector<std::vector<uint8_t>> send(P, std::vector<uint8_t>(block * P, 1)), recv(send);
    const auto counters = run_entry(entry, P, problem.chunk_bytes, [&](AlltoallAlgorithm& algorithm, int rank) {
      algorithm.start(send[rank].data(), recv[rank].data(), block);
    });
    expect_counts(cat("alltoall ", entry.name, " P=", P, " block_bytes=", block), entry.cost(problem), counters);
  }
}

INSTANTIATE_TEST_SUITE_P(SizesAndRanks, RegistryCounts, kCountParams, count_param_name);

// ---------------------------------------------------------------------------------------
// Selection.

TEST(RegistrySelection, EveryCollectiveHasAnAlgorithmForEveryProblem) {
  const CostParams params;
  for (int P : {1, 2, 3, 8, 1000})
    for (size_t bytes : {size_t{0}, size_t{4}, size_t{1} << 20, size_t{1} << 30}) {
      Problem problem = make_problem(P, bytes / 4, DataType::kFloat32, ReduceOp::kSum, size_t{1} << 19);
      EXPECT_NO_THROW(select_algorithm(allreduce_algorithms(), problem, params)) << "P=" << P << " bytes=" << bytes;
      problem.element_size = 1;
      problem.count = bytes;
      EXPECT_NO_THROW(select_algorithm(allgather_algorithms(), problem, params)) << "P=" << P << " bytes=" << bytes;
      EXPECT_NO_THROW(select_algorithm(broadcast_algorithms(), problem, params)) << "P=" << P << " bytes=" << bytes;
    }
}

TEST(RegistrySelection, AutoPicksTheCheapestSupportedAlgorithm) {
  const CostParams params;
  for (int P : {2, 5, 16, 64})
    for (size_t count : {size_t{1}, size_t{1000}, size_t{1} << 24}) {
      const Problem problem = make_problem(P, count, DataType::kFloat32, ReduceOp::kSum, size_t{1} << 19);
      const auto& chosen = select_algorithm(allreduce_algorithms(), problem, params, "auto");
      EXPECT_TRUE(chosen.declines(problem).empty()) << chosen.name;
      for (const auto& entry : allreduce_algorithms())
        if (entry.declines(problem).empty())
          EXPECT_LE(chosen.cost(problem).seconds(params), entry.cost(problem).seconds(params))
              << "P=" << P << " count=" << count << ": chose " << chosen.name << " over " << entry.name;
    }
}

TEST(RegistrySelection, ForcedAlgorithmIsUsedUnlessItDeclines) {
  const CostParams params;
  for (const auto& entry : allreduce_algorithms()) {
    for (int P : {1, 2, 3, 4, 6, 7, 8}) {
      const Problem problem = make_problem(P, 1000, DataType::kFloat32, ReduceOp::kSum, size_t{1} << 19);
      const auto& chosen = select_algorithm(allreduce_algorithms(), problem, params, entry.name);
      if (entry.declines(problem).empty()) {
        EXPECT_EQ(chosen.name, entry.name) << "P=" << P;
      } else {
        EXPECT_NE(chosen.name, entry.name) << entry.name << " declines P=" << P << " but was chosen";
        EXPECT_EQ(chosen.name, select_algorithm(allreduce_algorithms(), problem, params).name) << "fallback is auto";
      }
    }
  }
}

TEST(RegistrySelection, UnknownNameIsAnErrorListingTheKnownOnes) {
  const Problem problem = make_problem(4, 10, DataType::kFloat32, ReduceOp::kSum, 64);
  try {
    select_algorithm(allreduce_algorithms(), problem, CostParams{}, "no_such_algorithm");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_algorithm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ring"), std::string::npos) << e.what();
  }
}

TEST(RegistrySelection, NamesAreUniqueAndDescribed) {
  auto check = [](const auto& entries, const char* collective) {
    std::vector<std::string> seen;
    for (const auto& entry : entries) {
      EXPECT_FALSE(entry.description.empty()) << collective << " " << entry.name;
      EXPECT_EQ(std::count(seen.begin(), seen.end(), entry.name), 0) << collective << " " << entry.name;
      seen.push_back(entry.name);
    }
  };
  check(allreduce_algorithms(), "allreduce");
  check(allgather_algorithms(), "allgather");
  check(broadcast_algorithms(), "broadcast");
  check(reduce_scatter_algorithms(), "reduce_scatter");
  check(alltoall_algorithms(), "alltoall");
}

}  // namespace
}  // namespace concord
