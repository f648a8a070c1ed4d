// A device emulated on the host (docs/architecture.md, "Device layer"): each Stream is a
// worker thread running its operations in order, Events are completion counters, and
// kernels are the CPU kernels of common/reduce.h, so results equal host-memory runs bit
// for bit. In strict mode (the default) device memory comes from EmulatedMemory: the
// address the caller holds has no access, only the stream threads reach the bytes. A
// Concord data path that runs here without crashing therefore touches device memory only
// through the Device interface, exactly as it must on a GPU.
#pragma once

#include <memory>
#include <string>

#include "device/device.h"
#include "device/emulated_memory.h"
#include "device/pointer_cache.h"

namespace concord {

/// The emulation's "driver" for the pointer cache: the strict allocation containing a
/// pointer (device 0), or host memory. Non-strict allocations are ordinary host memory to it.
class EmulatedAttributeProvider : public AttributeProvider {
 public:
  explicit EmulatedAttributeProvider(const EmulatedMemory& memory) : memory_(memory) {}
  std::optional<DeviceAllocation> query(const void* data) override;

 private:
  const EmulatedMemory& memory_;
};

class EmulatedDevice : public Device {
 public:
  /// `strict` = false hands out ordinary host memory as device memory (for debugging).
  /// `registers_allocations` = false leaves allocate() out of the pointer cache, as memory
  /// of an allocator the device does not hook (PyTorch's on a GPU): its cache then asks
  /// the emulation's "driver" (EmulatedAttributeProvider, strict allocations only) on every
  /// miss, once per allocation, as CudaDevice asks cuPointerGetAttributes.
  explicit EmulatedDevice(bool strict = true, bool registers_allocations = true);

  std::string name() const override;
  void* allocate(size_t bytes) override;
  void free(void* data) override;
  void* allocate_host(size_t bytes) override;
  void free_host(void* data) override;
  std::unique_ptr<Stream> create_stream() override;
  std::unique_ptr<Event> create_event() override;

  /// True when `data` is device memory of this device (strict mode only: otherwise device
  /// memory is ordinary host memory and the answer is false).
  bool is_device_pointer(const void* data) const override { return memory_.contains(data); }
  /// Every allocation (strict or not) is registered in the pointer cache when made and
  /// forgotten when freed, so the cache tracks all of them (set_tracks_all): a miss is host
  /// memory without a provider query. Without registers_allocations a miss is a query.
  bool owns(const void* data) const override { return pointers_.lookup(data).is_device(); }
  PointerCacheStats pointer_cache_stats() const override { return pointers_.stats(); }

 private:
  bool strict_;
  bool registers_allocations_;
  EmulatedMemory memory_;
  EmulatedAttributeProvider provider_{memory_};
  mutable PointerCache pointers_{provider_};
};

}  // namespace concord
