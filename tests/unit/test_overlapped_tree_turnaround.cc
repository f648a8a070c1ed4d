// C-Cube's gradient turnaround (Jo, Son & Kim, "Logical/Physical Topology-Aware Collective
// Communication in Deep Learning Training", HPCA 2023), counted in pipeline steps instead of
// timed: with the overlapped tree (src/algorithms/allreduce_overlapped_tree.h) the first chunk
// is final on every rank after O(tree depth) pipeline steps, long before the last chunk; with
// the baseline tree only after all K chunks have been reduced at the root.
//
// Driver: P in-process ranks, one thread each, taking turns round-robin with one thread
// running at a time: a rank hands the turn on before each test() of a request and after each
// progress() call. The ranks so progress while one of them works, as processes do under MPI,
// and every run interleaves the same way (no clocks, no scheduler races).
// Pipeline step (the clock): the number of chunks the root has received from every child,
// i.e. the chunks it has reduced. Chunk 0 is final on a rank other than the root when its
// first receive from the parent completes (tests/test_support/transport_log.h records it).
// A rank that reduces every chunk its children have sent before it looks at its parent link
// (the greedy reduction loop that delayed the first chunk to the end of the allreduce on
// shared memory, where MPI_Test completes a receive in the call that tests it) sees chunk 0
// only after about K steps, and fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/allreduce_double_tree.h"
#include "algorithms/allreduce_overlapped_tree.h"
#include "algorithms/allreduce_tree.h"
#include "patterns/binary_tree.h"
#include "test_support/dtype_util.h"
#include "test_support/transport_log.h"
#include "transport/inprocess_communicator.h"
#include "transport/tags.h"

namespace concord {
namespace {

using testing_util::cat;
using testing_util::TransportEvent;
using testing_util::TransportLog;

constexpr size_t kChunkElements = 64;  // float32: 256-byte chunks

struct Trace {
  std::vector<TransportEvent> log;       // every rank's events, in the one order they happened
  std::vector<std::vector<float>> data;  // by rank: the allreduce results
};

std::unique_ptr<AllreduceAlgorithm> make_tree(const std::string& name, Communicator& comm, ScratchBuffer& scratch) {
  const size_t chunk_bytes = kChunkElements * sizeof(float);
  if (name == "tree") return std::make_unique<AllreducePipelinedTree>(comm, scratch, chunk_bytes);
  if (name == "overlapped_tree") return std::make_unique<AllreduceOverlappedTree>(comm, scratch, chunk_bytes);
  if (name == "overlapped_double_tree")
    return std::make_unique<AllreduceOverlappedDoubleTree>(comm, scratch, chunk_bytes);
  throw std::invalid_argument("no tree allreduce named " + name);
}

/// Round-robin turns of P rank threads, one running at a time: yield(r) hands the turn to
/// the next rank still running and returns once it is r's turn again. Which thread runs
/// when is thus fixed, so the ranks interleave the same way in every run.
class Turns {
 public:
  explicit Turns(int P) : running_(P, true) {}
  /// Blocks until it is rank r's turn (the first turn is rank 0's).
  void wait(int r) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return turn_ == r || failed_; });
    if (failed_) throw std::runtime_error("stopped: another rank failed");
  }
  void yield(int r) {
    pass(r, true);
    wait(r);
  }
  /// Rank r is done (`failed`: it threw): the others go on without it (stop, if failed).
  void leave(int r, bool failed) { pass(r, false, failed); }

 private:
  void pass(int r, bool still_running, bool failed = false) {
    std::lock_guard<std::mutex> lock(mutex_);
    running_[r] = still_running;
    failed_ = failed_ || failed;
    if (++turns_ > kMaxTurns) failed_ = true;  // a rank that never finishes: a deadlock
    const int P = static_cast<int>(running_.size());
    for (int step = 1; step <= P; ++step)
      if (running_[(r + step) % P]) {
        turn_ = (r + step) % P;
        break;
      }
    changed_.notify_all();
  }

  static constexpr long kMaxTurns = 1'000'000;  // P = 16, K = 64 takes about 13,000
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<bool> running_;
  int turn_ = 0;
  long turns_ = 0;
  bool failed_ = false;
};

