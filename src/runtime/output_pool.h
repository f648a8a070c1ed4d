// Reused host memory for the new tensors that out-of-place collectives hand back to a
// framework (concord.torch's hvd.allreduce). A fresh result of a few MiB
// or more is mapped anew by the C allocator and page-faults on its first write, which on
// the machines of docs/performance.md costs more than the allreduce itself; and making the
// result through the framework's Python API (a NumPy holder, a finalizer, torch.frombuffer,
// a view) costs tens of microseconds with caches cold from the collective's data. So the
// pool keeps released blocks by size, as PyTorch's CUDA caching allocator does for device
// memory, and a block is an object the framework wraps with one call (the binding gives it
// Python's buffer protocol) that returns to the pool when the last reference goes.
//
// Thread-safe: blocks may be taken and released on any thread. A block may outlive its
// pool object (the shared state lives until the last block is gone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <list>
#include <memory>
#include <mutex>

namespace concord {

namespace detail {
struct OutputPoolState;
struct FreeDeleter {
  void operator()(uint8_t* memory) const { std::free(memory); }
};
using PoolMemory = std::unique_ptr<uint8_t[], FreeDeleter>;
}  // namespace detail

/// One block of host memory from an OutputPool: size() bytes, 64-byte aligned, contents
/// unspecified (a reused block holds an earlier result). Goes back to its pool when
/// destroyed.
class OutputBlock {
 public:
  OutputBlock(std::shared_ptr<detail::OutputPoolState> pool, detail::PoolMemory memory, size_t size)
      : pool_(std::move(pool)), memory_(std::move(memory)), size_(size) {}
  OutputBlock(const OutputBlock&) = delete;
  OutputBlock& operator=(const OutputBlock&) = delete;
  ~OutputBlock();

  uint8_t* data() const { return memory_.get(); }
  size_t size() const { return size_; }

 private:
  std::shared_ptr<detail::OutputPoolState> pool_;
  detail::PoolMemory memory_;
  size_t size_;
};

class OutputPool {
 public:
  /// Keeps at most `capacity_bytes` bytes of released blocks (the least recently released
  /// dropped first); 0 keeps none (every take() allocates). Throws InvalidArgument if < 0.
  explicit OutputPool(int64_t capacity_bytes);

  /// A block of exactly `bytes` bytes: the most recently released one of that size (its
  /// pages already mapped, likely still in cache), else new memory. Throws std::bad_alloc
  /// when there is no memory (or `bytes` exceeds PTRDIFF_MAX - 64).
  std::unique_ptr<OutputBlock> take(size_t bytes);
  /// Bytes of released blocks kept for reuse.
  int64_t free_bytes() const;
  int64_t capacity_bytes() const;
  /// Frees every kept block (blocks in use return later as usual).
  void clear();

 private:
  std::shared_ptr<detail::OutputPoolState> state_;
};

namespace detail {
struct OutputPoolState {
  struct Kept {
    size_t size;
    PoolMemory memory;
  };
  explicit OutputPoolState(int64_t capacity) : capacity(capacity) {}
  void release(PoolMemory memory, size_t size);

  const int64_t capacity;
  mutable std::mutex mutex;
  std::list<Kept> kept;  // oldest release first
  int64_t kept_bytes = 0;
};
}  // namespace detail

}  // namespace concord
