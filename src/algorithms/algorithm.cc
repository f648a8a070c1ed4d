#include "algorithms/algorithm.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <sys/prctl.h>

namespace concord {

void run_to_completion(Algorithm& algorithm) {
  // Yield first (a message on shared memory usually lands within microseconds); after that,
  // sleep with exponential backoff up to 50 us, so that on an oversubscribed node the
  // ranks this one waits for get the core instead of a spinning neighbour.
  constexpr int kYields = 128;
  // Linux pads every sleep by the thread's timer slack (50 us by default), which would make
  // a 1 us nap cost 50 us on a dedicated core; 1 us of slack keeps naps short.
  thread_local const bool slack_set = prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0) == 0;
  (void)slack_set;
  int idle = 0;
  auto nap = std::chrono::microseconds(1);
  while (algorithm.progress() == Progress::kInProgress) {
    if (++idle <= kYields) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(50));
  }
}

}  // namespace concord
