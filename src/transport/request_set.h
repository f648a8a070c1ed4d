// How every algorithm posts and reaps its nonblocking requests (after gloo's and
// UCC's single completion path): a RequestSet holds the
// requests of one kind an operation has in flight (e.g. a ring's sends), and reap_one()
// completes a single request kept in a slot of its own (e.g. the receive of a given
// chunk, which the algorithm must consume in order). Nothing here blocks except wait().
#pragma once

#include <cstddef>
#include <deque>

#include "transport/communicator.h"

namespace concord {

/// True when `slot` holds no request or its request has completed (the slot is then
/// emptied, so a completed request is tested once). Never blocks.
inline bool reap_one(RequestPtr& slot) {
  if (slot && slot->test()) slot.reset();
  return !slot;
}

/// Outstanding requests of one operation, completed in any order.
class RequestSet {
 public:
  /// Adds an outstanding request (a null one is ignored).
  void post(RequestPtr request) {
    if (request) requests_.push_back(std::move(request));
  }
  /// Tests every outstanding request and drops the completed ones; true when none is left.
  bool reap() {
    std::erase_if(requests_, [](RequestPtr& request) { return request->test(); });
    return requests_.empty();
  }
  /// Tests from the oldest request and stops at the first still in flight; true when none
  /// is left. For requests that complete in posting order (one message per pipelined
  /// chunk): polling costs O(1) per completed request.
  bool reap_in_order() {
    while (!requests_.empty() && requests_.front()->test()) requests_.pop_front();
    return requests_.empty();
  }
  /// Blocks until every request has completed, waiting with a Backoff
  /// (common/backoff.h) between polls so oversubscribed ranks make progress.
  void wait();
  /// Forgets every request (only for requests known to be complete or abandoned).
  void clear() { requests_.clear(); }
  bool empty() const { return requests_.empty(); }
  size_t size() const { return requests_.size(); }

 private:
  std::deque<RequestPtr> requests_;
};

}  // namespace concord
