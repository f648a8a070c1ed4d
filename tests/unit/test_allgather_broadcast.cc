// Every registered allgather algorithm (ring, recursive_doubling) and BroadcastBinomial
// (src/algorithms/) on the in-process multi-rank transport (threads as ranks) for
// P = 1..16: variable and empty blocks, every root, and several algorithms progressed
// together by one loop on one communicator.
#include <gtest/gtest.h>

#include <vector>

#include "algorithms/allgather_ring.h"
#include "algorithms/allreduce_ring.h"
#include "algorithms/broadcast_binomial.h"
#include "algorithms/registry.h"
#include "rank_runner.h"
#include "test_support/dtype_util.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::drive;
using testing_util::first_difference;
using testing_util::run_ranks;

// ---------------------------------------------------------------------------------------
// Every registered allgather: variable block sizes, including empty blocks.

enum class Blocks { kAllEmpty, kOneByte, kVariableWithEmpty, kLarge };

size_t block_bytes(Blocks blocks, int rank) {
  switch (blocks) {
    case Blocks::kAllEmpty: return 0;
    case Blocks::kOneByte: return 1;
    case Blocks::kVariableWithEmpty: return static_cast<size_t>((rank * 37) % 11);  // rank 0: empty
    case Blocks::kLarge: return static_cast<size_t>(40009 + rank * 3);
  }
  return 0;
}

const char* blocks_name(Blocks blocks) {
  switch (blocks) {
    case Blocks::kAllEmpty: return "AllEmpty";
    case Blocks::kOneByte: return "OneByte";
    case Blocks::kVariableWithEmpty: return "VariableWithEmpty";
    case Blocks::kLarge: return "Large";
  }
  return "?";
}

uint8_t block_byte(int rank, size_t j) { return static_cast<uint8_t>(rank * 131 + j * 7 + 1); }

void check_allgather(const AllgatherEntry& entry, int P, Blocks blocks) {
  SCOPED_TRACE(::testing::Message() << "allgather " << entry.name << " P=" << P << " blocks=" << blocks_name(blocks));
  std::vector<size_t> sizes(P);
  size_t total = 0;
  for (int r = 0; r < P; ++r) total += sizes[r] = block_bytes(blocks, r);
  std::vector<uint8_t> expected;
  for (int r = 0; r < P; ++r)
    for (size_t j = 0; j < sizes[r]; ++j) expected.push_back(block_byte(r, j));
  constexpr size_t kGuard = 8;
  std::vector<std::vector<uint8_t>> outputs(P, std::vector<uint8_t>(total + kGuard, 0xEE));
  for (int rank = 0, offset = 0; rank < P; offset += static_cast<int>(sizes[rank]), ++rank)
    for (size_t j = 0; j < sizes[rank]; ++j) outputs[rank][offset + j] = block_byte(rank, j);
  std::vector<ScratchBuffer> scratch(P);
  ASSERT_EQ(run_ranks(P,
                      [&](Communicator& comm, const AbortFlag& aborted) {
                        auto gather = entry.create(AlgorithmContext{comm, scratch[comm.rank()]});
                        gather->start(outputs[comm.rank()].data(), sizes);
                        drive(*gather, aborted);
                      }),
            "");
  for (int r = 0; r < P; ++r) {
    for (size_t b = total; b < total + kGuard; ++b)
      ASSERT_EQ(outputs[r][b], 0xEE) << "rank " << r << " wrote past the end";
    const std::vector<uint8_t> got(outputs[r].begin(), outputs[r].begin() + static_cast<long>(total));
    const long diff = first_difference(got, expected, 1);
    EXPECT_EQ(diff, -1) << "rank " << r << ": first wrong byte " << diff;
  }
}

class AllgatherTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(AllgatherTest, EveryRankGetsEveryBlockInRankOrder) {
  const auto& [name, P] = GetParam();
  for (Blocks blocks : {Blocks::kAllEmpty, Blocks::kOneByte, Blocks::kVariableWithEmpty, Blocks::kLarge})
    check_allgather(find_algorithm(allgather_algorithms(), name), P, blocks);
}

