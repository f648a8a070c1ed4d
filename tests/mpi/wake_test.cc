// The background thread's wake-up logic under mpirun (no fixed cycle time;
// src/runtime/runtime.h, src/control/wake_channel.h): an idle runtime blocks, and every rank
// must still join a negotiation round another rank starts.
//  - a tensor submitted on the last rank long after the others (uncached, then cached);
//  - every rank idle for seconds, then a batch of allreduces;
//  - shutdown() while idle returns (and init() afterwards works);
//  - one handle waited for by several threads at once, and several threads submitting and
//    waiting concurrently.
// Results are checked exactly; a hang fails through wait_for()'s limit or the ctest timeout.
#include <atomic>

#include "mpi_test_util.h"

namespace concord::mpitest {
namespace {

// Allreduce (sum) of int32 [rank + t, ...] under `name`; the result must be exact.
struct Submitted {
  std::vector<int32_t> data;
  Handle handle;
};

Submitted submit(const std::string& name, int t, int64_t count) {
  Submitted s;
  s.data.assign(static_cast<size_t>(count), concord::rank() + t);
  const TensorView view{s.data.data(), DataType::kInt32, {count}};
  s.handle = allreduce_async(name, view, view);
  return s;
}

void check(const Submitted& s, const std::string& name, int t, const std::string& scenario) {
  const int size = concord::size();
  const std::string what =
      describe("allreduce(sum, in place) " + scenario, name, DataType::kInt32, static_cast<int64_t>(s.data.size()));
  if (!wait_ok(s.handle, what)) return;
  EXPECT_EQ(s.data, std::vector<int32_t>(s.data.size(), size * (size - 1) / 2 + size * t)) << what;
}

void batch_works(const std::string& prefix, int count, const std::string& scenario) {
  std::vector<Submitted> all;
  for (int t = 0; t < count; ++t) all.push_back(submit(prefix + std::to_string(t), t, 1 + 37 * t));
  for (int t = 0; t < count; ++t) check(all[t], prefix + std::to_string(t), t, scenario);
}

TEST(Wake, TensorSubmittedOnTheLastRankLongAfterTheOthers) {
  const int last = concord::size() - 1;
  for (int round = 0; round < 2; ++round) {  // round 0 negotiates it, round 1 is a cache hit
    const std::string scenario = round == 0 ? "submitted 1.5 s late on the last rank (uncached)"
                                            : "submitted 1.5 s late on the last rank (cached)";
    if (concord::rank() == last) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const Submitted s = submit("wake.late", 3, 5);
    check(s, "wake.late", 3, scenario);
  }
}

TEST(Wake, EveryRankIdleForSecondsThenReduces) {
  batch_works("wake.before_idle.", 3, "before an idle period");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  batch_works("wake.after_idle.", 5, "after every rank was idle for 3 s");
  batch_works("wake.before_idle.", 3, "after every rank was idle for 3 s (cached names)");
}

TEST(Wake, ShutdownWhileIdleReturnsAndInitRestarts) {
  batch_works("wake.pre_shutdown.", 2, "before an idle shutdown");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  shutdown();  // every rank idle: each wakes its own thread, the others through the wake channel
  EXPECT_FALSE(is_initialized()) << "[rank " << world_rank() << "] after shutdown()";
  init();
  batch_works("wake.post_shutdown.", 2, "after an idle shutdown and init()");
}

TEST(Wake, OneHandleWaitedForBySeveralThreads) {
  constexpr int kThreads = 4;
  // The last rank submits late, so the waiters really block.
  if (concord::rank() == concord::size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const Submitted s = submit("wake.shared_handle", 1, 64);
  std::atomic<int> completed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      s.handle.wait();
      completed.fetch_add(1);
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(completed.load(), kThreads) << "[rank " << world_rank() << "] waiters woken";
  check(s, "wake.shared_handle", 1, "waited for by 4 threads at once");
}

TEST(Wake, SeveralThreadsSubmitAndWaitConcurrently) {
  constexpr int kThreads = 4, kCalls = 20;
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kThreads);
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      for (int c = 0; c < kCalls; ++c) {
        const std::string name = "wake.thread" + std::to_string(i) + "." + std::to_string(c % 5);
        const int t = i * 100 + c;
        Submitted s = submit(name, t, 1 + c);
        try {
          s.handle.wait();
        } catch (const std::exception& e) {
          failures[i] = name + ": " + e.what();
          return;
        }
        const int size = concord::size();
        if (s.data != std::vector<int32_t>(s.data.size(), size * (size - 1) / 2 + size * t)) {
          failures[i] = name + ": wrong result " + std::to_string(s.data[0]);
          return;
        }
      }
    });
  for (auto& thread : threads) thread.join();
  for (int i = 0; i < kThreads; ++i)
    EXPECT_EQ(failures[i], "") << "[rank " << world_rank() << "] thread " << i << " of " << kThreads
                               << " submitting allreduce(sum) of int32, " << kCalls << " calls";
}

}  // namespace
}  // namespace concord::mpitest
