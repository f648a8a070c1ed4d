// TensorQueue (src/runtime/tensor_queue.h): the in-flight table between framework threads
// and the background thread. New requests come back in push order and new_count() follows
// them without the lock; try_take_all() takes a response's entries under one lock and
// leaves names that are not in flight (a joined rank) empty; a framework thread pushing
// while the background thread takes loses nothing; a thread blocking on a pending handle
// requests a flush, which ends a lingering background thread's wait at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <thread>

#include "concord/errors.h"
#include "runtime/tensor_queue.h"

namespace concord {
namespace {

TensorEntry entry(const std::string& name) {
  TensorEntry e;
  e.request.name = name;
  e.handle = std::make_shared<HandleState>();
  return e;
}

TEST(TensorQueue, NewRequestsComeBackInPushOrderAndNewCountFollows) {
  TensorQueue queue;
  EXPECT_FALSE(queue.has_new());
  queue.push(entry("b"));
  queue.push(entry("a"));
  queue.push_all({entry("d"), entry("c")});
  EXPECT_EQ(queue.new_count(), 4u);
  EXPECT_EQ(queue.in_flight(), 4u);
  const auto requests = queue.pop_requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].name, "b");
  EXPECT_EQ(requests[1].name, "a");
  EXPECT_EQ(requests[2].name, "d");
  EXPECT_EQ(requests[3].name, "c");
  EXPECT_EQ(queue.new_count(), 0u) << "popped requests still counted as new";
  EXPECT_EQ(queue.in_flight(), 4u) << "popping the requests must not take the entries";
  queue.push(entry("e"));
  EXPECT_EQ(queue.new_count(), 1u);
  EXPECT_EQ(queue.pop_requests().at(0).name, "e");
}

TEST(TensorQueue, TryTakeAllTakesInFlightNamesAndLeavesTheOthersEmpty) {
  TensorQueue queue;
  std::map<std::string, std::shared_ptr<HandleState>> handles;
  for (const char* name : {"x", "y", "z"}) {
    auto e = entry(name);
    handles[name] = e.handle;
    queue.push(std::move(e));
  }
  const auto taken = queue.try_take_all({"z", "absent", "x"});
  ASSERT_EQ(taken.size(), 3u);
  ASSERT_TRUE(taken[0].has_value());
  EXPECT_EQ(taken[0]->handle, handles["z"]) << "try_take_all(z) returned another entry";
  EXPECT_FALSE(taken[1].has_value()) << "a name not in flight came back";
  ASSERT_TRUE(taken[2].has_value());
  EXPECT_EQ(taken[2]->handle, handles["x"]) << "try_take_all(x) returned another entry";
  EXPECT_EQ(queue.in_flight(), 1u);
  EXPECT_FALSE(queue.try_take_all({"z"})[0].has_value()) << "an entry was taken twice";
}

TEST(TensorQueue, TakenNamesCanBeSubmittedAgainManyTimes) {
  // push moves each request on to the new requests: every round must find exactly the
  // requests and entries pushed in it, under their own names.
  TensorQueue queue;
  (void)queue.pop_requests();
  for (int round = 0; round < 5; ++round) {
    std::vector<std::string> names;
    std::vector<std::shared_ptr<HandleState>> handles;
    for (int i = 0; i < 3 + round; ++i) {
      names.push_back((round % 2 ? "a.rather.long.tensor.name." : "t") + std::to_string((i * 7 + round) % 11));
      auto e = entry(names.back());
      handles.push_back(e.handle);
      queue.push(std::move(e));
    }
    const auto requests = queue.pop_requests();
    ASSERT_EQ(requests.size(), names.size()) << "round " << round;
    for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(requests[i].name, names[i]) << "round " << round;
    const auto taken = queue.try_take_all(names);
    for (size_t i = 0; i < names.size(); ++i) {
      ASSERT_TRUE(taken[i].has_value()) << "round " << round << ": " << names[i] << " not in flight";
      EXPECT_EQ(taken[i]->handle, handles[i]) << "round " << round << ": " << names[i] << " came back as another entry";
    }
    EXPECT_EQ(queue.in_flight(), 0u) << "round " << round;
  }
}

