#include "runtime/device_path.h"

#include <algorithm>
#include <functional>

#include "common/enforce.h"

namespace concord {

DevicePath::DevicePath(std::shared_ptr<Device> device, int index, const AlgorithmContext& context)
    : owner_(std::move(device)),
      device_(*owner_),
      index_(index),
      context_(context),
      stream_(device_.create_stream()),
      kernels_(device_) {}

DevicePath::~DevicePath() {
  try {  // copies may still use the staging buffer (an operation abandoned after an error)
    stream_->synchronize();
  } catch (...) {
  }
  for (void* host : host_) device_.free_host(host);
}

void* DevicePath::host_staging(size_t bytes, int slot) {
  if (bytes > host_bytes_[slot]) {
    stream_->synchronize();
    device_.free_host(host_[slot]);
    host_[slot] = nullptr;
    host_bytes_[slot] = 0;
    host_[slot] = device_.allocate_host(bytes);
    host_bytes_[slot] = bytes;
  }
  return host_[slot];
}

uint8_t* DevicePath::staging(size_t bytes, int slot) { return static_cast<uint8_t*>(host_staging(bytes, slot)); }

namespace {
std::vector<CopySpan> non_empty(const std::vector<CopySpan>& spans) {
  std::vector<CopySpan> kept;
  for (const CopySpan& span : spans)
    if (span.bytes > 0) kept.push_back(span);
  return kept;
}
}  // namespace

uint8_t* DevicePath::fusion(size_t bytes) {
  if (fusion_buffer_.bytes() < bytes) {
    stream_->synchronize();
    kernels_.synchronize();
    fusion_buffer_ = DeviceBuffer();
    fusion_buffer_ = DeviceBuffer(device_, bytes);
  }
  return static_cast<uint8_t*>(fusion_buffer_.data());
}

void DevicePath::run_and_wait(const std::function<void()>& enqueue) {
  try {
    enqueue();
    stream_->synchronize();
  } catch (...) {  // no copy may still run into the callers' memory after a failure
    try {
      stream_->synchronize();
    } catch (...) {
    }
    throw;
  }
}

namespace {

// The host bytes [begin, end) that `spans` touch on their host side (dst: `host_is_dst`),
// and whether one DMA of that range (through the device fusion buffer) is worth it: more
// than one span, and the range at most twice the spans' bytes (gaps travel too).
struct HostRange {
  uint8_t* begin = nullptr;
  uint8_t* end = nullptr;
  bool one_copy = false;
};

HostRange host_range(const std::vector<CopySpan>& spans, bool host_is_dst) {
  HostRange range;
  size_t total = 0;
  for (const CopySpan& span : spans) {
    auto* host = static_cast<uint8_t*>(host_is_dst ? span.dst : const_cast<void*>(span.src));
    if (range.begin == nullptr || host < range.begin) range.begin = host;
    if (range.end == nullptr || host + span.bytes > range.end) range.end = host + span.bytes;
    total += span.bytes;
  }
  range.one_copy = spans.size() > 1 && static_cast<size_t>(range.end - range.begin) <= 2 * total;
  return range;
}

}  // namespace

void DevicePath::copy_in(const std::vector<CopySpan>& spans, DataType dtype, double factor) {
  std::vector<CopySpan> staged = non_empty(spans);
  if (staged.empty()) return;
  const HostRange range = host_range(staged, true);
  if (range.one_copy) {  // pack on the device (one batched kernel), then one d2h DMA
    const size_t bytes = static_cast<size_t>(range.end - range.begin);
    uint8_t* packed = fusion(bytes);
    std::vector<CopySpan> on_device = staged;
    for (CopySpan& span : on_device) span.dst = packed + (static_cast<uint8_t*>(span.dst) - range.begin);
    run_and_wait([&] {
      stream_->copy_batch(on_device, CopyKind::kDeviceToDevice);
      stream_->copy(range.begin, packed, bytes, CopyKind::kDeviceToHost);
    });
  } else {
    run_and_wait([&] { stream_->copy_batch(staged, CopyKind::kDeviceToHost); });
  }
  if (factor == 1.0) return;
  for (CopySpan& span : staged) span.src = span.dst;  // scale the staged host bytes in place
  copy_host_spans(staged, dtype, factor);
}

void DevicePath::copy_out(const std::vector<CopySpan>& spans, DataType dtype, double factor) {
  const std::vector<CopySpan> kept = non_empty(spans);
  if (kept.empty()) return;
  if (factor != 1.0) {  // the sources are this path's staging buffers: scale them in place
    std::vector<CopySpan> staged = kept;
    for (CopySpan& span : staged) span.dst = const_cast<void*>(span.src);
    copy_host_spans(staged, dtype, factor);
  }
  const HostRange range = host_range(kept, false);
  if (range.one_copy) {  // one h2d DMA into the device fusion buffer, then one batched kernel
    const size_t bytes = static_cast<size_t>(range.end - range.begin);
    uint8_t* staged = fusion(bytes);
    std::vector<CopySpan> on_device = kept;
    for (CopySpan& span : on_device) span.src = staged + (static_cast<const uint8_t*>(span.src) - range.begin);
    run_and_wait([&] {
      stream_->copy(staged, range.begin, bytes, CopyKind::kHostToDevice);
      stream_->copy_batch(on_device, CopyKind::kDeviceToDevice);
    });
  } else {
    run_and_wait([&] { stream_->copy_batch(kept, CopyKind::kHostToDevice); });
  }
}

void* DevicePath::allocate_output(HandleState& handle, size_t bytes) {
  handle.output_device = owner_;
  handle.output_device_index = index_;
  handle.output_buffer = DeviceBuffer(device_, bytes);
  return handle.output_buffer.data();
}

const DeviceCapabilities& DevicePath::capabilities() {
  if (!capabilities_) capabilities_ = agree_device_capabilities(context_.comm, device_);
  return *capabilities_;
}

void DevicePath::broadcast(TensorEntry& entry, size_t bytes, int root, BroadcastAlgorithm& algorithm) {
  void* host = host_staging(bytes);
  const bool is_root = context_.comm.rank() == root;
  try {
    if (is_root && bytes > 0) {
      stream_->copy(host, entry.output.data, bytes, CopyKind::kDeviceToHost);
      stream_->synchronize();
    }
    algorithm.start(host, bytes, root);
    run_to_completion(algorithm);
    if (!is_root && bytes > 0) {
      stream_->copy(entry.output.data, host, bytes, CopyKind::kHostToDevice);
      stream_->synchronize();
    }
  } catch (...) {
    try {
      stream_->synchronize();
    } catch (...) {
    }
    throw;
  }
}

}  // namespace concord