std::vector<std::string> allgather_names() {
  std::vector<std::string> names;
  for (const auto& entry : allgather_algorithms()) names.push_back(entry.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, AllgatherTest,
                         ::testing::Combine(::testing::ValuesIn(allgather_names()), ::testing::Range(1, 17)),
                         [](const auto& info) {
                           return testing_util::cat(std::get<0>(info.param), "_P", std::get<1>(info.param));
                         });

// ---------------------------------------------------------------------------------------
// BroadcastBinomial from every root.

void check_broadcast(int P, size_t bytes) {
  constexpr size_t kGuard = 8;
  for (int root = 0; root < P; ++root) {
    std::vector<std::vector<uint8_t>> buffers(P, std::vector<uint8_t>(bytes + kGuard, 0xEE));
    for (int rank = 0; rank < P; ++rank)
      for (size_t j = 0; j < bytes; ++j)
        buffers[rank][j] = rank == root ? block_byte(root, j) : static_cast<uint8_t>(rank);
    std::vector<TrafficCounters> counters(P);
    ASSERT_EQ(run_ranks(P,
                        [&](Communicator& comm, const AbortFlag& aborted) {
                          BroadcastBinomial tree(comm);
                          tree.start(buffers[comm.rank()].data(), bytes, root);
                          drive(tree, aborted);
                          counters[comm.rank()] = comm.counters();
                        }),
              "")
        << "BroadcastBinomial P=" << P << " bytes=" << bytes << " root " << root;
    uint64_t total_sent = 0;
    for (int r = 0; r < P; ++r) {
      SCOPED_TRACE(::testing::Message() << "BroadcastBinomial P=" << P << " bytes=" << bytes << " root " << root
                                        << " rank " << r);
      for (size_t b = bytes; b < bytes + kGuard; ++b) ASSERT_EQ(buffers[r][b], 0xEE) << "wrote past the end";
      long wrong = -1;
      for (size_t j = 0; j < bytes && wrong < 0; ++j)
        if (buffers[r][j] != block_byte(root, j)) wrong = static_cast<long>(j);
      EXPECT_EQ(wrong, -1) << "first wrong byte " << wrong;
      EXPECT_EQ(counters[r].bytes_received, r == root ? 0u : bytes) << "each non-root receives the message once";
      total_sent += counters[r].bytes_sent;
    }
    EXPECT_EQ(total_sent, (P - 1) * bytes) << "P=" << P << " root " << root << ": one copy per non-root";
  }
}

class BroadcastBinomialTest : public ::testing::TestWithParam<int> {};

TEST_P(BroadcastBinomialTest, EveryRootReachesEveryRank) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, size_t{100003}})
    check_broadcast(GetParam(), bytes);
}

INSTANTIATE_TEST_SUITE_P(Sizes1To16, BroadcastBinomialTest, ::testing::Range(1, 17),
                         [](const auto& info) { return testing_util::cat("P", info.param); });

// ---------------------------------------------------------------------------------------
// One progress loop driving several different operations at once on one communicator, as the
// background thread does: they use distinct tags and must not disturb each other.

// Progresses several algorithms in turn until all are done (one background thread driving
// several operations).
class AllOf : public Algorithm {
 public:
  explicit AllOf(std::vector<Algorithm*> parts) : parts_(std::move(parts)), done_(parts_.size(), false) {}
  Progress progress() override {
    bool all = true;
    for (size_t i = 0; i < parts_.size(); ++i) {
      if (!done_[i]) done_[i] = parts_[i]->progress() == Progress::kDone;
      all = all && done_[i];
    }
    return all ? Progress::kDone : Progress::kInProgress;
  }

 private:
  std::vector<Algorithm*> parts_;
  std::vector<bool> done_;
};

TEST(AlgorithmsInterleaved, AllreduceAllgatherAndBroadcastProgressTogether) {
  constexpr int P = 6;
  constexpr size_t n = 3001;
  constexpr int kRoot = 4;
  std::vector<std::vector<float>> reduced(P, std::vector<float>(n));
  std::vector<std::vector<uint8_t>> gathered(P, std::vector<uint8_t>(3 * P, 0));
  std::vector<std::vector<uint8_t>> broadcast(P);
  std::vector<ScratchBuffer> scratch(P);
  for (int rank = 0; rank < P; ++rank) {
    for (size_t i = 0; i < n; ++i) reduced[rank][i] = static_cast<float>(rank + 1) * static_cast<float>(i % 7);
    for (size_t j = 0; j < 3; ++j) gathered[rank][3 * rank + j] = block_byte(rank, j);
    broadcast[rank].assign(777, static_cast<uint8_t>(rank));
    if (rank == kRoot)
      for (size_t j = 0; j < broadcast[rank].size(); ++j) broadcast[rank][j] = block_byte(kRoot, j);
  }
  ASSERT_EQ(run_ranks(P,
                      [&](Communicator& comm, const AbortFlag& aborted) {
                        const int rank = comm.rank();
                        AllreduceRing ring(comm, scratch[rank], 128);
                        AllgatherRing gather(comm);
                        BroadcastBinomial tree(comm);
                        ring.start(reduced[rank].data(), n, DataType::kFloat32, ReduceOp::kSum);
                        gather.start(gathered[rank].data(), std::vector<size_t>(P, 3));
                        tree.start(broadcast[rank].data(), broadcast[rank].size(), kRoot);
                        AllOf all({&ring, &gather, &tree});
                        drive(all, aborted);
                      }),
            "");
  for (int r = 0; r < P; ++r) {
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(reduced[r][i], 21.0f * static_cast<float>(i % 7)) << "allreduce rank " << r << " element " << i;
    for (int s = 0; s < P; ++s)
      for (size_t j = 0; j < 3; ++j)
        ASSERT_EQ(gathered[r][3 * s + j], block_byte(s, j)) << "allgather rank " << r << " block " << s;
    for (size_t j = 0; j < broadcast[r].size(); ++j)
      ASSERT_EQ(broadcast[r][j], block_byte(kRoot, j)) << "broadcast rank " << r << " byte " << j;
  }
}

}  // namespace
}  // namespace concord