TEST(TensorQueue, DuplicateNameIsRefusedAndCloseFailsWhatIsInFlight) {
  TensorQueue queue;
  queue.push(entry("g"));
  EXPECT_THROW(queue.push(entry("g")), InvalidArgument);
  EXPECT_THROW(queue.push_all({entry("h"), entry("h")}), InvalidArgument);
  EXPECT_EQ(queue.new_count(), 1u) << "a refused push was counted";
  const auto executing = queue.try_take_all({"g"})[0]->handle;  // taken by a response
  auto waiting = entry("w");
  const auto waiting_handle = waiting.handle;
  queue.push(std::move(waiting));
  queue.close("stopped");
  EXPECT_EQ(queue.new_count(), 0u);
  EXPECT_THROW(queue.push(entry("late")), StateError);
  ASSERT_TRUE(waiting_handle->done()) << "close() left an in-flight entry pending";
  EXPECT_THROW(waiting_handle->wait(), StateError);
  EXPECT_FALSE(executing->done()) << "close() failed an entry a response had taken";
}

// One thread pushes a burst (a backward pass) while another pops requests and takes their
// entries as responses would: every name is popped once and taken once.
TEST(TensorQueue, ConcurrentPushesAndTakesLoseNothing) {
  constexpr int kBurst = 2000;
  TensorQueue queue;
  std::atomic<bool> pushed{false};
  std::thread framework([&] {
    for (int i = 0; i < kBurst; ++i) queue.push(entry("t" + std::to_string(i)));
    pushed = true;
  });
  int popped = 0, taken = 0;
  while (!pushed || queue.has_new()) {
    std::vector<std::string> names;
    for (const auto& request : queue.pop_requests()) names.push_back(request.name);
    popped += static_cast<int>(names.size());
    for (const auto& got : queue.try_take_all(names)) taken += got.has_value() ? 1 : 0;
    std::this_thread::yield();
  }
  framework.join();
  EXPECT_EQ(popped, kBurst);
  EXPECT_EQ(taken, kBurst);
  EXPECT_EQ(queue.in_flight(), 0u);
}

// wait_for_more() reports pushes made while it waited (without being woken by them), and
// ends at once on a flush request, which lasts until the next pop_requests().
TEST(TensorQueue, WaitForMoreSeesPushesAndFlushRequests) {
  TensorQueue queue;
  queue.push(entry("a"));
  EXPECT_FALSE(queue.wait_for_more(1, std::chrono::microseconds(1000))) << "no push came, yet it saw more";
  EXPECT_TRUE(queue.wait_for_more(0, std::chrono::microseconds(0))) << "one request is new since 0";
  std::thread pusher([&] { queue.push(entry("b")); });
  pusher.join();
  EXPECT_TRUE(queue.wait_for_more(1, std::chrono::microseconds(1000)));
  EXPECT_FALSE(queue.flush_requested());
  const auto start = std::chrono::steady_clock::now();
  std::thread waiter([&] { queue.flush_signal().lock()->request(); });
  EXPECT_FALSE(queue.wait_for_more(2, std::chrono::seconds(20))) << "a flush is not a push";
  waiter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "the flush did not end the wait";
  EXPECT_TRUE(queue.flush_requested());
  EXPECT_FALSE(queue.wait_for_more(2, std::chrono::seconds(20))) << "a pending flush must end the wait at once";
  queue.pop_requests();
  EXPECT_FALSE(queue.flush_requested()) << "pop_requests() must clear the flush request";
}

// A push wakes a thread blocked in wait_for_push() at once.
TEST(TensorQueue, PushWakesAnIdleWaiter) {
  TensorQueue queue;
  std::thread pusher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    queue.push(entry("a"));
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(queue.wait_for_push(std::chrono::seconds(20)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10)) << "the push did not wake the waiter";
  pusher.join();
}

// A thread blocking on a pending handle tells the handle's queue (a flush request); waiting
// on a finished handle, or on one whose queue is gone, does not.
TEST(TensorQueue, WaitingOnAPendingHandleRequestsAFlush) {
  auto queue = std::make_shared<TensorQueue>();
  TensorEntry pending = entry("pending");
  pending.handle->flush_signal = queue->flush_signal();
  auto handle = pending.handle;
  queue->push(std::move(pending));
  auto done = std::make_shared<HandleState>();
  done->flush_signal = queue->flush_signal();
  done->complete();
  done->wait();
  EXPECT_FALSE(queue->flush_requested()) << "waiting on a finished handle requested a flush";
  auto waited = std::async(std::launch::async, [&] { handle->wait(); });
  EXPECT_FALSE(queue->wait_for_more(1, std::chrono::seconds(20)));
  EXPECT_TRUE(queue->flush_requested()) << "a thread blocked on a pending handle without requesting a flush";
  handle->complete();
  waited.get();
  auto orphan = std::make_shared<HandleState>();
  orphan->flush_signal = queue->flush_signal();
  queue.reset();  // the runtime is gone: a waiter must not touch the queue
  auto orphan_waited = std::async(std::launch::async, [&] { orphan->wait(); });
  orphan->complete();
  orphan_waited.get();
}

}  // namespace
}  // namespace concord