/// Runs `algorithm` on P ranks with K chunks per tree, one thread per rank taking turns
/// (Turns): a rank yields after each progress() call and before each test() of a request.
/// Rank r contributes r + 1 + (i mod 7) at element i.
Trace run_interleaved(const std::string& algorithm, int P, int K) {
  const int trees = algorithm == "overlapped_double_tree" ? 2 : 1;
  const size_t count = kChunkElements * K * trees;
  Trace trace;
  trace.data.assign(P, std::vector<float>(count));
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < count; ++i) trace.data[r][i] = static_cast<float>(r + 1 + i % 7);
  auto world = std::make_shared<InProcessWorld>(P);
  std::vector<ScratchBuffer> scratch(P);
  Turns turns(P);
  std::mutex errors_mutex;
  std::string error;
  std::vector<std::thread> threads;
  for (int r = 0; r < P; ++r)
    threads.emplace_back([&, r] {
      try {
        InProcessCommunicator comm(world, r);
        TransportLog logged(comm, trace.log, trace.data[r].data(), count * sizeof(float), [&] { turns.yield(r); });
        const auto allreduce = make_tree(algorithm, logged, scratch[r]);
        turns.wait(r);
        allreduce->start(trace.data[r].data(), count, DataType::kFloat32, ReduceOp::kSum);
        while (allreduce->progress() == Progress::kInProgress) turns.yield(r);
        turns.leave(r, false);
      } catch (const std::exception& e) {
        {
          std::lock_guard<std::mutex> lock(errors_mutex);
          if (error.empty()) error = cat("rank ", r, ": ", e.what());
        }
        turns.leave(r, true);
      }
    });
  for (auto& thread : threads) thread.join();
  if (!error.empty()) throw std::runtime_error(cat(algorithm, " P=", P, " K=", K, ": ", error));
  return trace;
}

/// Per rank, the pipeline step at which its chunk 0 and its chunk K-1 of tree 0 became
/// final (the root: 1 and K by definition).
struct Turnaround {
  std::vector<int> first, last;
};

Turnaround turnaround(const Trace& trace, int P, int K, int up_tag, int down_tag) {
  const patterns::TreeNode root = patterns::binary_tree(0, P);
  std::vector<int> from_child(root.child_count(), 0);
  std::vector<int> from_parent(P, 0);
  Turnaround result{std::vector<int>(P, 1), std::vector<int>(P, K)};
  int step = 0;
  for (const TransportEvent& event : trace.log) {
    if (event.kind != TransportEvent::kReceiveTested || !event.complete) continue;
    if (event.rank == 0 && event.tag == up_tag) {
      for (int c = 0; c < root.child_count(); ++c) from_child[c] += event.peer == root.children[c];
      step = *std::min_element(from_child.begin(), from_child.end());
    } else if (event.rank != 0 && event.tag == down_tag) {
      const int received = ++from_parent[event.rank];
      if (received == 1) result.first[event.rank] = step;
      if (received == K) result.last[event.rank] = step;
    }
  }
  for (int r = 1; r < P; ++r)
    EXPECT_EQ(from_parent[r], K) << "rank " << r << " of " << P << ": chunks received from its tree-0 parent";
  return result;
}

void expect_sums(const Trace& trace, const std::string& algorithm, int P) {
  for (int r = 0; r < P; ++r)
    for (size_t i = 0; i < trace.data[r].size(); ++i) {
      const float expected = static_cast<float>(P * (P + 1) / 2 + P * static_cast<int>(i % 7));
      ASSERT_EQ(trace.data[r][i], expected) << algorithm << " P=" << P << " rank " << r << " element " << i;
    }
}

class OverlappedTreeTurnaround : public ::testing::TestWithParam<int> {};

// C-Cube's claim: chunk 0 is final on every rank after O(D) pipeline steps (D = tree
// height), whatever K; here within 2 D + 2 steps (2 D hops down and up, plus the chunk
// the root may reduce while chunk 0 travels down), while K = 64.
TEST_P(OverlappedTreeTurnaround, CCubeFirstChunkFinalAfterTreeDepthStepsNotAfterTheLast) {
  const int P = GetParam();
  const int D = patterns::tree_height(P);
  for (const std::string algorithm : {"overlapped_tree", "overlapped_double_tree"}) {
    for (const int K : {16, 64}) {
      const Trace trace = run_interleaved(algorithm, P, K);
      expect_sums(trace, algorithm, P);
      const Turnaround t = turnaround(trace, P, K, tags::kOverlappedTreeUp[0], tags::kOverlappedTreeDown[0]);
      for (int r = 1; r < P; ++r) {
        EXPECT_LE(t.first[r], 2 * D + 2) << algorithm << " P=" << P << " K=" << K << " rank " << r
                                         << ": chunk 0 became final only at pipeline step " << t.first[r]
                                         << " (its last chunk at step " << t.last[r] << ")";
        EXPECT_EQ(t.last[r], K) << algorithm << " P=" << P << " K=" << K << " rank " << r << ": last chunk";
      }
    }
  }
}

// The baseline tree broadcasts only once the root has reduced every chunk: chunk 0 is final
// at step K on every rank but the root. This also shows the step count measures the overlap.
TEST_P(OverlappedTreeTurnaround, BaselineTreeFirstChunkFinalOnlyAfterTheLastStep) {
  const int P = GetParam();
  constexpr int K = 16;
  const Trace trace = run_interleaved("tree", P, K);
  expect_sums(trace, "tree", P);
  const Turnaround t = turnaround(trace, P, K, tags::kTreeUp, tags::kTreeDown);
  for (int r = 1; r < P; ++r)
    EXPECT_EQ(t.first[r], K) << "tree P=" << P << " rank " << r << ": chunk 0 final at pipeline step " << t.first[r];
}

INSTANTIATE_TEST_SUITE_P(Ranks, OverlappedTreeTurnaround, ::testing::Values(2, 3, 4, 5, 7, 8, 16),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

}  // namespace
}  // namespace concord
