#include "device/emulated_device.h"

#include <cstdlib>

#include "common/enforce.h"
#include "device/emulated_stream.h"

namespace concord {

EmulatedDevice::EmulatedDevice(bool strict) : strict_(strict) {}

std::string EmulatedDevice::name() const { return strict_ ? "emulated (strict)" : "emulated"; }

void* EmulatedDevice::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  if (strict_) return memory_.allocate(bytes);
  void* data = std::calloc(1, bytes);
  CONCORD_ENFORCE(data != nullptr, DeviceError, "emulated device: out of memory allocating ", bytes, " bytes");
  return data;
}

void EmulatedDevice::free(void* data) {
  if (data == nullptr) return;
  if (strict_) return memory_.free(data);
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
