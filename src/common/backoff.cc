#include "common/backoff.h"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace concord {

Backoff::Backoff() {
  thread_local const bool slack_set = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
  (void)slack_set;
}

void Backoff::wait() {
  constexpr int kYields = 128;
  constexpr int64_t kMaxNapUs = 50;
  if (++idle_ <= kYields) {
    std::this_thread::yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(nap_us_));
  nap_us_ = std::min(nap_us_ * 2, kMaxNapUs);
}

}  // namespace concord
