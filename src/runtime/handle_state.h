// The shared completion state behind a Handle: set once by the background thread
// (complete or fail), read by any number of waiting threads.
#pragma once

#include <condition_variable>
#include <exception>
#include <mutex>
#include <vector>

namespace concord {

class HandleState {
 public:
  /// Marks the operation done successfully and wakes the waiters.
  void complete();
  /// Marks the operation failed with `error` (rethrown by wait()) and wakes the waiters.
  void fail(std::exception_ptr error);
  bool done() const;
  /// Blocks until done; rethrows the stored error.
  void wait() const;

  /// Allgather and alltoall results, written by the background thread before complete().
  std::vector<int64_t> output_shape;
  std::vector<uint8_t> output_bytes;
  /// Alltoall: rows received from each rank. Join: {last rank to join}. Process set
  /// registration: {the set's id}.
  std::vector<int64_t> received_splits;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

}  // namespace concord
