// Dependency engine (src/engine/engine.h, docs/architecture.md): semantics,
// not timing. Random DAGs must give exactly the sequential result for several pool sizes;
// versions count writes; reads overlap (observed through a latch) while writes are
// exclusive (error rules: test_engine_errors.cc);
// async operations complete from foreign threads; concurrent pushers; deferred deletion;
// shutdown with pending work; priorities with one worker.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <latch>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "concord/errors.h"

namespace concord::engine {
namespace {

/// Completes async operations from a thread the engine does not own, in FIFO order.
class ForeignCompleter {
 public:
  ForeignCompleter() : thread_([this] { loop(); }) {}
  ~ForeignCompleter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  /// Runs `work` on the foreign thread, then calls `done(error of work)`.
  void post(std::function<void()> work, OnComplete done) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(work), std::move(done)});
    cv_.notify_all();  // under the mutex: the item may finish and free us before we return
  }
  std::thread::id id() const { return thread_.get_id(); }

 private:
  struct Item {
    std::function<void()> work;
    OnComplete done;
  };
  void loop() {
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      std::exception_ptr error;
      try {
        item.work();
      } catch (...) {
        error = std::current_exception();
      }
      item.done(error);
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread thread_;
};

// ---- Random DAGs equal the sequential execution ----

struct PoolSizes {
  int cpu;
  int comm;
};

class EngineRandomDag : public ::testing::TestWithParam<PoolSizes> {};

