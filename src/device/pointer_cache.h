// Pointer cache: "is this buffer host or device memory, and on which device?" answered
// without a driver call per operation -- the pointer cache of "Scalable Distributed DNN
// Training using TensorFlow and CUDA-Aware MPI" (Awan et al., CCGrid 2019;
// there 4.1x faster than querying the driver for small messages).
//
// An interval map of known device allocations [base, base + bytes) -> device. The first
// lookup of an address inside an unknown allocation asks the AttributeProvider once (on
// CUDA: cuPointerGetAttributes for the range start, size, device and buffer ID) and caches
// the whole allocation, so every later pointer into it (interior pointers included) is a
// hit. Entries are kept current by notify_free() (allocator/framework hooks) and
// invalidate_all() (a new epoch, e.g. after emptying a caching allocator); validate()
// re-reads the buffer ID of a cached allocation (itself a driver call: only for checks).
// A miss is answered by the provider, never assumed to be host memory -- unless the owner
// declared that every device allocation is registered (set_tracks_all), then a miss is
// host memory without a query.
//
// Users: every Device answers owns() through one (CudaDevice, also is_device_pointer: driver
// provider, its own allocations registered; EmulatedDevice: every allocation registered,
// tracks_all), and the runtime resolves TensorView::device == kDetectDevice through them
// at submission (DeviceSet::locate; docs/architecture.md, "Device tensors in the runtime").
//
// Thread safety: lookup() is lock-free (an atomic load of an immutable sorted table and a
// binary search; a reader count keeps retired tables alive); inserts and removals copy the
// table under a mutex (rare: once per allocation).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "concord/types.h"

namespace concord {

/// One device allocation as the driver describes it.
struct DeviceAllocation {
  uintptr_t base = 0;      ///< start of the allocation
  size_t bytes = 0;        ///< its size
  int device = 0;          ///< device ordinal
  uint64_t buffer_id = 0;  ///< the driver's unique ID (a reallocation at the same address differs)
};

/// Where the driver says a pointer lives (the query the cache saves).
class AttributeProvider {
 public:
  virtual ~AttributeProvider() = default;
  /// The device allocation containing `data`, or nullopt when it is host memory.
  virtual std::optional<DeviceAllocation> query(const void* data) = 0;
};

/// The answer of a lookup: device < 0 means host memory.
struct PointerLocation {
  int device = -1;
  bool is_device() const { return device >= 0; }
};

class PointerCache {
 public:
  /// `provider` must outlive the cache.
  explicit PointerCache(AttributeProvider& provider);
  ~PointerCache();
  PointerCache(const PointerCache&) = delete;
  PointerCache& operator=(const PointerCache&) = delete;

  /// Where `data` lives: a hit answers from the table; a miss asks the provider (unless
  /// tracks_all) and caches a device answer for the whole allocation. Thread-safe.
  PointerLocation lookup(const void* data);

  /// Registers an allocation the owner knows about (an allocator hook): no query needed.
  void notify_alloc(const DeviceAllocation& allocation);
  /// The allocation starting at `base` was freed (or returned to a caching allocator's
  /// pool and may be reused): forgets it. Unknown bases are ignored.
  void notify_free(const void* base);
  /// Forgets everything (a new epoch). Returns the new epoch number.
  uint64_t invalidate_all();
  /// Re-queries the allocation containing `data` and replaces the cached entry when the
  /// driver's buffer ID (or range) changed; returns true when the entry was current.
  bool validate(const void* data);
  /// Declares that every device allocation is registered through notify_alloc(): a miss is
  /// then host memory without a provider query.
  void set_tracks_all(bool tracks_all) { tracks_all_.store(tracks_all, std::memory_order_relaxed); }

  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
  /// Provider queries made (misses not answered by tracks_all, plus validations).
  uint64_t queries() const { return queries_.load(std::memory_order_relaxed); }
  uint64_t epoch() const { return epoch_.load(std::memory_order_relaxed); }
  /// Cached allocations.
  size_t size() const;
  /// hits, misses, queries and size() together (the runtime's PointerCacheStats).
  PointerCacheStats stats() const { return {hits(), misses(), queries(), size()}; }

 private:
  using Table = std::vector<DeviceAllocation>;  // sorted by base, non-overlapping

  // Publishes `next` (under mutex_), retiring the previous table.
  void publish(std::unique_ptr<Table> next);
  // Frees retired tables once no reader is inside lookup(). Caller holds mutex_.
  void reclaim();
  // A copy of the current table with `allocation` inserted (overlapping entries dropped).
  static std::unique_ptr<Table> with(const Table& table, const DeviceAllocation& allocation);

  AttributeProvider& provider_;
  std::atomic<const Table*> table_;
  std::atomic<int> readers_{0};
  std::atomic<bool> tracks_all_{false};
  std::atomic<uint64_t> hits_{0};
  std::atomic<uint64_t> misses_{0};
  std::atomic<uint64_t> queries_{0};
  std::atomic<uint64_t> epoch_{0};
  mutable std::mutex mutex_;                     // serialises writers
  std::unique_ptr<Table> current_;               // owns *table_
  std::vector<std::unique_ptr<Table>> retired_;  // replaced tables a reader may still use
};

}  // namespace concord
