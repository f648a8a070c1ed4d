#include "runtime/flush_signal.h"

namespace concord {

void FlushSignal::request() {
  if (requested()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  requested_.store(true, std::memory_order_release);
  if (waiting_) requested_cv_.notify_all();
}

void FlushSignal::wait_for(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  waiting_ = true;
  requested_cv_.wait_for(lock, timeout, [this] { return requested(); });
  waiting_ = false;
}

}  // namespace concord
