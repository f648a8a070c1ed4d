// A progress thread that drives many resumable collectives at once (src/algorithms/algorithm.h):
// the concurrent and depchain KVStores hand each collective to it from an asynchronous engine
// operation, so no engine thread blocks in communication and collectives on different
// communicators progress together (the "async ops driving progress" variant of
// docs/architecture.md, "KVStore").
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "algorithms/algorithm.h"

namespace concord::kvstore {

class CollectiveDriver {
 public:
  /// Called once per operation on the driver thread: nullptr on success, else the error
  /// progress() threw.
  using Done = std::function<void(std::exception_ptr error)>;

  /// Starts the thread.
  CollectiveDriver();
  /// stop().
  ~CollectiveDriver();
  CollectiveDriver(const CollectiveDriver&) = delete;
  CollectiveDriver& operator=(const CollectiveDriver&) = delete;

  /// Queues `operation` (already started); the thread calls progress() until kDone or a
  /// throw, then `done`. Thread-safe. Throws StateError after stop().
  void submit(std::unique_ptr<Algorithm> operation, Done done);
  /// Drives every submitted operation to its end, then joins the thread. Idempotent.
  void stop();

 private:
  struct Job {
    std::unique_ptr<Algorithm> operation;
    Done done;
  };
  void loop();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Job> incoming_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace concord::kvstore
