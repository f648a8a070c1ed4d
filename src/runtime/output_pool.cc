#include "runtime/output_pool.h"

#include <cstdint>
#include <new>

#include "common/enforce.h"

namespace concord {

namespace {
constexpr size_t kAlignment = 64;  // a cache line, and what SIMD reduction kernels like
}  // namespace

OutputBlock::~OutputBlock() {
  if (!memory_) return;
  try {
    pool_->release(std::move(memory_), size_);
  } catch (const std::bad_alloc&) {  // no room to keep it: memory_ (if not moved) is freed
  }
}

void detail::OutputPoolState::release(PoolMemory memory, size_t size) {
  if (capacity == 0 || static_cast<int64_t>(size) > capacity) return;  // frees it
  std::list<Kept> dropped;                                             // freed outside the lock
  std::lock_guard<std::mutex> lock(mutex);
  kept.push_back(Kept{size, std::move(memory)});
  kept_bytes += static_cast<int64_t>(size);
  while (kept_bytes > capacity) {
    kept_bytes -= static_cast<int64_t>(kept.front().size);
    dropped.splice(dropped.end(), kept, kept.begin());
  }
}

OutputPool::OutputPool(int64_t capacity_bytes) {
  CONCORD_ENFORCE(capacity_bytes >= 0, InvalidArgument, "OutputPool: capacity must be >= 0 bytes, got ",
                  capacity_bytes);
  state_ = std::make_shared<detail::OutputPoolState>(capacity_bytes);
}

std::unique_ptr<OutputBlock> OutputPool::take(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    for (auto it = state_->kept.rbegin(); it != state_->kept.rend(); ++it) {
      if (it->size != bytes) continue;
      detail::PoolMemory memory = std::move(it->memory);
      state_->kept_bytes -= static_cast<int64_t>(bytes);
      state_->kept.erase(std::next(it).base());
      return std::make_unique<OutputBlock>(state_, std::move(memory), bytes);
    }
  }
  if (bytes > static_cast<size_t>(PTRDIFF_MAX) - kAlignment) throw std::bad_alloc();
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  auto* memory = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded));
  if (memory == nullptr) throw std::bad_alloc();
  return std::make_unique<OutputBlock>(state_, detail::PoolMemory(memory), bytes);
}

int64_t OutputPool::free_bytes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->kept_bytes;
}

int64_t OutputPool::capacity_bytes() const { return state_->capacity; }

void OutputPool::clear() {
  std::list<detail::OutputPoolState::Kept> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> lock(state_->mutex);
  dropped.swap(state_->kept);
  state_->kept_bytes = 0;
}

}  // namespace concord
