#include "device/emulated_device.h"

#include <cstdlib>

#include "common/enforce.h"
#include "device/emulated_stream.h"

namespace concord {

std::optional<DeviceAllocation> EmulatedAttributeProvider::query(const void* data) {
  const EmulatedMemory::Range range = memory_.allocation(data);
  if (range.bytes == 0) return std::nullopt;
  return DeviceAllocation{range.base, range.bytes, 0, 0};
}

EmulatedDevice::EmulatedDevice(bool strict, bool registers_allocations)
    : strict_(strict), registers_allocations_(registers_allocations) {
  pointers_.set_tracks_all(registers_allocations);
}

std::string EmulatedDevice::name() const { return strict_ ? "emulated (strict)" : "emulated"; }

void* EmulatedDevice::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* data = strict_ ? memory_.allocate(bytes) : std::calloc(1, bytes);
  CONCORD_ENFORCE(data != nullptr, DeviceError, "emulated device: out of memory allocating ", bytes, " bytes");
  if (registers_allocations_) pointers_.notify_alloc({reinterpret_cast<uintptr_t>(data), bytes, 0, 0});
  return data;
}

void EmulatedDevice::free(void* data) {
  if (data == nullptr) return;
  pointers_.notify_free(data);             // before the address can be reused (unknown bases are ignored)
  if (strict_) return memory_.free(data);  // InvalidArgument for an address allocate() did not return
  std::free(data);
}

void* EmulatedDevice::allocate_host(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  CONCORD_ENFORCE(data != nullptr, DeviceError, "emulated device: out of host memory allocating ", bytes, " bytes");
  return data;
}

void EmulatedDevice::free_host(void* data) { std::free(data); }

std::unique_ptr<Stream> EmulatedDevice::create_stream() {
  return std::make_unique<EmulatedStream>(strict_ ? &memory_ : nullptr);
}

std::unique_ptr<Event> EmulatedDevice::create_event() { return std::make_unique<EmulatedEvent>(); }

}  // namespace concord
