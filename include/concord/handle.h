// Handle to an asynchronous collective: poll it, or wait for it (rethrows its error).
#pragma once

#include <memory>
#include <vector>

#include "concord/types.h"

namespace concord {

class HandleState;

/// Returned by every enqueue call. Copies share the same operation. Thread-safe.
class Handle {
 public:
  Handle() = default;
  explicit Handle(std::shared_ptr<HandleState> state) : state_(std::move(state)) {}

  /// True once the operation has finished (successfully or not). Never blocks.
  bool poll() const;
  /// Blocks until the operation has finished. Rethrows the operation's error (e.g.
  /// MismatchError, StateError) if it failed. Releases nothing: the caller's buffers may
  /// be reused afterwards.
  void wait() const;
  /// Blocks until the operation has finished or `seconds` passed; true when it finished
  /// (then as wait(): rethrows the operation's error). Never consumes anything.
  bool wait_for(double seconds) const;
  /// Allgather/alltoall: the output shape, valid after wait() (dim 0 = rows received).
  const std::vector<int64_t>& output_shape() const;
  /// Allgather/alltoall of host tensors: the gathered bytes (row-major, rank order), valid
  /// after wait(). Throws InvalidArgument when the result is in device memory (read it
  /// with output_data() or copy_output_to()).
  const std::vector<uint8_t>& output_bytes() const;
  /// Where the allgather/alltoall result is: kHostMemory, or the input's device index
  /// (TensorView::device) for device tensors. Valid after wait().
  int32_t output_device() const;
  /// The result's bytes: host memory, or device memory owned by this handle (valid while a
  /// copy of the handle exists; only the device's streams may touch it). May be null when
  /// output_nbytes() is 0. Valid after wait().
  const void* output_data() const;
  /// Size of the allgather/alltoall result in bytes (output_shape() times the element size).
  size_t output_nbytes() const;
  /// Copies the result into `destination`, output_nbytes() bytes in the result's memory
  /// (host memory, or memory of the same device: a device-to-device copy on a new stream of
  /// that device, finished when this returns). Valid after wait(). Throws DeviceError.
  void copy_output_to(void* destination) const;
  /// Alltoall: the rows received from each rank (size() entries); join: {the last rank to
  /// join}; add_process_set: {the new set's id}. Valid after wait().
  const std::vector<int64_t>& received_splits() const;
  /// The shared state, for the runtime. Null for a default-constructed handle.
  const std::shared_ptr<HandleState>& state() const { return state_; }

 private:
  std::shared_ptr<HandleState> state_;
};

}  // namespace concord
