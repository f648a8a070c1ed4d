#include "transport/communicator.h"

#include <thread>

namespace concord {

void wait_all(std::vector<RequestPtr>& requests) {
  size_t done = 0;
  while (done < requests.size()) {
    done = 0;
    for (auto& request : requests) {
      if (!request) {
        ++done;
      } else if (request->test()) {
        request.reset();
        ++done;
      }
    }
    if (done < requests.size()) std::this_thread::yield();
  }
  requests.clear();
}

}  // namespace concord
