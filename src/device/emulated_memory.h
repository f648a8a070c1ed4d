// "Device memory" for the strict emulated device (device/emulated_device.h): every
// allocation is one memfd mapped twice, once with no access (the address handed to the
// code under test, so host code that dereferences device memory crashes with SIGSEGV as
// it would on a GPU) and once read-write (used only by the emulated streams, which
// translate() addresses before touching them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace concord {

class EmulatedMemory {
 public:
  EmulatedMemory() = default;
  EmulatedMemory(const EmulatedMemory&) = delete;
  EmulatedMemory& operator=(const EmulatedMemory&) = delete;
  /// Unmaps whatever is still allocated.
  ~EmulatedMemory();

  /// Maps `bytes` (> 0) bytes twice and returns the inaccessible address. Zero-filled.
  /// Throws DeviceError (device/device_error.h) naming errno when memfd_create/mmap fails.
  void* allocate(size_t bytes);
  /// Unmaps an address allocate() returned. Throws InvalidArgument for any other address.
  void free(void* data);
  /// The read-write alias of `data` when it points into (or one past the end of) an
  /// allocation, else `data` unchanged (host memory). Thread-safe.
  void* translate(const void* data) const;
  /// True when `data` points into an allocation.
  bool contains(const void* data) const;
  /// An allocation: its inaccessible base address and size in bytes ({0, 0}: none).
  struct Range {
    uintptr_t base = 0;
    size_t bytes = 0;
  };
  /// The allocation `data` points into, or {0, 0}. Thread-safe.
  Range allocation(const void* data) const;

 private:
  struct Mapping {
    size_t bytes = 0;       // allocation size
    size_t mapped = 0;      // size of each mapping (page multiple)
    uint8_t* rw = nullptr;  // read-write alias
  };
  // The mapping containing `address`, or end(). Caller holds mutex_.
  std::map<uintptr_t, Mapping>::const_iterator find(uintptr_t address) const;

  mutable std::mutex mutex_;
  std::map<uintptr_t, Mapping> mappings_;  // by inaccessible base address
};

}  // namespace concord
