// The whole runtime cycle (enqueue -> negotiate -> fuse -> execute -> complete handles) on
// the in-process transport at 1..16 ranks: each rank is a thread owning a Runtime built
// from injected communicators (split_communicator_set), as concord::init() builds one from
// MPI's. Tensors are submitted in a different order on every rank; results are exact.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/autotune.h"
#include "concord/errors.h"
#include "rank_runner.h"
#include "runtime/runtime.h"
#include "test_support/runtime_requests.h"
#include "transport/communicator_set.h"

namespace concord {
namespace {

using testing_util::run_ranks;

using testing_util::host_view;
using testing_util::request;
using testing_util::test_config;

class RuntimeInProcess : public ::testing::TestWithParam<int> {};

TEST_P(RuntimeInProcess, NegotiatesFusesAndExecutesInAnyOrder) {
  const int P = GetParam();
  const std::vector<size_t> sizes = {0, 1, 7, 1000, 4099, 33, 65536};
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Runtime runtime(split_communicator_set(world), test_config());
    const int rank = runtime.rank();
    ASSERT_EQ(runtime.size(), P);
    ASSERT_EQ(runtime.local_rank(), rank);
    ASSERT_EQ(runtime.local_size(), P);
    for (int round = 0; round < 3; ++round) {  // rounds 2 and 3 hit the response cache
      const size_t T = sizes.size();
      std::vector<std::vector<float>> in(T), out(T);
      std::vector<Handle> handles(T);
      std::vector<size_t> order(T);
      std::iota(order.begin(), order.end(), size_t{0});
      std::rotate(order.begin(), order.begin() + (rank + round) % T, order.end());  // a different order per rank
      for (size_t t : order) {
        in[t].resize(sizes[t]);
        out[t].assign(sizes[t], -1.0f);
        for (size_t i = 0; i < sizes[t]; ++i) in[t][i] = static_cast<float>(rank + 1 + i % 5);
        const ReduceOp op = t % 2 == 0 ? ReduceOp::kSum : ReduceOp::kMax;
        handles[t] = runtime.enqueue(request("t" + std::to_string(t), CollectiveType::kAllreduce, op), host_view(in[t]),
                                     host_view(out[t]));
      }
      for (size_t t = 0; t < T; ++t) {
        handles[t].wait();
        for (size_t i = 0; i < sizes[t]; ++i) {
          const float expected =
              t % 2 == 0 ? static_cast<float>(P * (P + 1) / 2 + P * (i % 5)) : static_cast<float>(P + i % 5);
          ASSERT_EQ(out[t][i], expected) << "rank " << rank << " round " << round << " tensor t" << t << " ("
                                         << sizes[t] << " floats) element " << i;
        }
      }
    }
    // Broadcast from the last rank, allgather of rank-dependent dim 0.
    std::vector<float> message(100, static_cast<float>(rank));
    Handle broadcast = runtime.enqueue(request("b", CollectiveType::kBroadcast, ReduceOp::kSum, P - 1),
                                       host_view(message), host_view(message));
    std::vector<float> rows(static_cast<size_t>(rank + 1) * 2, static_cast<float>(rank));
    TensorView rows_view{rows.data(), DataType::kFloat32, {rank + 1, 2}};
    Handle gather = runtime.enqueue(request("g", CollectiveType::kAllgather), rows_view, rows_view);
    broadcast.wait();
    gather.wait();
    for (float v : message) ASSERT_EQ(v, static_cast<float>(P - 1)) << "rank " << rank << " broadcast";
    ASSERT_EQ(gather.output_shape(), (std::vector<int64_t>{P * (P + 1) / 2, 2})) << "rank " << rank;
    const auto* gathered = reinterpret_cast<const float*>(gather.output_bytes().data());
    size_t at = 0;
    for (int r = 0; r < P; ++r)
      for (int i = 0; i < 2 * (r + 1); ++i, ++at)
        ASSERT_EQ(gathered[at], static_cast<float>(r)) << "rank " << rank << " allgather block of rank " << r;
    runtime.shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// A burst whose tensors come with pauses (a backward pass) goes into one negotiation round:
// the background thread lingers while more keep coming, within a tenth of the cycle time
// (2 s here) of each other, and a wait() on a handle ends the burst. The rounds counted are
// the one that carries the burst and the empty one after it, plus at most one more pair
// where a descheduled rank had not started its burst when the others' round began; a round
// per tensor (each followed by an empty one) is 6 or more (6-20 measured without the linger).
TEST_P(RuntimeInProcess, BurstWithPausesGoesIntoOneRound) {
  const int P = GetParam();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Config config = test_config();
    config.cycle_time_ms = 20000;
    Runtime runtime(split_communicator_set(world), config);
    const int rank = runtime.rank();
    std::vector<std::vector<float>> data(3, std::vector<float>(33, static_cast<float>(rank)));
    std::vector<Handle> handles;
    std::vector<float> align(1, 1.0f);  // every rank starts its burst at about the same time
    runtime.enqueue(request("align", CollectiveType::kAllreduce), host_view(align), host_view(align)).wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the empty round after it runs first
    const uint64_t cycles_before = runtime.coordination_stats().cycles;
    for (int i = 0; i < 3; ++i) {
      const int t = (i + rank) % 3;
      handles.push_back(runtime.enqueue(request("burst" + std::to_string(t), CollectiveType::kAllreduce),
                                        host_view(data[t]), host_view(data[t])));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (auto& handle : handles) handle.wait();
    for (int t = 0; t < 3; ++t)
      ASSERT_EQ(data[t][32], static_cast<float>(P * (P - 1) / 2)) << "rank " << rank << " tensor burst" << t;
    EXPECT_LE(runtime.coordination_stats().cycles - cycles_before, 4u)
        << "rank " << rank << " of " << P << ": the burst was split over several rounds";
    runtime.shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// A synchronous call does not wait out the linger: the caller's wait() on its handle starts
// the round at once. With a 20 s cycle time (a 2 s quiet gap), 5 calls take far less than
// one gap.
TEST_P(RuntimeInProcess, WaitingOnAHandleStartsTheRoundAtOnce) {
  const int P = GetParam();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Config config = test_config();
    config.cycle_time_ms = 20000;
    Runtime runtime(split_communicator_set(world), config);
    const auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < 5; ++call) {
      std::vector<float> data(5, 1.0f);
      runtime.enqueue(request("sync", CollectiveType::kAllreduce), host_view(data), host_view(data)).wait();
      ASSERT_EQ(data[4], static_cast<float>(P)) << "rank " << runtime.rank() << " call " << call;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 2.0) << "rank " << runtime.rank() << " of " << P << ": 5 synchronous calls took " << seconds
                            << " s, as if each waited out the 2 s quiet gap";
    runtime.shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// An idle job runs no negotiation round (src/runtime/runtime.cc, await_round; Horovod's
// background loop instead runs a cycle every HOROVOD_CYCLE_TIME): counted, not timed. Over
// a quiet interval the rounds counter (CoordinationStats::cycles) and this rank's traffic
// through its communicators stay where they were, first before any tensor, then after the
// round that answered one and the single empty round that follows it, although a stall
// check would be due every 50 ms if an idle job ran them (stall warning time 0.2 s). The
// next tensor wakes the job and is reduced.
TEST_P(RuntimeInProcess, IdleBackgroundLoopRunsNoRound) {
  const int P = GetParam();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Config config = test_config();
    config.stall_warning_seconds = 0.2;
    config.stall_shutdown_seconds = 0;  // never
    Runtime runtime(split_communicator_set(world), config);
    const int rank = runtime.rank();
    // Rounds and messages of this rank over a quiet interval of 6 stall periods; the barrier
    // (after the counting) keeps every rank's next tensor out of the others' intervals.
    // The background thread updates the counters atomically while this thread reads them
    // (a wake receive it keeps posted counts as received), so read the one asserted field
    // atomically too.
    const auto messages_sent = [&] {
      return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(world.counters().messages_sent)).load();
    };
    const auto expect_quiet = [&](uint64_t rounds, const std::string& when) {
      const uint64_t sent_before = messages_sent();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      const uint64_t rounds_after = runtime.coordination_stats().cycles;
      const uint64_t sent_after = messages_sent();
      world.barrier();
      EXPECT_EQ(rounds_after, rounds) << "rank " << rank << " of " << P << ", " << when << ": rounds";
      EXPECT_EQ(sent_after, sent_before) << "rank " << rank << " of " << P << ", " << when << ": messages sent";
    };
    expect_quiet(0, "idle before the first tensor");
    for (int call = 0; call < 2; ++call) {  // the second one is a cache hit
      std::vector<float> data(9, 1.0f);
      runtime.enqueue(request("before_quiet", CollectiveType::kAllreduce), host_view(data), host_view(data)).wait();
      EXPECT_EQ(data[8], static_cast<float>(P)) << "rank " << rank << " call " << call;
    }
    // The answering round made progress, so one empty round follows at once; the handle may
    // complete before or after it. Waiting up to 2 s for it tells the two cases apart.
    const uint64_t seen = runtime.coordination_stats().cycles;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (runtime.coordination_stats().cycles == seen && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const uint64_t idle_from = runtime.coordination_stats().cycles;
    EXPECT_LE(idle_from, seen + 1) << "rank " << rank << " of " << P << ": rounds after the answering one";
    expect_quiet(idle_from, "idle after a reduced tensor");
    std::vector<float> data(9, 2.0f);
    runtime.enqueue(request("after_quiet", CollectiveType::kAllreduce), host_view(data), host_view(data)).wait();
    EXPECT_EQ(data[8], static_cast<float>(2 * P)) << "rank " << rank << ": after the quiet interval";
    EXPECT_GT(runtime.coordination_stats().cycles, idle_from) << "rank " << rank << ": the tensor woke the job";
    runtime.shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

TEST_P(RuntimeInProcess, MismatchFailsOnEveryRankAndLaterCallsWork) {
  const int P = GetParam();
  if (P == 1) GTEST_SKIP() << "a mismatch needs two ranks";
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Runtime runtime(split_communicator_set(world), test_config());
    const int rank = runtime.rank();
    std::vector<float> bad(rank == P - 1 ? 5 : 4, 1.0f);  // the last rank disagrees on the shape
    Handle handle = runtime.enqueue(request("bad", CollectiveType::kAllreduce), host_view(bad), host_view(bad));
    try {
      handle.wait();
      FAIL() << "rank " << rank << ": no MismatchError";
    } catch (const MismatchError& error) {
      EXPECT_NE(std::string(error.what()).find("bad"), std::string::npos) << "rank " << rank << ": " << error.what();
    }
    std::vector<float> good(3, 1.0f);
    runtime.enqueue(request("good", CollectiveType::kAllreduce), host_view(good), host_view(good)).wait();
    for (float v : good) ASSERT_EQ(v, static_cast<float>(P)) << "rank " << rank;
    runtime.shutdown();
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

// Measured selection in the runtime: every rank runs rank 0's pick (results stay exact, in
// place and out of place: one choice serves both), and rank 0 saves the table where
// CONCORD_COST_MODEL points.
TEST_P(RuntimeInProcess, AutotunedSelectionIsExactAndPersisted) {
  const int P = GetParam();
  if (P == 1) GTEST_SKIP() << "nothing to measure on one rank";
  if (P > 5) GTEST_SKIP() << "timing every algorithm with threads as ranks: kept to small P for the suite's time";
  namespace fs = std::filesystem;
  const fs::path path = fs::temp_directory_path() / ("concord_rt_autotune_" + std::to_string(::getpid()) + ".json");
  CostParams().save(path.string());
  ::setenv("CONCORD_COST_MODEL", path.c_str(), 1);
  const std::vector<size_t> sizes = {3, 1000, 70000};
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Config config = test_config();
    config.autotune = true;
    Runtime runtime(split_communicator_set(world), config);
    const int rank = runtime.rank();
    for (int round = 0; round < 2; ++round)
      for (size_t n : sizes) {
        std::vector<float> data(n);
        for (size_t i = 0; i < n; ++i) data[i] = static_cast<float>(rank + i % 3);
        std::vector<float> input = data, output(n, -1.0f);
        runtime.enqueue(request("a" + std::to_string(n), CollectiveType::kAllreduce), host_view(data), host_view(data))
            .wait();
        runtime
            .enqueue(request("oop" + std::to_string(n), CollectiveType::kAllreduce), host_view(input),
                     host_view(output))
            .wait();
        for (size_t i = 0; i < n; ++i) {
          const float expected = static_cast<float>(P * (P - 1) / 2 + P * (i % 3));
          ASSERT_EQ(data[i], expected) << "rank " << rank << " n " << n << " element " << i << " (in place)";
          ASSERT_EQ(output[i], expected) << "rank " << rank << " n " << n << " element " << i << " (out of place)";
        }
      }
    runtime.shutdown();
  });
  ::unsetenv("CONCORD_COST_MODEL");
  EXPECT_EQ(failure, "") << "P=" << P;
  AutotuneTable table(autotune_scope(P, 1, Config().ring_chunk_bytes, Config().tree_chunks));
  table.load(path.string());
  for (size_t n : sizes)
    EXPECT_NE(table.find(selection_key("allreduce", DataType::kFloat32, n * sizeof(float))), "")
        << "P=" << P << ": no measured choice saved for " << n << " floats";
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RuntimeInProcess, ::testing::Values(1, 2, 3, 4, 5, 7, 8, 11, 16),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

}  // namespace
}  // namespace concord
