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
  const std::vector<int64_t>& output_shape() const;
  /// Allgather/alltoall: the output shape, valid after wait() (dim 0 = rows received).
  /// Allgather/alltoall: the gathered bytes (row-major, rank order), valid after wait().
  const std::vector<uint8_t>& output_bytes() const;
  /// Alltoall: the rows received from each rank (size() entries); join: {the last rank to
  /// join}; add_process_set: {the new set's id}. Valid after wait().
  const std::vector<int64_t>& received_splits() const;
  /// The shared state, for the runtime. Null for a default-constructed handle.
  const std::shared_ptr<HandleState>& state() const { return state_; }

 private:
  std::shared_ptr<HandleState> state_;
};

}  // namespace concord
