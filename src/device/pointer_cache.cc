#include "device/pointer_cache.h"

#include <algorithm>

namespace concord {
namespace {

// The entry containing `address` in a sorted table, or nullptr.
const DeviceAllocation* find(const std::vector<DeviceAllocation>& table, uintptr_t address) {
  auto it = std::upper_bound(table.begin(), table.end(), address,
                             [](uintptr_t a, const DeviceAllocation& entry) { return a < entry.base; });
  if (it == table.begin()) return nullptr;
  --it;
  return address - it->base < it->bytes ? &*it : nullptr;
}

}  // namespace

PointerCache::PointerCache(AttributeProvider& provider)
    : provider_(provider), table_(nullptr), current_(std::make_unique<Table>()) {
  table_.store(current_.get());
}

PointerCache::~PointerCache() = default;

PointerLocation PointerCache::lookup(const void* data) {
  const auto address = reinterpret_cast<uintptr_t>(data);
  readers_.fetch_add(1);
  const DeviceAllocation* entry = find(*table_.load(), address);
  const int device = entry != nullptr ? entry->device : -1;
  readers_.fetch_sub(1);
  if (entry != nullptr) {
    hits_.fetch_add(1, std::memory_order_relaxed);
    return PointerLocation{device};
  }
  misses_.fetch_add(1, std::memory_order_relaxed);
  if (tracks_all_.load(std::memory_order_relaxed)) return PointerLocation{};
  queries_.fetch_add(1, std::memory_order_relaxed);
  const std::optional<DeviceAllocation> allocation = provider_.query(data);
  if (!allocation) return PointerLocation{};  // host memory now; not cached (it may become device memory)
  notify_alloc(*allocation);
  return PointerLocation{allocation->device};
}

std::unique_ptr<PointerCache::Table> PointerCache::with(const Table& table, const DeviceAllocation& allocation) {
  auto next = std::make_unique<Table>();
  next->reserve(table.size() + 1);
  const uintptr_t end = allocation.base + allocation.bytes;
  for (const DeviceAllocation& entry : table)  // an overlapping entry is stale: that memory was freed
    if (entry.base + entry.bytes <= allocation.base || entry.base >= end) next->push_back(entry);
  next->insert(std::upper_bound(next->begin(), next->end(), allocation.base,
                                [](uintptr_t a, const DeviceAllocation& e) { return a < e.base; }),
               allocation);
  return next;
}

void PointerCache::notify_alloc(const DeviceAllocation& allocation) {
  if (allocation.bytes == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  publish(with(*current_, allocation));
}

void PointerCache::notify_free(const void* base) {
  const auto address = reinterpret_cast<uintptr_t>(base);
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = std::find_if(current_->begin(), current_->end(),
                               [&](const DeviceAllocation& entry) { return entry.base == address; });
  if (it == current_->end()) return;
  auto next = std::make_unique<Table>(*current_);
  next->erase(next->begin() + (it - current_->begin()));
  publish(std::move(next));
}

uint64_t PointerCache::invalidate_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  publish(std::make_unique<Table>());
  return epoch_.fetch_add(1) + 1;
}

bool PointerCache::validate(const void* data) {
  const auto address = reinterpret_cast<uintptr_t>(data);
  queries_.fetch_add(1, std::memory_order_relaxed);
  const std::optional<DeviceAllocation> now = provider_.query(data);
  std::lock_guard<std::mutex> lock(mutex_);
  const DeviceAllocation* cached = find(*current_, address);
  if (cached != nullptr && now && cached->base == now->base && cached->bytes == now->bytes &&
      cached->buffer_id == now->buffer_id && cached->device == now->device)
    return true;
  if (now) {
    publish(with(*current_, *now));
  } else if (cached != nullptr) {
    auto next = std::make_unique<Table>(*current_);
    next->erase(next->begin() + (cached - current_->data()));
    publish(std::move(next));
  }
  return cached == nullptr && !now;  // "current" also when both say host memory
}

size_t PointerCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_->size();
}

void PointerCache::publish(std::unique_ptr<Table> next) {
  table_.store(next.get());
  retired_.push_back(std::move(current_));
  current_ = std::move(next);
  reclaim();
}

void PointerCache::reclaim() {
  // A reader counted after this load sees the table stored above (sequentially consistent
  // atomics); one counted before may still hold a retired table, so keep them all.
  if (readers_.load() == 0) retired_.clear();
}

}  // namespace concord
