// Per-range completion (AllreduceAlgorithm::take_final_ranges, src/algorithms/algorithm.h)
// on the in-process transport: for AllreduceRing (default and 64-byte chunks),
// AllreduceHalvingDoubling, AllreduceRecursiveDoubling, the trees and AllreduceHierarchical
// (two nodes) at P = 1..16 and sizes 0, 1, odd, large, every reported range is non-empty,
// whole elements, inside the buffer, disjoint from every other, and at the moment it is
// reported its bytes already equal the final result (an int32 sum computed beforehand); at
// kDone the ranges cover the buffer. The same in place and out of place
// (start_out_of_place: the ranges are of the output, the input is left unchanged and the
// output starts as garbage). Also FinalRanges / FinalRangeCollector bookkeeping.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/allreduce_halving_doubling.h"
#include "algorithms/allreduce_hierarchical.h"
#include "algorithms/allreduce_overlapped_tree.h"
#include "algorithms/allreduce_recursive_doubling.h"
#include "algorithms/allreduce_ring.h"
#include "algorithms/allreduce_tree.h"
#include "allreduce_check.h"
#include "rank_runner.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::mix;
using testing_util::run_ranks;

enum class Kind {
  kRing,
  kRingChunk64,
  kHalvingDoubling,
  kRecursiveDoubling,
  kTreeChunk64,
  kOverlappedDoubleTreeChunk64,
  kHierarchicalChunk64,
};

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kRing: return "ring";
    case Kind::kRingChunk64: return "ring_chunk64";
    case Kind::kHalvingDoubling: return "halving_doubling";
    case Kind::kRecursiveDoubling: return "recursive_doubling";
    case Kind::kTreeChunk64: return "tree_chunk64";
    case Kind::kOverlappedDoubleTreeChunk64: return "overlapped_double_tree_chunk64";
    case Kind::kHierarchicalChunk64: return "hierarchical_chunk64";
  }
  return "?";
}

std::unique_ptr<AllreduceAlgorithm> make(Kind kind, Communicator& comm, ScratchBuffer& scratch) {
  switch (kind) {
    case Kind::kRing: return std::make_unique<AllreduceRing>(comm, scratch);
    case Kind::kRingChunk64: return std::make_unique<AllreduceRing>(comm, scratch, 64);
    case Kind::kHalvingDoubling: return std::make_unique<AllreduceHalvingDoubling>(comm, scratch);
    case Kind::kRecursiveDoubling: return std::make_unique<AllreduceRecursiveDoubling>(comm, scratch);
    case Kind::kTreeChunk64: return std::make_unique<AllreducePipelinedTree>(comm, scratch, 64);
    case Kind::kOverlappedDoubleTreeChunk64: return std::make_unique<AllreduceOverlappedDoubleTree>(comm, scratch, 64);
    case Kind::kHierarchicalChunk64: {  // two nodes: the lower half of the ranks and the upper
      std::vector<int> node_of_rank(comm.size());
      for (int r = 0; r < comm.size(); ++r) node_of_rank[r] = 2 * r < comm.size() ? 0 : 1;
      return std::make_unique<AllreduceHierarchical>(AlgorithmContext{comm, scratch, 64, node_of_rank, CostParams{}});
    }
  }
  return nullptr;
}

int32_t input(int rank, size_t i) { return static_cast<int32_t>(static_cast<uint32_t>(mix(rank, i, 7))); }

