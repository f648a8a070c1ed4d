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

namespace concord {

class EmulatedDevice : public Device {
 public:
  /// `strict` = false hands out ordinary host memory as device memory (for debugging).
  explicit EmulatedDevice(bool strict = true);

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

 private:
  bool strict_;
  EmulatedMemory memory_;
};

}  // namespace concord
