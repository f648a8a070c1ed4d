// The papers' mechanisms under mpirun (real processes, MPI point-to-point on shared memory),
// checked as orders and counts that hold whatever the timing, never as durations. The
// in-process suites count the same claims at 1..16 ranks (tests/unit/
// test_overlapped_tree_turnaround.cc, test_response_cache_volume.cc).
//  - C-Cube (Jo, Son & Kim, HPCA 2023): the overlapped tree serves a rank's parent link
//    between two chunk steps, so chunk 0 can come down while later chunks still go up. A
//    rank that posts chunk after chunk up without polling its parent link (the reduction
//    loop that made chunk 0 final only at the end of the allreduce on shared memory) fails.
//    And the root sends chunk 0 down before the last chunk has come up.
//  - Horovod's response cache: a cached iteration costs every rank one AND-allreduce of
//    1 + capacity/64 words through the control transport, the same bytes as in-process at
//    P = 2..16 (no gather to the coordinator, no broadcast).
//  - Ok-Topk (Li & Hoefler, PPoPP 2022): with the residual carried, every rank sends fewer
//    than 6k words per call from call 32 on (tests/unit/test_oktopk_bound.cc in-process).
//  - Grouped allreduce (Romero et al., NSDI 2022, sec. 3.2): a group is fused with the single
//    tensors answered in its cycle, also when the last rank submits it a cycle late
//    (tests/unit/test_grouped_fusion.cc in-process).
//  - Idle ranks: the runtime (concord::init() in main.cc) runs no negotiation round while
//    every rank is idle, although ctest sets CONCORD_STALL_WARNING_TIME=0.2, so a stall
//    check would be due every 50 ms if an idle job ran them
//    (RuntimeInProcess.IdleBackgroundLoopRunsNoRound in-process).
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/allreduce_overlapped_tree.h"
#include "concord/concord.h"
#include "patterns/binary_tree.h"
#include "test_support/grouped_fusion_cycles.h"
#include "test_support/negotiation_volume.h"
#include "test_support/oktopk_volume.h"
#include "test_support/transport_log.h"
#include "transport/mpi_communicator.h"
#include "transport/tags.h"

namespace concord {
namespace {

using testing_util::TransportEvent;

constexpr int kChunks = 32;
constexpr size_t kChunkElements = 4096;  // float32: 16 KiB, above the shared-memory eager limit

bool is(const TransportEvent& e, TransportEvent::Kind kind, int tag) { return e.kind == kind && e.tag == tag; }

TEST(CCubeOverMpi, OverlappedTreeServesTheParentLinkBetweenChunkSteps) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int P = comm.size(), rank = comm.rank();
  if (P == 1) GTEST_SKIP() << "one rank: no tree";
  const size_t count = kChunkElements * kChunks;
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>(rank + 1 + i % 7);
  std::vector<TransportEvent> log;
  testing_util::TransportLog logged(comm, log, data.data(), count * sizeof(float));
  ScratchBuffer scratch;
  AllreduceOverlappedTree tree(logged, scratch, kChunkElements * sizeof(float));
  tree.start(data.data(), count, DataType::kFloat32, ReduceOp::kSum);
  run_to_completion(tree);
  size_t wrong = 0, first_wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (data[i] == static_cast<float>(P * (P + 1) / 2 + P * static_cast<int>(i % 7))) continue;
    if (wrong++ == 0) first_wrong = i;
  }
  EXPECT_EQ(wrong, 0u) << "overlapped_tree P=" << P << " rank " << rank << ": first wrong element " << first_wrong
                       << " = " << data[first_wrong];

  const int up = tags::kOverlappedTreeUp[0], down = tags::kOverlappedTreeDown[0];
  const patterns::TreeNode node = patterns::binary_tree(rank, P);
  if (node.is_root()) {
    size_t first_down = log.size(), last_up = 0;
    for (size_t e = 0; e < log.size(); ++e) {
      if (is(log[e], TransportEvent::kSendPosted, down) && first_down == log.size()) first_down = e;
      if (is(log[e], TransportEvent::kReceiveTested, up) && log[e].complete) last_up = e;
    }
    ASSERT_LT(first_down, log.size()) << "P=" << P << ": the root sent nothing down";
    EXPECT_EQ(log[first_down].offset, 0) << "P=" << P << ": the root's first send down is not chunk 0";
    EXPECT_LT(first_down, last_up) << "P=" << P << ": the root sent chunk 0 down at event " << first_down
                                   << ", after the last chunk came up at event " << last_up;
    return;
  }
  // Until chunk 0 has arrived from the parent: between two sends up, a test of a send up or
  // of a receive from the parent.
  int sends_up = 0, unpolled = 0, first_unpolled = -1;
  bool polled = true;
  for (const TransportEvent& e : log) {
    if (is(e, TransportEvent::kReceiveTested, down) && e.complete) break;  // chunk 0 is final here
    if (is(e, TransportEvent::kSendPosted, up)) {
      if (!polled && unpolled++ == 0) first_unpolled = sends_up;
      ++sends_up;
      polled = false;
    }
    polled = polled || is(e, TransportEvent::kSendTested, up) || is(e, TransportEvent::kReceiveTested, down);
  }
  EXPECT_EQ(unpolled, 0) << "overlapped_tree P=" << P << " rank " << rank << ": " << unpolled << " of the " << sends_up
                         << " chunks sent up before chunk 0 came down went without a poll of the parent "
                         << "link since the chunk before (first: chunk " << first_unpolled << ")";
}

