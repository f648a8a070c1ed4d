// The shape every collective algorithm shares (STYLE.md: resumable algorithms): start()
// posts the first messages, progress() advances as far as completed messages allow and
// says whether the operation is done. One progress thread can so drive an algorithm
// without blocking on any single message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace concord {

enum class Progress { kInProgress, kDone };

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  /// Advances the operation; never blocks. Throws CommError on transport failure.
  virtual Progress progress() = 0;
};

/// Calls progress() until kDone, yielding the CPU whenever no message has completed, so
/// oversubscribed ranks do not starve each other.
void run_to_completion(Algorithm& algorithm);

/// A grow-only byte buffer reused across operations, so large collectives do not pay for
/// fresh page faults on every call.
class ScratchBuffer {
 public:
  /// Returns a buffer of at least `bytes` bytes (contents unspecified).
  uint8_t* get(size_t bytes) {
    if (storage_.size() < bytes) storage_.resize(bytes);
    return storage_.data();
  }
  size_t capacity() const { return storage_.size(); }

 private:
  std::vector<uint8_t> storage_;
};

}  // namespace concord
