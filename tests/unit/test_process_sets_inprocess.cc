// Process sets (runtime/process_set.h) through the whole runtime on the in-process
// transport at P = 1..7 ranks, odd P included: sets given to the Runtime at construction
// (init(process_sets=...)) and added/removed at run time (CONCORD_DYNAMIC_PROCESS_SETS=1);
// collectives among the members with global roots, set collectives concurrent with world
// collectives from several threads, mismatch messages naming global ranks and the set, and
// the misuse errors (a non-member, an unknown or removed id). Each rank is a thread owning a
// Runtime built from split_communicator_set(), as in test_runtime_inprocess.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "concord/errors.h"
#include "rank_runner.h"
#include "runtime/runtime.h"
#include "test_support/process_set_lists.h"
#include "test_support/runtime_requests.h"
#include "transport/communicator_set.h"

namespace concord {
namespace {

using testing_util::run_ranks;

using testing_util::host_view;
using testing_util::request;
using testing_util::test_config;

// Waits for `handle`, failing (instead of hanging the suite) after 30 s.
void wait(const Handle& handle, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!handle.poll()) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error(what + ": not done after 30 s (hang)");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  handle.wait();
}

using testlists::process_subsets;

bool contains(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

// Allreduce (sum of the global ranks), allgather (rank r gives r + 1 rows of r) and
// broadcast from the last member's GLOBAL rank on set `id` of `ranks`; checks the results.
void exercise(Runtime& runtime, int id, const std::vector<int>& ranks, const std::string& tag) {
  const int me = runtime.rank();
  const std::string where = "rank " + std::to_string(me) + " set " + std::to_string(id) + " ";
  std::vector<float> sum(5, static_cast<float>(me));
  Handle reduce =
      runtime.enqueue(request(tag + ".sum", CollectiveType::kAllreduce), host_view(sum), host_view(sum), id);
  std::vector<float> rows(static_cast<size_t>(me + 1), static_cast<float>(me));
  TensorView rows_view{rows.data(), DataType::kFloat32, {me + 1}};
  Handle gather = runtime.enqueue(request(tag + ".gather", CollectiveType::kAllgather), rows_view, rows_view, id);
  std::vector<float> message(3, static_cast<float>(me));
  Handle broadcast = runtime.enqueue(request(tag + ".bcast", CollectiveType::kBroadcast, ReduceOp::kSum, ranks.back()),
                                     host_view(message), host_view(message), id);
  wait(reduce, where + "allreduce");
  wait(gather, where + "allgather");
  wait(broadcast, where + "broadcast");
  wait(runtime.enqueue_barrier(id), where + "barrier");
  const float total = static_cast<float>(std::accumulate(ranks.begin(), ranks.end(), 0));
  for (float v : sum) ASSERT_EQ(v, total) << where << "allreduce";
  for (float v : message) ASSERT_EQ(v, static_cast<float>(ranks.back())) << where << "broadcast from the last member";
  const auto* gathered = reinterpret_cast<const float*>(gather.output_bytes().data());
  size_t at = 0;
  for (int q : ranks)
    for (int i = 0; i <= q; ++i, ++at)
      ASSERT_EQ(gathered[at], static_cast<float>(q)) << where << "allgather row " << at;
  ASSERT_EQ(gather.output_shape().at(0), static_cast<int64_t>(at)) << where << "allgather rows";
}

// A world barrier, then shutdown(): a rank done with its sets must not stop the others'.
void finish(Runtime& runtime) {
  wait(runtime.enqueue_barrier(0), "final barrier");
  runtime.shutdown();
}

template <typename Error>
std::string expect_error(const std::function<void()>& call, const std::string& what) {
  try {
    call();
  } catch (const Error& error) {
    return error.what();
  }
  throw std::runtime_error(what + ": no error raised");
}

class ProcessSetsInProcess : public ::testing::TestWithParam<int> {};

TEST_P(ProcessSetsInProcess, InitialSetsRunCollectivesAmongTheirMembersOnly) {
  const int P = GetParam();
  const auto sets = process_subsets(P);
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Runtime runtime(split_communicator_set(world), test_config(), sets);
    const int me = runtime.rank();
    ASSERT_EQ(runtime.process_sets().all().size(), sets.size() + 1) << "rank " << me;
    for (size_t i = 0; i < sets.size(); ++i) {
      const int id = static_cast<int>(i) + 1;
      ASSERT_EQ(runtime.process_sets().get(id)->ranks, sets[i]) << "rank " << me << " set " << id;
      if (contains(sets[i], me)) {
        exercise(runtime, id, sets[i], "init" + std::to_string(id));
        continue;
      }
      std::vector<float> data(1, 1.0f);
      const std::string error = expect_error<InvalidArgument>(
          [&] {
            runtime.enqueue(request("outsider", CollectiveType::kAllreduce), host_view(data), host_view(data), id);
          },
          "rank " + std::to_string(me) + " outside set " + std::to_string(id));
      EXPECT_NE(error.find("is not in process set " + std::to_string(id)), std::string::npos) << error;
    }
    // The same name in flight in every set of this rank at once: each set has its own queue.
    std::vector<std::vector<float>> data;
    std::vector<std::pair<int, Handle>> handles;
    data.reserve(sets.size());
    for (size_t i = 0; i < sets.size(); ++i) {
      if (!contains(sets[i], me)) continue;
      data.emplace_back(2, 1.0f);
      handles.emplace_back(i, runtime.enqueue(request("same.name", CollectiveType::kAllreduce), host_view(data.back()),
                                              host_view(data.back()), static_cast<int>(i) + 1));
    }
    for (size_t h = 0; h < handles.size(); ++h) {
      wait(handles[h].second, "same.name");
      for (float v : data[h]) ASSERT_EQ(v, static_cast<float>(sets[handles[h].first].size())) << "rank " << me;
    }
    finish(runtime);
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

TEST_P(ProcessSetsInProcess, SetCollectivesRunConcurrentlyWithWorldCollectivesFromSeveralThreads) {
  const int P = GetParam();
  const auto sets = process_subsets(P);
  constexpr int kIterations = 15;
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Runtime runtime(split_communicator_set(world), test_config(), sets);
    const int me = runtime.rank();
    std::vector<std::string> errors(sets.size() + 1);
    auto loop = [&](int id, const std::vector<int>& ranks, std::string& error) {
      try {
        const float total = static_cast<float>(std::accumulate(ranks.begin(), ranks.end(), 0));
        for (int i = 0; i < kIterations; ++i) {
          std::vector<float> data(7 + i, static_cast<float>(me));
          wait(runtime.enqueue(request("c" + std::to_string(i), CollectiveType::kAllreduce), host_view(data),
                               host_view(data), id),
               "set " + std::to_string(id) + " iteration " + std::to_string(i));
          for (float v : data)
            if (v != total)
              throw std::runtime_error("set " + std::to_string(id) + " iteration " + std::to_string(i) + ": got " +
                                       std::to_string(v) + ", want " + std::to_string(total));
        }
      } catch (const std::exception& e) {
        error = e.what();
      }
    };
    std::vector<int> everyone(P);
    std::iota(everyone.begin(), everyone.end(), 0);
    std::vector<std::thread> threads;
    threads.emplace_back(loop, 0, everyone, std::ref(errors[0]));
    for (size_t i = 0; i < sets.size(); ++i)
      if (contains(sets[i], me)) threads.emplace_back(loop, static_cast<int>(i) + 1, sets[i], std::ref(errors[i + 1]));
    for (auto& thread : threads) thread.join();
    for (size_t i = 0; i < errors.size(); ++i) ASSERT_EQ(errors[i], "") << "rank " << me << " set " << i;
    finish(runtime);
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

TEST_P(ProcessSetsInProcess, MismatchInASetNamesGlobalRanksAndTheSet) {
  const int P = GetParam();
  if (P < 3) GTEST_SKIP() << "needs a set of two ranks that is not the world";
  std::vector<int> evens;
  for (int r = 0; r < P; r += 2) evens.push_back(r);
  const std::string set_name = "in process set 1 (ranks [" + std::to_string(evens[0]) + ", 2";
  const int last = evens.back();
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Runtime runtime(split_communicator_set(world), test_config(), {evens});
    const int me = runtime.rank();
    if (contains(evens, me)) {
      std::vector<float> bad(me == last ? 5 : 4, 1.0f);  // the last member disagrees on the shape
      Handle shape =
          runtime.enqueue(request("bad.shape", CollectiveType::kAllreduce), host_view(bad), host_view(bad), 1);
      const std::string error = expect_error<MismatchError>([&] { wait(shape, "bad.shape"); }, "shape mismatch");
      EXPECT_NE(error.find("[5] on ranks [" + std::to_string(last) + "]"), std::string::npos)
          << "rank " << me << ": " << error;
      EXPECT_NE(error.find(set_name), std::string::npos) << "rank " << me << ": " << error;
      // Roots are global ranks in requests and in messages.
      std::vector<float> message(2, 0.0f);
      const int root = me == last ? last : evens[0];
      Handle broadcast = runtime.enqueue(request("bad.root", CollectiveType::kBroadcast, ReduceOp::kSum, root),
                                         host_view(message), host_view(message), 1);
      const std::string roots = expect_error<MismatchError>([&] { wait(broadcast, "bad.root"); }, "root mismatch");
      EXPECT_NE(roots.find(std::to_string(last) + " on ranks [" + std::to_string(last) + "]"), std::string::npos)
          << "rank " << me << ": " << roots;
      EXPECT_NE(roots.find(set_name), std::string::npos) << "rank " << me << ": " << roots;
      exercise(runtime, 1, evens, "after");  // the set still works
    }
    finish(runtime);
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

TEST_P(ProcessSetsInProcess, DynamicAddRemoveAndMisuseErrors) {
  const int P = GetParam();
  const auto sets = process_subsets(P);
  const std::string failure = run_ranks(P, [&](Communicator& world, const testing_util::AbortFlag&) {
    Runtime runtime(split_communicator_set(world), test_config(/*dynamic=*/true));
    const int me = runtime.rank();
    std::vector<float> one(1, 1.0f);
    for (const auto& ranks : sets) {
      const Handle added = runtime.enqueue_process_set(ranks, 0);
      wait(added, "add_process_set");
      const int id = static_cast<int>(added.received_splits().at(0));
      if (contains(ranks, me)) exercise(runtime, id, ranks, "dyn" + std::to_string(id));
      // A member's collective that the others never submit fails when the set is removed.
      Handle lonely;
      if (ranks.size() > 1 && me == ranks[0])
        lonely = runtime.enqueue(request("lonely", CollectiveType::kAllreduce), host_view(one), host_view(one), id);
      wait(runtime.enqueue_process_set({}, id), "remove_process_set");
      if (lonely.state()) {
        const std::string error = expect_error<StateError>([&] { wait(lonely, "lonely"); }, "pending on removal");
        EXPECT_NE(error.find("was removed"), std::string::npos) << error;
      }
      const std::string removed = expect_error<InvalidArgument>(
          [&] { runtime.enqueue(request("late", CollectiveType::kAllreduce), host_view(one), host_view(one), id); },
          "collective on a removed set");
      EXPECT_NE(removed.find("no process set with id " + std::to_string(id)), std::string::npos) << removed;
    }
    const std::string unknown = expect_error<InvalidArgument>(
        [&] { runtime.enqueue(request("unknown", CollectiveType::kAllreduce), host_view(one), host_view(one), 99); },
        "unknown id");
    EXPECT_NE(unknown.find("no process set with id 99"), std::string::npos) << unknown;
    expect_error<InvalidArgument>([&] { runtime.enqueue_process_set({}, 0); }, "remove the world");
    if (P > 1) {  // ranks differing between callers: a MismatchError on every rank
      const Handle differ = runtime.enqueue_process_set({me == 0 ? 0 : 1}, 0);
      const std::string error = expect_error<MismatchError>([&] { wait(differ, "differing add"); }, "differing add");
      EXPECT_NE(error.find("process set ranks"), std::string::npos) << error;
    }
    finish(runtime);
  });
  EXPECT_EQ(failure, "") << "P=" << P;
}

TEST(ProcessSetsInProcessErrors, AddWithoutTheDynamicSettingAndDifferingInitialSets) {
  const std::string failure = run_ranks(3, [&](Communicator& world, const testing_util::AbortFlag&) {
    {
      Runtime runtime(split_communicator_set(world), test_config(/*dynamic=*/false));
      const std::string error =
          expect_error<InvalidArgument>([&] { runtime.enqueue_process_set({0}, 0); }, "add without the setting");
      EXPECT_NE(error.find("CONCORD_DYNAMIC_PROCESS_SETS=1"), std::string::npos) << error;
      finish(runtime);
    }
    const std::vector<std::vector<int>> mine = {{0, world.rank() == 2 ? 2 : 1}};
    const std::string error = expect_error<InvalidArgument>(
        [&] { Runtime runtime(split_communicator_set(world), test_config(), mine); }, "differing initial sets");
    EXPECT_NE(error.find("different process sets"), std::string::npos) << error;
  });
  EXPECT_EQ(failure, "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, ProcessSetsInProcess, ::testing::Values(1, 2, 3, 4, 5, 7),
                         [](const auto& info) { return "P" + std::to_string(info.param); });

}  // namespace
}  // namespace concord