TEST(ResponseCacheOverMpi, CachedIterationCostsOneBitVectorAllreduceWhateverTheRanks) {
  MpiCommunicator control(MPI_COMM_WORLD);
  constexpr uint32_t kCapacity = 1024;
  constexpr int kTensors = 40, kIterations = 6;
  constexpr uint64_t kBitVectorBytes = (1 + kCapacity / 64) * sizeof(uint64_t);
  const auto volumes = testing_util::negotiation_volume(control, kCapacity, kTensors, kIterations);
  ASSERT_EQ(volumes.size(), size_t{kIterations});
  for (int it = 1; it < kIterations; ++it) {
    const auto& v = volumes[it];
    const std::string where = "P=" + std::to_string(control.size()) + " rank " + std::to_string(control.rank()) +
                              " iteration " + std::to_string(it);
    EXPECT_EQ(v.cycles, 1) << where;
    EXPECT_EQ(v.gathers, 0) << where << ": a cached iteration gathered to the coordinator";
    EXPECT_EQ(v.broadcasts, 0) << where << ": a cached iteration broadcast from the coordinator";
    EXPECT_EQ(v.cache_hits, uint64_t{kTensors}) << where;
    EXPECT_EQ(v.bytes, 2 * kBitVectorBytes) << where << ": bytes through the control transport";
  }
}

TEST(OkTopkOverMpi, SixKWordsPerRankPerCallFromCall32) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  if (comm.size() == 1) GTEST_SKIP() << "one rank sends nothing";
  constexpr int64_t kN = 16384;
  sparse::SparseOptions options;
  options.density = 0.05;  // k = 819
  const auto records = testing_util::oktopk_call_volumes(comm, kN, testing_util::kOkTopkCalls, options);
  testing_util::expect_six_k_words_from_call_32(
      records, kN, options, "P=" + std::to_string(comm.size()) + " rank=" + std::to_string(comm.rank()));
}

TEST(GroupedFusionOverMpi, GroupFusesWithTheSinglesOfItsCycle) {
  using testing_util::Batch;
  using testing_util::Cycle;
  MpiCommunicator comm(MPI_COMM_WORLD);
  const std::string where = "P=" + std::to_string(comm.size()) + " rank " + std::to_string(comm.rank());
  const auto together = testing_util::grouped_fusion_cycles(comm, /*late=*/false);
  const std::vector<Cycle> one_batch = {Cycle{Batch{"a", "b", "c", "g.0", "g.1", "g.2"}}};
  for (size_t it = 0; it < together.size(); ++it)
    EXPECT_EQ(testing_util::busy_cycles(together[it]), one_batch)
        << where << " iteration " << it << ": not one fused batch of the group and the singles";
  const auto late = testing_util::grouped_fusion_cycles(comm, /*late=*/true);
  const std::vector<Cycle> expected = {Cycle{Batch{"a", "b"}}, Cycle{Batch{"c", "g.0", "g.1", "g.2"}}};
  for (size_t it = 0; it < late.size(); ++it)
    EXPECT_EQ(testing_util::busy_cycles(late[it]), expected)
        << where << " iteration " << it << ": batches per cycle, the group and c a cycle late on the last rank";
}

TEST(IdleOverMpi, NoRoundWhileEveryRankIsIdle) {
  const int P = concord::size(), rank = concord::rank();
  std::vector<int32_t> data(5);
  for (int call = 0; call < 2; ++call) {  // the second one is a cache hit
    data.assign(5, rank);
    const TensorView view{data.data(), DataType::kInt32, {5}};
    allreduce_async("mechanisms.idle", view, view).wait();
  }
  EXPECT_EQ(data[4], P * (P - 1) / 2) << "rank " << rank;
  // The answering round made progress, so one empty round follows at once; the handle may
  // complete before or after it. Waiting up to 2 s for it tells the two cases apart.
  const uint64_t seen = coordination_stats().cycles;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (coordination_stats().cycles == seen && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const uint64_t idle_from = coordination_stats().cycles;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // 6 stall periods
  const uint64_t after = coordination_stats().cycles;
  MPI_Barrier(MPI_COMM_WORLD);  // after counting: no rank's next tensor falls in another's interval
  EXPECT_LE(idle_from, seen + 1) << "rank " << rank << " of " << P << ": rounds after the answering one";
  EXPECT_EQ(after, idle_from) << "rank " << rank << " of " << P << ": rounds while every rank was idle";
  data.assign(5, 1);
  const TensorView view{data.data(), DataType::kInt32, {5}};
  allreduce_async("mechanisms.after_idle", view, view).wait();
  EXPECT_EQ(data[4], P) << "rank " << rank << ": after the idle interval";
  EXPECT_GT(coordination_stats().cycles, after) << "rank " << rank << ": the tensor woke the job";
}

}  // namespace
}  // namespace concord
