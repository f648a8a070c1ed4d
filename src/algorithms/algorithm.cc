#include "algorithms/algorithm.h"

#include <thread>

namespace concord {

void run_to_completion(Algorithm& algorithm) {
  while (algorithm.progress() == Progress::kInProgress) std::this_thread::yield();
}

}  // namespace concord
