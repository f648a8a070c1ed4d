#include "device/device_set.h"

#include "common/enforce.h"
#include "device/cuda_status.h"
#include "device/emulated_device.h"

namespace concord {

DeviceSet::DeviceSet(std::vector<std::shared_ptr<Device>> devices, std::string kind)
    : count_(static_cast<int>(devices.size())), kind_(std::move(kind)), made_(std::move(devices)) {}

DeviceSet::DeviceSet(int count, Factory factory, std::string kind)
    : count_(count), factory_(std::move(factory)), kind_(std::move(kind)), made_(static_cast<size_t>(count)) {}

std::shared_ptr<DeviceSet> DeviceSet::from_setting(const std::string& setting) {
  if (setting == "none") return std::make_shared<DeviceSet>();
  if (setting == "emulated")
    return std::make_shared<DeviceSet>(
        1, [](int) -> std::unique_ptr<Device> { return std::make_unique<EmulatedDevice>(); }, "emulated");
  CONCORD_ENFORCE(setting == "auto", InvalidArgument, "CONCORD_DEVICE=", setting, ": expected auto, emulated or none");
  const CudaStatus cuda = cuda_status();
  if (cuda.devices == 0) return std::make_shared<DeviceSet>();
  return std::make_shared<DeviceSet>(
      cuda.devices, [](int index) { return make_cuda_device(index); }, "cuda");
}

std::shared_ptr<Device> DeviceSet::shared(int index) const {
  CONCORD_ENFORCE(index >= 0 && index < count_, InvalidArgument, "device ", index, " does not exist: this process has ",
                  count_, " device(s) (", describe(), ")");
  std::lock_guard<std::mutex> lock(mutex_);
  auto& device = made_.at(static_cast<size_t>(index));
  if (!device) device = factory_(index);
  return device;
}

std::string DeviceSet::name(int index) const {
  if (index == kHostMemory) return "cpu";
  return kind_ + ":" + std::to_string(index);
}

int DeviceSet::locate(const void* data) const {
  if (data == nullptr) return kHostMemory;
  for (int index = 0; index < count_; ++index)
    if (at(index).owns(data)) return index;
  return kHostMemory;
}

PointerCacheStats DeviceSet::pointer_cache_stats() const {
  PointerCacheStats total;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& device : made_) {
    if (!device) continue;
    const PointerCacheStats one = device->pointer_cache_stats();
    total.hits += one.hits;
    total.misses += one.misses;
    total.queries += one.queries;
    total.entries += one.entries;
  }
  return total;
}

std::string DeviceSet::describe() const {
  if (count_ == 0) return "no device: CONCORD_DEVICE=none, or no usable CUDA device with CONCORD_DEVICE=auto";
  return std::to_string(count_) + " " + kind_ + " device(s)";
}

}  // namespace concord
