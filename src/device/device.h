// The device layer (docs/architecture.md, "Device layer"): what Concord's data path needs
// from an accelerator, and nothing more. Device memory is opaque to the caller: it is
// only ever handed to a Stream (copies, kernels), never dereferenced on the host. A Stream
// runs its operations in order, asynchronously to the caller; an Event marks a point in a
// stream that the host or another stream can wait for (completion is tracked with events,
// never with device-wide synchronisation: Awan et al., "Scalable Distributed DNN Training
// using TensorFlow and CUDA-Aware MPI", CCGrid 2019).
//
// Implementations: EmulatedDevice (device/emulated_device.h; worker threads as streams,
// "device memory" inaccessible to the host) and CudaDevice (device/cuda/cuda_device.h).
// Kernels are bit-identical to the CPU kernels of common/reduce.h on every implementation.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "concord/types.h"
#include "device/device_error.h"

namespace concord {

/// Direction of a copy. Host memory is pageable or pinned (Device::allocate_host).
enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };

/// "h2d", "d2h" or "d2d".
const char* copy_kind_name(CopyKind kind);

/// One piece of a batched copy: `bytes` bytes from `src` to `dst`.
struct CopySpan {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t bytes = 0;
};

/// A point in a stream. record() on a stream captures everything enqueued on it so far.
class Event {
 public:
  virtual ~Event() = default;
  /// Blocks the caller until the recorded work is done (returns at once if never
  /// recorded). Throws DeviceError when the device reported a failure.
  virtual void synchronize() = 0;
  /// True when the recorded work is done; never blocks.
  virtual bool query() = 0;
};

/// An in-order queue of device work. Every call only enqueues; pointers must stay valid
/// (and host buffers unchanged) until the work is done, i.e. until an event recorded after
/// it completes. Counts are elements, sizes bytes. Throws DeviceError on a device failure
/// and InvalidArgument on a bad argument (unknown dtype/op).
class Stream {
 public:
  virtual ~Stream() = default;
  /// Copies `bytes` bytes. `kind` says where dst and src live.
  virtual void copy(void* dst, const void* src, size_t bytes, CopyKind kind) = 0;
  /// Many small copies of one kind in one launch (packing tensors into the fusion buffer
  /// and out of it). Spans must not overlap each other's destinations.
  virtual void copy_batch(const std::vector<CopySpan>& spans, CopyKind kind) = 0;
  /// dst[i] = op(a[i], src[i]) on device memory (common/reduce.h's reduce_into rules: dst
  /// may be a, or src -- a received operand reduced where it lies -- but overlap neither
  /// otherwise).
  virtual void reduce_into(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) = 0;
  /// dst[i] = op(dst[i], src[i]): reduce_into(dst, dst, src, ...).
  void reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op) {
    reduce_into(dst, dst, src, count, dtype, op);
  }
  /// dst[i] = src[i] * factor on device memory (common/reduce.h's scale_buffer rules).
  virtual void scale(void* dst, const void* src, size_t count, DataType dtype, double factor) = 0;
  /// Captures the work enqueued so far in `event`.
  virtual void record(Event& event) = 0;
  /// Work enqueued after this call starts only once `event`'s recorded work is done.
  virtual void wait(Event& event) = 0;
  /// Blocks the caller until all enqueued work is done.
  virtual void synchronize() = 0;
  /// The cudaStream_t of a CUDA stream, for libraries that enqueue on it themselves (NCCL);
  /// nullptr for a stream that is not a CUDA stream (the emulation).
  virtual void* cuda_stream() { return nullptr; }
};

/// One accelerator (or its emulation).
class Device {
 public:
  virtual ~Device() = default;
  /// E.g. "emulated" or "cuda:0 (NVIDIA H100 80GB HBM3)".
  virtual std::string name() const = 0;
  /// `bytes` bytes of device memory (nullptr for 0). Throws DeviceError when out of memory.
  virtual void* allocate(size_t bytes) = 0;
  /// Frees what allocate() returned (nullptr is ignored). The caller has synchronised all
  /// work that uses it.
  virtual void free(void* data) = 0;
  /// `bytes` bytes of page-locked host memory for staging (host-accessible).
  virtual void* allocate_host(size_t bytes) = 0;
  virtual void free_host(void* data) = 0;
  virtual std::unique_ptr<Stream> create_stream() = 0;
  virtual std::unique_ptr<Event> create_event() = 0;
  /// True when `data` points into memory allocate() returned (device memory the host
  /// cannot touch); false for host memory. Never throws.
  virtual bool is_device_pointer(const void* data) const = 0;
  /// True when `data` points into memory of this device (what allocate() returned and, on
  /// CUDA, any allocator's memory on this GPU), as the device's pointer cache answers
  /// (device/pointer_cache.h): a cached allocation is a hit without a driver call; a miss
  /// is host memory without a query where the device registers every allocation (the
  /// emulation: tracks_all), else one driver query that caches a device allocation. The
  /// runtime's kDetectDevice (concord/types.h) asks this. Thread-safe. Throws DeviceError
  /// when the driver cannot tell.
  virtual bool owns(const void* data) const = 0;
  /// The counters of the pointer cache owns() uses.
  virtual PointerCacheStats pointer_cache_stats() const = 0;
  /// The CUDA device ordinal, or -1 for a device that is not a CUDA GPU (the emulation).
  virtual int cuda_ordinal() const { return -1; }
  /// Which physical device this is, the same string in every process that uses it
  /// (CUDA: "<hostname>/<PCI bus id>", so CUDA_VISIBLE_DEVICES renumbering does not
  /// matter); "" for the emulation. NCCL needs a different one on every rank.
  virtual std::string hardware_id() const { return ""; }
};

/// Owns device memory from `device` (freed on destruction); move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& device, size_t bytes) : device_(&device), data_(device.allocate(bytes)), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    DeviceBuffer(std::move(other)).swap(*this);
    return *this;
  }
  ~DeviceBuffer() {
    if (device_ != nullptr) device_->free(data_);
  }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void swap(DeviceBuffer& other) noexcept {
    std::swap(device_, other.device_);
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
  }
  Device* device_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace concord