// 10,000 operations over 100 vars; each writes one or two vars with a function of their old
// values, up to three other vars read, and its index. Random pool (CPU/comm), priority,
// sync/async (async ones finish on a foreign thread) and tiny sleeps. The same updates
// applied in push order give the expected state; every var's version is its write count.
TEST_P(EngineRandomDag, EqualsSequentialExecution) {
  constexpr int kVars = 100;
  constexpr int kOps = 10000;
  const PoolSizes sizes = GetParam();
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    std::mt19937 rng(seed * 7919 + sizes.cpu * 31 + sizes.comm);
    std::vector<uint64_t> state(kVars, 0), expected(kVars, 0);
    std::vector<uint64_t> writes(kVars, 0);
    for (int i = 0; i < kVars; ++i) state[i] = expected[i] = i + 1;
    ForeignCompleter completer;
    Engine engine(sizes.cpu, sizes.comm);
    std::vector<Var*> vars;
    for (int i = 0; i < kVars; ++i) vars.push_back(engine.new_var());

    for (int op = 0; op < kOps; ++op) {
      std::vector<int> ids(kVars);
      for (int i = 0; i < kVars; ++i) ids[i] = i;
      std::shuffle(ids.begin(), ids.end(), rng);
      const int num_writes = 1 + static_cast<int>(rng() % 2);
      const int num_reads = static_cast<int>(rng() % 4);
      const std::vector<int> w(ids.begin(), ids.begin() + num_writes);
      const std::vector<int> r(ids.begin() + num_writes, ids.begin() + num_writes + num_reads);
      // The update, applied to the reference now and to the engine's state later.
      auto update = [w, r, op](std::vector<uint64_t>& s) {
        uint64_t mix = static_cast<uint64_t>(op) * 0x9E3779B97F4A7C15ull;
        for (size_t j = 0; j < r.size(); ++j) mix += s[r[j]] * (2 * j + 3);
        for (size_t j = 0; j < w.size(); ++j) s[w[j]] = s[w[j]] * 1000003ull + mix + j;
      };
      update(expected);
      for (int v : w) ++writes[v];

      std::vector<Var*> reads, written;
      for (int v : r) reads.push_back(vars[v]);
      for (int v : w) written.push_back(vars[v]);
      PushOptions options;
      options.kind = rng() % 4 == 0 ? FnKind::kComm : FnKind::kCpu;
      options.priority = static_cast<int>(rng() % 5) - 2;
      options.name = "op" + std::to_string(op);
      const int sleep_us = rng() % 64 == 0 ? static_cast<int>(rng() % 20) : 0;
      auto body = [&state, update, sleep_us] {
        if (sleep_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
        update(state);
      };
      if (rng() % 10 == 0) {
        engine.push_async([&completer, body](OnComplete done) { completer.post(body, std::move(done)); }, reads,
                          written, options);
      } else {
        engine.push_sync(body, reads, written, options);
      }
    }
    engine.wait_all();
    for (int v = 0; v < kVars; ++v) {
      ASSERT_EQ(state[v], expected[v]) << "seed " << seed << ", cpu_threads " << sizes.cpu << ", comm_threads "
                                       << sizes.comm << ", var " << v;
      ASSERT_EQ(engine.version(vars[v]), writes[v]) << "version of var " << v << ", seed " << seed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Pools, EngineRandomDag,
                         ::testing::Values(PoolSizes{1, 1}, PoolSizes{2, 1}, PoolSizes{4, 2}, PoolSizes{8, 3}),
                         [](const auto& info) {
                           return "cpu" + std::to_string(info.param.cpu) + "_comm" + std::to_string(info.param.comm);
                         });

// ---- Versions, readers and writers ----

TEST(Engine, VersionCountsCompletedWrites) {
  Engine engine(2, 1);
  Var* a = engine.new_var();
  Var* b = engine.new_var();
  EXPECT_EQ(engine.version(a), 0u);
  for (int i = 0; i < 5; ++i) engine.push_sync([] {}, {}, {a});
  for (int i = 0; i < 3; ++i) engine.push_sync([] {}, {a}, {b});
  engine.wait_for_var(a);
  EXPECT_EQ(engine.version(a), 5u) << "reads must not count as writes";
  engine.wait_all();
  EXPECT_EQ(engine.version(b), 3u);
}

// Four readers between two writes all reach a 4-party latch: they can only pass it if they
// run at the same time (a serialising engine would hang here, and ctest's timeout fails it).
TEST(Engine, ReadsBetweenWritesRunConcurrently) {
  constexpr int kReaders = 4;
  Engine engine(kReaders, 1);
  Var* v = engine.new_var();
  std::atomic<int> phase{0};
  std::atomic<int> readers_saw_first_write{0};
  std::latch all_readers(kReaders);
  engine.push_sync([&] { phase = 1; }, {}, {v});
  for (int i = 0; i < kReaders; ++i)
    engine.push_sync(
        [&] {
          if (phase.load() == 1) ++readers_saw_first_write;
          all_readers.arrive_and_wait();
        },
        {v}, {});
  engine.push_sync([&] { phase = 2; }, {}, {v});
  engine.wait_all();
  EXPECT_EQ(readers_saw_first_write.load(), kReaders) << "a read ran before the write pushed before it";
  EXPECT_EQ(phase.load(), 2);
}

// Writers on one var never overlap each other or readers, and take effect in push order,
// with eight CPU workers available.
TEST(Engine, WritesAreExclusiveAndInPushOrder) {
  Engine engine(8, 2);
  Var* v = engine.new_var();
  std::atomic<int> writers{0}, readers{0}, violations{0};
  std::vector<int> order;  // written only by writes: guarded by the engine's exclusivity
  std::mt19937 rng(5);
  int pushed_writes = 0;
  for (int i = 0; i < 2000; ++i) {
    if (rng() % 3 == 0) {
      const int index = pushed_writes++;
      engine.push_sync(
          [&, index] {
            if (++writers != 1 || readers.load() != 0) ++violations;
            std::this_thread::yield();
            order.push_back(index);
            --writers;
          },
          {}, {v}, {rng() % 2 ? FnKind::kCpu : FnKind::kComm, static_cast<int>(rng() % 7), "write"});
    } else {
      engine.push_sync(
          [&] {
            ++readers;
            if (writers.load() != 0) ++violations;
            std::this_thread::yield();
            --readers;
          },
          {v}, {}, {FnKind::kCpu, static_cast<int>(rng() % 7), "read"});
    }
  }
  engine.wait_all();
  EXPECT_EQ(violations.load(), 0) << "a write overlapped another write or a read";
  ASSERT_EQ(static_cast<int>(order.size()), pushed_writes);
  for (int i = 0; i < pushed_writes; ++i) ASSERT_EQ(order[i], i) << "write " << i << " out of push order";
  EXPECT_EQ(engine.version(v), static_cast<uint64_t>(pushed_writes));
}

// wait_for_var() waits for the writes pushed so far, not for reads still running.
TEST(Engine, WaitForVarIgnoresPendingReads) {
  Engine engine(2, 1);
  Var* v = engine.new_var();
  std::latch release_reader(1);
  std::atomic<bool> wrote{false};
  engine.push_sync([&] { wrote = true; }, {}, {v});
  engine.push_sync([&] { release_reader.wait(); }, {v}, {});
  engine.wait_for_var(v);  // would hang if it waited for the blocked read
  EXPECT_TRUE(wrote.load());
  release_reader.count_down();
  engine.wait_all();
}

// ---- Errors ----

TEST(Engine, AsyncOperationsCompleteFromAForeignThread) {
  Engine engine(2, 1);
  ForeignCompleter completer;
  Var* v = engine.new_var();
  Var* w = engine.new_var();
  std::vector<std::thread::id> ran_on;
  std::mutex ran_on_mutex;
  int value = 0;
  for (int i = 0; i < 20; ++i)
    engine.push_async(
        [&, i](OnComplete done) {
          completer.post(
              [&, i] {
                value = value * 3 + i;
                std::lock_guard<std::mutex> lock(ran_on_mutex);
                ran_on.push_back(std::this_thread::get_id());
              },
              std::move(done));
        },
        {}, {v}, {i % 2 ? FnKind::kComm : FnKind::kCpu, 0, "async"});
  int seen = -1;
  engine.push_sync([&] { seen = value; }, {v}, {w});
  engine.wait_for_var(w);
  int expected = 0;
  for (int i = 0; i < 20; ++i) expected = expected * 3 + i;
  EXPECT_EQ(seen, expected) << "the reader must see all 20 async writes, in push order";
  EXPECT_EQ(engine.version(v), 20u);
  ASSERT_EQ(ran_on.size(), 20u);
  for (auto id : ran_on) EXPECT_EQ(id, completer.id());

  // An error passed to on_complete is stored like a thrown one; a throw before completing too.
  engine.push_async([&](OnComplete done) { completer.post([] { throw CommError("link down"); }, std::move(done)); }, {},
                    {v});
  EXPECT_THROW(engine.wait_for_var(v), CommError);
  engine.push_async([](OnComplete) { throw MismatchError("refused"); }, {}, {v});
  EXPECT_THROW(engine.wait_for_var(v), MismatchError);
  // Completing twice is refused. The operation is complete after the first call, so the
  // test waits for the function itself (the latch), not for the engine.
  std::atomic<bool> second_refused{false};
  std::latch fn_returned(1);
  engine.push_async(
      [&](OnComplete done) {
        done(nullptr);
        try {
          done(nullptr);
        } catch (const StateError&) {
          second_refused = true;
        }
        fn_returned.count_down();
      },
      {}, {v});
  fn_returned.wait();
  engine.wait_all();
  EXPECT_TRUE(second_refused.load());
}

// Communication operations run on the communication pool, CPU operations on the workers.
TEST(Engine, KindsRunOnTheirOwnPools) {
  Engine engine(3, 2);
  std::mutex mutex;
  std::set<std::thread::id> cpu_ids, comm_ids;
  for (int i = 0; i < 200; ++i) {
    const bool comm = i % 2 == 0;
    engine.push_sync(
        [&, comm] {
          std::lock_guard<std::mutex> lock(mutex);
          (comm ? comm_ids : cpu_ids).insert(std::this_thread::get_id());
        },
        {}, {}, {comm ? FnKind::kComm : FnKind::kCpu, 0, "kind"});
  }
  engine.wait_all();
  EXPECT_LE(cpu_ids.size(), 3u);
  EXPECT_LE(comm_ids.size(), 2u);
  for (auto id : comm_ids) EXPECT_EQ(cpu_ids.count(id), 0u) << "a comm op ran on a CPU worker";
  EXPECT_EQ(comm_ids.count(std::this_thread::get_id()), 0u);
}

// ---- Concurrent pushers ----

// Eight threads push 1,000 operations each over 16 shared vars (one write, up to two reads).
// Each write appends (thread, sequence) to its var's log: per thread, the log must be in
// push order, and complete.
TEST(Engine, ConcurrentPushersNeitherDeadlockNorReorder) {
  constexpr int kThreads = 8, kOpsPerThread = 1000, kVars = 16;
  Engine engine(4, 2);
  std::vector<Var*> vars;
  for (int i = 0; i < kVars; ++i) vars.push_back(engine.new_var());
  std::vector<std::vector<std::pair<int, int>>> logs(kVars);
  std::vector<std::atomic<int>> writes_per_var(kVars);
  std::vector<std::thread> pushers;
  std::latch start(kThreads);
  for (int t = 0; t < kThreads; ++t)
    pushers.emplace_back([&, t] {
      std::mt19937 rng(t + 100);
      start.arrive_and_wait();
      for (int i = 0; i < kOpsPerThread; ++i) {
        std::vector<int> ids(kVars);
        for (int k = 0; k < kVars; ++k) ids[k] = k;
        std::shuffle(ids.begin(), ids.end(), rng);
        const int w = ids[0];
        std::vector<Var*> reads;
        for (int k = 1; k <= static_cast<int>(rng() % 3); ++k) reads.push_back(vars[ids[k]]);
        ++writes_per_var[w];
        engine.push_sync([&logs, w, t, i] { logs[w].emplace_back(t, i); }, reads, {vars[w]},
                         {rng() % 3 == 0 ? FnKind::kComm : FnKind::kCpu, static_cast<int>(rng() % 3), ""});
      }
    });
  for (auto& p : pushers) p.join();
  engine.wait_all();
  for (int v = 0; v < kVars; ++v) {
    ASSERT_EQ(static_cast<int>(logs[v].size()), writes_per_var[v].load()) << "var " << v;
    EXPECT_EQ(engine.version(vars[v]), static_cast<uint64_t>(writes_per_var[v].load())) << "var " << v;
    std::vector<int> last(kThreads, -1);
    for (const auto& [t, i] : logs[v]) {
      ASSERT_GT(i, last[t]) << "var " << v << ": thread " << t << "'s writes out of push order";
      last[t] = i;
    }
  }
}

// ---- Deletion and shutdown ----

TEST(Engine, DeleteVarIsDeferredUntilQueuedWorkIsDone) {
  Engine engine(2, 1);
  Var* v = engine.new_var();
  Var* keep = engine.new_var();
  std::latch release(1);
  std::atomic<int> ran{0};
  engine.push_sync(
      [&] {
        release.wait();
        ++ran;
      },
      {}, {v});
  engine.push_sync([&] { ++ran; }, {v}, {keep});
  engine.delete_var(v);  // returns at once: the two operations still need v
  EXPECT_THROW(engine.push_sync([] {}, {v}, {}), InvalidArgument) << "push on a var being deleted";
  EXPECT_THROW(engine.wait_for_var(v), InvalidArgument);
  EXPECT_THROW(engine.delete_var(v), InvalidArgument);
  EXPECT_EQ(ran.load(), 0);
  release.count_down();
  engine.wait_all();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(engine.version(keep), 1u);

  // An error left on a deleted var still reaches wait_all().
  Var* doomed = engine.new_var();
  engine.push_sync([] { throw CommError("lost with its var"); }, {}, {doomed});
  engine.delete_var(doomed);
  EXPECT_THROW(engine.wait_all(), CommError);
}

TEST(Engine, ShutdownFinishesPendingWorkThenRefusesPushes) {
  Engine engine(2, 1);
  ForeignCompleter completer;
  Var* v = engine.new_var();
  std::atomic<int> ran{0};
  for (int i = 0; i < 300; ++i) {
    if (i % 3 == 0)
      engine.push_async([&](OnComplete done) { completer.post([&] { ++ran; }, std::move(done)); }, {}, {v});
    else engine.push_sync([&] { ++ran; }, {v}, {}, {i % 2 ? FnKind::kComm : FnKind::kCpu, 0, ""});
  }
  engine.shutdown();
  EXPECT_EQ(ran.load(), 300);
  EXPECT_EQ(engine.version(v), 100u);
  EXPECT_THROW(engine.push_sync([] {}, {}, {v}), StateError);
  EXPECT_THROW(engine.new_var(), StateError);
  EXPECT_NO_THROW(engine.shutdown());
  EXPECT_NO_THROW(engine.wait_all());
}

TEST(Engine, DestructorRunsPendingWork) {
  std::atomic<int> ran{0};
  {
    Engine engine(1, 1);
    Var* v = engine.new_var();
    for (int i = 0; i < 50; ++i) engine.push_sync([&] { ++ran; }, {}, {v});
  }
  EXPECT_EQ(ran.load(), 50);
}

// ---- Priorities ----

// With one worker busy, ready operations queue up; once it is free they run highest priority
// first, equal priorities in push order.
TEST(Engine, HigherPriorityReadyOperationsRunFirst) {
  Engine engine(1, 1);
  std::latch blocker_started(1), release(1);
  engine.push_sync(
      [&] {
        blocker_started.count_down();
        release.wait();
      },
      {}, {});
  blocker_started.wait();
  std::vector<int> order;  // one worker: no two operations run at once
  const std::vector<int> priorities = {3, -1, 7, 0, 7, 2, -5, 3, 10, 0};
  for (size_t i = 0; i < priorities.size(); ++i)
    engine.push_sync([&order, i] { order.push_back(static_cast<int>(i)); }, {}, {},
                     {FnKind::kCpu, priorities[i], "prioritised"});
  release.count_down();
  engine.wait_all();
  std::vector<int> expected(priorities.size());
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int>(i);
  std::stable_sort(expected.begin(), expected.end(), [&](int a, int b) { return priorities[a] > priorities[b]; });
  EXPECT_EQ(order, expected);
}

}  // namespace
}  // namespace concord::engine
