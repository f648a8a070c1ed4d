// RequestQueue: outstanding sends (or receives) completed in roughly the order they were
// posted, as in pipelined algorithms that post one message per chunk. drain() tests from
// the front and stops at the first request still in flight, so polling costs O(1) per
// completed request instead of re-testing every outstanding one on every progress() call.
#pragma once

#include <deque>

#include "transport/communicator.h"

namespace concord {

class RequestQueue {
 public:
  void push(RequestPtr request) { requests_.push_back(std::move(request)); }
  /// Drops the completed requests at the front; true when none is left. Never blocks.
  bool drain() {
    while (!requests_.empty() && requests_.front()->test()) requests_.pop_front();
    return requests_.empty();
  }
  void clear() { requests_.clear(); }
  bool empty() const { return requests_.empty(); }

 private:
  std::deque<RequestPtr> requests_;
};

}  // namespace concord
