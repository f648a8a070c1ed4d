// The shared completion state behind a Handle: set once by the background thread
// (complete or fail), read by any number of waiting threads.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "device/device.h"

namespace concord {

class FlushSignal;

class HandleState {
 public:
  /// Marks the operation done successfully and wakes the waiters.
  void complete();
  /// Marks the operation failed with `error` (rethrown by wait()) and wakes the waiters.
  void fail(std::exception_ptr error);
  bool done() const;
  /// Blocks until done; rethrows the stored error. Blocking on a pending operation first
  /// raises `flush_signal`: the caller's burst of submissions is over, so a background
  /// thread lingering for more starts the round at once.
  void wait() const;
  /// As wait(), for at most `seconds`; true when done (its error rethrown), false on timeout.
  bool wait_for(double seconds) const;
  /// The world queue's flush signal (TensorQueue::flush_signal; the world's for every
  /// process set, as the background thread lingers on the world's queue), raised when a
  /// thread blocks in wait(). Unset for internal states; weak: a handle may outlive the
  /// runtime.
  std::weak_ptr<FlushSignal> flush_signal;

  /// Allgather and alltoall results, written by the background thread before complete():
  /// in output_bytes for host tensors; for device tensors in output_buffer, device memory
  /// of output_device (device index output_device_index), which this state keeps alive
  /// (declared first, so the buffer is freed before the device may go).
  std::vector<int64_t> output_shape;
  std::vector<uint8_t> output_bytes;
  std::shared_ptr<Device> output_device;
  int32_t output_device_index = kHostMemory;
  DeviceBuffer output_buffer;
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
