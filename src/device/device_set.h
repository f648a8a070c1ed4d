// DeviceSet: the devices a runtime's tensors may live on, by the index TensorView::device
// carries (docs/architecture.md, "Device layer"). The runtime and the executor see only
// the Device interface; which implementation stands behind an index is decided here, once:
// CONCORD_DEVICE=auto gives the CUDA devices (ordinal = index) when CUDA is built and a
// device is usable, emulated gives one strict EmulatedDevice as device 0 (the GPU data
// path exercised without a GPU), none gives no device. Tests inject their own devices.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device.h"

namespace concord {

class DeviceSet {
 public:
  /// Makes a device on first use of an index (e.g. CudaDevice(ordinal)); throws DeviceError.
  using Factory = std::function<std::unique_ptr<Device>(int index)>;

  /// No device: every device index is rejected.
  DeviceSet() = default;
  /// `devices` are devices 0, 1, ... (shared with the caller, e.g. a test filling them),
  /// named "<kind>:<index>".
  explicit DeviceSet(std::vector<std::shared_ptr<Device>> devices, std::string kind = "device");
  /// `count` devices made by `factory` when first used.
  DeviceSet(int count, Factory factory, std::string kind);

  /// From Config::device ("auto", "emulated" or "none"; see the file comment). Throws
  /// InvalidArgument naming CONCORD_DEVICE for any other value.
  static std::shared_ptr<DeviceSet> from_setting(const std::string& setting);

  /// Number of devices.
  int count() const { return count_; }
  /// Device `index`, made on first use. Throws InvalidArgument naming the index and the
  /// count when there is no such device, DeviceError when it cannot be made.
  Device& at(int index) const { return *shared(index); }
  /// at(index) as a shared pointer, for owners of device memory that may outlive the set
  /// (a handle's allgather result).
  std::shared_ptr<Device> shared(int index) const;
  /// "cpu" for kHostMemory, else "<kind>:<index>" (e.g. "cuda:1", "emulated:0") -- the
  /// name negotiation compares and error messages print.
  std::string name(int index) const;
  /// "CONCORD_DEVICE=emulated: 1 device (emulated)"-style line for logs and concord-info.
  std::string describe() const;

  /// The index of the device whose memory `data` points into, or kHostMemory when no
  /// device claims it (null is host memory): asks each device's Device::owns(), i.e. its
  /// pointer cache, in index order (making devices not yet made). Resolves
  /// TensorView::device == kDetectDevice. Throws DeviceError when a driver cannot tell.
  int locate(const void* data) const;
  /// The pointer-cache counters of the devices made so far, summed.
  PointerCacheStats pointer_cache_stats() const;

 private:
  int count_ = 0;
  Factory factory_;
  std::string kind_ = "none";
  mutable std::mutex mutex_;  // guards made_
  mutable std::vector<std::shared_ptr<Device>> made_;
};

/// A CudaDevice for `ordinal` in CUDA builds (device/cuda/make_cuda_device.cc); elsewhere
/// throws DeviceError "CUDA: not built" (device/make_cuda_device_off.cc).
std::unique_ptr<Device> make_cuda_device(int ordinal);

}  // namespace concord
