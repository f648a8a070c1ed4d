// Tests of C-Cube's overlapped tree (src/algorithms/allreduce_overlapped_tree.h) that the
// generic registry suite does not cover: the overlap itself, shown structurally (no timing)
// by the order of the root's transport calls, and the K_opt chunk choice. Correctness over
// P = 1..16 x sizes x dtypes x ops and exact counts are in test_algorithm_registry.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/allreduce_overlapped_tree.h"
#include "algorithms/allreduce_tree.h"
#include "patterns/binary_tree.h"
#include "rank_runner.h"
#include "test_support/transport_log.h"

namespace concord {
namespace {

using testing_util::AbortFlag;
using testing_util::drive;
using testing_util::run_ranks;

/// One transport event of a rank: an isend posted, or an irecv seen complete by test().
struct Event {
  bool send = false;
  int peer = 0;
  size_t offset = 0;  ///< byte offset of the message buffer in the rank's data (receives: unused)
};

/// The isends posted and the receives seen complete in `log`, in order.
std::vector<Event> sends_and_arrivals(const std::vector<testing_util::TransportEvent>& log) {
  std::vector<Event> events;
  for (const auto& e : log) {
    if (e.kind == testing_util::TransportEvent::kSendPosted)
      events.push_back({true, e.peer, static_cast<size_t>(e.offset)});
    else if (e.kind == testing_util::TransportEvent::kReceiveTested && e.complete) events.push_back({false, e.peer, 0});
  }
  return events;
}

/// Runs `algorithm` ("tree" or "overlapped_tree") on P ranks with K chunks and returns the
/// root's (rank 0's) events.
std::vector<Event> root_events(const std::string& algorithm, int P, int K) {
  constexpr size_t kChunkElements = 64;
  const size_t count = kChunkElements * K;
  std::vector<std::vector<float>> data(P, std::vector<float>(count, 1.0f));
  std::vector<ScratchBuffer> scratch(P);
  std::vector<Event> events;
  const std::string error = run_ranks(P, [&](Communicator& comm, const AbortFlag& aborted) {
    const int r = comm.rank();
    std::vector<testing_util::TransportEvent> log;
    testing_util::TransportLog logged(comm, log, data[r].data(), count * sizeof(float));
    std::unique_ptr<AllreduceAlgorithm> allreduce;
    if (algorithm == "tree")
      allreduce = std::make_unique<AllreducePipelinedTree>(logged, scratch[r], kChunkElements * sizeof(float));
    else allreduce = std::make_unique<AllreduceOverlappedTree>(logged, scratch[r], kChunkElements * sizeof(float));
    allreduce->start(data[r].data(), count, DataType::kFloat32, ReduceOp::kSum);
    drive(*allreduce, aborted);
    for (size_t i = 0; i < count; ++i)
      if (data[r][i] != static_cast<float>(P))
        throw std::runtime_error(algorithm + " P=" + std::to_string(P) + " element " + std::to_string(i) + ": " +
                                 std::to_string(data[r][i]) + " != " + std::to_string(P));
    if (r == 0) events = sends_and_arrivals(log);
  });
  EXPECT_EQ(error, "") << algorithm << " P=" << P << " K=" << K;
  return events;
}

/// Position of the root's first send (down: the root sends nothing up) and of the last
/// receive it saw complete (the last chunk from its last child).
struct Order {
  size_t first_send = 0;
  size_t last_receive = 0;
  size_t first_send_offset = 0;
};

Order order_of(const std::vector<Event>& events) {
  Order order;
  order.first_send = events.size();
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].send && order.first_send == events.size()) {
      order.first_send = i;
      order.first_send_offset = events[i].offset;
    }
    if (!events[i].send) order.last_receive = i;
  }
  return order;
}

class OverlappedTreeOrder : public ::testing::TestWithParam<int> {};

// C-Cube: the root sends chunk 0 down before it has received the last chunk from its
// children; the baseline tree sends it only after.
TEST_P(OverlappedTreeOrder, RootSendsChunkZeroDownBeforeTheLastChunkComesUp) {
  const int P = GetParam();
  constexpr int K = 12;
  const std::vector<Event> overlapped = root_events("overlapped_tree", P, K);
  const std::vector<Event> baseline = root_events("tree", P, K);
  const int children = patterns::binary_tree(0, P).child_count();
  ASSERT_EQ(overlapped.size(), static_cast<size_t>(2 * children * K)) << "overlapped_tree P=" << P;
  ASSERT_EQ(baseline.size(), static_cast<size_t>(2 * children * K)) << "tree P=" << P;
  const Order o = order_of(overlapped);
  const Order b = order_of(baseline);
  EXPECT_EQ(o.first_send_offset, 0u) << "overlapped_tree P=" << P << ": the root's first send is not chunk 0";
  EXPECT_LT(o.first_send, o.last_receive)
      << "overlapped_tree P=" << P << ": root sent chunk 0 down at event " << o.first_send
      << ", after the last chunk came up at event " << o.last_receive;
  EXPECT_GT(b.first_send, b.last_receive)
      << "tree P=" << P << ": baseline root sent chunk 0 down at event " << b.first_send
      << ", before the last chunk came up at event " << b.last_receive;
}

INSTANTIATE_TEST_SUITE_P(Ranks, OverlappedTreeOrder, ::testing::Values(2, 3, 7, 16),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

TEST(OverlappedTreeCost, SameCountsAsBaselineAndFewerRounds) {
  for (int P : {2, 5, 16}) {
    Problem problem;
    problem.ranks = P;
    problem.count = 1 << 20;
    problem.chunk_bytes = 64 << 10;
    const Cost tree = AllreducePipelinedTree::cost(problem);
    const Cost overlapped = AllreduceOverlappedTree::cost(problem);
    EXPECT_EQ(overlapped.total_messages_sent, tree.total_messages_sent) << "P=" << P;
    EXPECT_EQ(overlapped.total_bytes_sent, tree.total_bytes_sent) << "P=" << P;
    EXPECT_EQ(overlapped.max_bytes_sent, tree.max_bytes_sent) << "P=" << P;
    EXPECT_LT(overlapped.rounds, tree.rounds) << "P=" << P;
    const double D = patterns::tree_height(P);
    const double K = 64;  // 4 MiB in 64 KiB chunks
    EXPECT_EQ(overlapped.rounds, 2 * D + K - 1) << "P=" << P;
  }
}

TEST(OverlappedTreeChunks, FollowsSqrtOfDepthBetaBytesOverAlpha) {
  CostParams params;
  Problem problem;
  problem.ranks = 64;  // D = 6
  problem.count = (64 << 20) / 4;
  const double expected = std::sqrt(6 * params.beta * (64 << 20) / params.alpha);
  const size_t K = overlapped_tree_chunks(problem, params);
  EXPECT_NEAR(static_cast<double>(K), expected, 1.0) << "P=64, 64 MiB";
  const size_t chunk = optimal_chunk_bytes(problem, params);
  EXPECT_EQ(chunk % 4, 0u);
  EXPECT_EQ((problem.bytes() + chunk - 1) / chunk, K) << "chunk " << chunk << " bytes";
  problem.count = 3;  // clamped to one element per chunk
  EXPECT_LE(overlapped_tree_chunks(problem, params), 3u);
  EXPECT_GE(optimal_chunk_bytes(problem, params), 4u);
  problem.count = 0;
  EXPECT_EQ(overlapped_tree_chunks(problem, params), 1u);
}

}  // namespace
}  // namespace concord
