// The "burst is over" signal between framework threads and the background thread of one
// process (runtime.cc, Runtime::linger_while_submitting): a thread that blocks on a pending
// handle requests a flush, and a background thread lingering for more submissions stops at
// once. Shared (a handle holds it weakly and may outlive the runtime), so it holds no
// runtime state: a flag, and a condition variable that is notified only while a linger
// waits on it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace concord {

class FlushSignal {
 public:
  /// Sets requested() and ends a wait_for() at once. Cheap when already set.
  void request();
  /// Clears requested() (a push: a thread is still submitting; a pop: the round has the
  /// requests).
  void clear() { requested_.store(false, std::memory_order_release); }
  bool requested() const { return requested_.load(std::memory_order_acquire); }
  /// Blocks for `timeout`, or less if requested() is or becomes true.
  void wait_for(std::chrono::microseconds timeout);

 private:
  std::mutex mutex_;
  std::condition_variable requested_cv_;
  std::atomic<bool> requested_{false};  // set under mutex_ (no lost wake-up), cleared anywhere
  bool waiting_ = false;                // a thread is in wait_for(): request() notifies only then
};

}  // namespace concord