// Runs one int32 sum allreduce of `count` elements on P ranks, checking every range at the
// moment it is reported; out of place from a separate input into a garbage-filled buffer.
// Returns "" or the first rank's failure.
std::string check_ranges(Kind kind, int P, size_t count, bool out_of_place) {
  std::vector<int32_t> expected(count, 0);
  for (size_t i = 0; i < count; ++i) {
    uint32_t sum = 0;
    for (int r = 0; r < P; ++r) sum += static_cast<uint32_t>(input(r, i));
    expected[i] = static_cast<int32_t>(sum);
  }
  std::vector<std::vector<int32_t>> data(P, std::vector<int32_t>(count));
  std::vector<ScratchBuffer> scratch(P);
  return run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    const int rank = comm.rank();
    std::vector<int32_t>& buffer = data[rank];
    std::vector<int32_t> source(count);
    for (size_t i = 0; i < count; ++i) source[i] = input(rank, i);
    if (out_of_place) {
      std::fill(buffer.begin(), buffer.end(), int32_t{0x5A5A5A5A});
    } else {
      buffer = source;
    }
    auto algorithm = make(kind, comm, scratch[rank]);
    const auto where = [&] {
      std::ostringstream s;
      s << "rank " << rank << " " << kind_name(kind) << " P=" << P << " n=" << count
        << (out_of_place ? " out of place" : " in place");
      return s.str();
    };
    const size_t bytes = count * sizeof(int32_t);
    std::vector<bool> covered(count, false);
    size_t covered_elements = 0;
    std::vector<ByteRange> ranges;
    if (out_of_place) {
      algorithm->start_out_of_place(source.data(), buffer.data(), count, DataType::kInt32, ReduceOp::kSum);
    } else {
      algorithm->start(buffer.data(), count, DataType::kInt32, ReduceOp::kSum);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      const Progress state = algorithm->progress();
      ranges.clear();
      algorithm->take_final_ranges(ranges);
      for (const ByteRange& range : ranges) {
        std::ostringstream what;
        what << where() << ": range [" << range.offset << ", +" << range.bytes << ")";
        if (range.bytes == 0 || range.offset % sizeof(int32_t) != 0 || range.bytes % sizeof(int32_t) != 0 ||
            range.offset + range.bytes > bytes)
          throw std::runtime_error(what.str() + " is empty, not whole elements or outside the buffer");
        for (size_t i = range.offset / sizeof(int32_t); i < (range.offset + range.bytes) / sizeof(int32_t); ++i) {
          if (covered[i])
            throw std::runtime_error(what.str() + " overlaps an earlier one at element " + std::to_string(i));
          covered[i] = true;
          ++covered_elements;
          if (buffer[i] != expected[i])
            throw std::runtime_error(what.str() + " reported before final: element " + std::to_string(i) + " is " +
                                     std::to_string(buffer[i]) + ", final " + std::to_string(expected[i]));
        }
      }
      if (state == Progress::kDone) break;
      if (aborted.load()) throw std::runtime_error("stopped: another rank failed");
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error(where() + ": deadlock");
      std::this_thread::yield();
    }
    // The doubling family at P = 1 has no steps and reports nothing (FinalRangeCollector
    // covers the buffer for its driver); everything else covers the buffer itself.
    const bool must_cover = !((kind == Kind::kHalvingDoubling || kind == Kind::kRecursiveDoubling) && P == 1);
    if (must_cover && covered_elements != count) {
      size_t first = 0;
      while (first < count && covered[first]) ++first;
      throw std::runtime_error(where() + ": at kDone " + std::to_string(covered_elements) +
                               " elements reported final, first missing element " + std::to_string(first));
    }
    for (size_t i = 0; i < count; ++i) {
      if (buffer[i] != expected[i])
        throw std::runtime_error(where() + ": wrong result at element " + std::to_string(i));
      if (out_of_place && source[i] != input(rank, i))
        throw std::runtime_error(where() + ": the input changed at element " + std::to_string(i));
    }
  });
}

class FinalRangesTest : public ::testing::TestWithParam<std::tuple<Kind, int>> {};

TEST_P(FinalRangesTest, ReportedOnlyWhenFinalDisjointAndComplete) {
  const auto [kind, P] = GetParam();
  const size_t large = kind == Kind::kRing || kind == Kind::kHalvingDoubling ? 100003 : 20011;
  for (bool out_of_place : {false, true})
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, large}) {
      const std::string error = check_ranges(kind, P, count, out_of_place);
      EXPECT_EQ(error, "") << kind_name(kind) << " P=" << P << " n=" << count << " out_of_place=" << out_of_place;
    }
}

INSTANTIATE_TEST_SUITE_P(All, FinalRangesTest,
                         ::testing::Combine(::testing::Values(Kind::kRing, Kind::kRingChunk64, Kind::kHalvingDoubling,
                                                              Kind::kRecursiveDoubling, Kind::kTreeChunk64,
                                                              Kind::kOverlappedDoubleTreeChunk64,
                                                              Kind::kHierarchicalChunk64),
                                            ::testing::Range(1, 17)),
                         [](const auto& info) {
                           return std::string(kind_name(std::get<0>(info.param))) + "_P" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(FinalRanges, FinishAddsTheGapsOnce) {
  FinalRanges ranges;
  ranges.reset(100);
  ranges.add(10, 20);
  ranges.add(50, 0);  // ignored
  ranges.add(60, 40);
  std::vector<ByteRange> out;
  ranges.take(out);
  ASSERT_EQ(out.size(), 2u);
  out.clear();
  ranges.finish();
  ranges.finish();
  ranges.take(out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].offset, 0u);
  EXPECT_EQ(out[0].bytes, 10u);
  EXPECT_EQ(out[1].offset, 30u);
  EXPECT_EQ(out[1].bytes, 30u);
  out.clear();
  ranges.take(out);
  EXPECT_TRUE(out.empty());
}

// An algorithm that reports nothing itself (the base default).
class Silent : public AllreduceAlgorithm {
 public:
  void start(void*, size_t, DataType, ReduceOp) override {}
  Progress progress() override { return ++calls_ < 3 ? Progress::kInProgress : Progress::kDone; }

 private:
  int calls_ = 0;
};

TEST(FinalRangeCollector, CoversTheBufferAtDoneForADefaultAlgorithm) {
  Silent algorithm;
  algorithm.start(nullptr, 16, DataType::kFloat32, ReduceOp::kSum);
  FinalRangeCollector collector(algorithm, 64);
  std::vector<ByteRange> out;
  Progress state;
  while ((state = algorithm.progress()) == Progress::kInProgress) {
    collector.collect(state, out);
    EXPECT_TRUE(out.empty()) << "nothing is final before kDone";
  }
  collector.collect(state, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].offset, 0u);
  EXPECT_EQ(out[0].bytes, 64u);
}

}  // namespace
}  // namespace concord
