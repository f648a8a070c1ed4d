// Backoff: how a thread waits between two polls of outstanding communication, so ranks
// oversubscribed on a node never spin on a core that the ranks they wait for need.
#pragma once

#include <cstdint>

namespace concord {

/// The wait between two polls of a driver loop that found no work: the first 128 waits
/// yield the CPU (a message on shared memory usually lands within microseconds), later
/// ones sleep 1, 2, 4, ... up to 50 microseconds, so on an oversubscribed node the ranks
/// this one waits for get the core. Sets this thread's timer slack to 1 us once (Linux
/// pads every sleep by it, 50 us by default).
class Backoff {
 public:
  Backoff();
  /// Waits once (yield or sleep, as above).
  void wait();

 private:
  int idle_ = 0;
  int64_t nap_us_ = 1;
};

}  // namespace concord
