#include "runtime/device_path.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <functional>
#include <numeric>

#include "common/enforce.h"
#include "device/device_registry.h"
#include "runtime/fused_completion.h"

namespace concord {

DevicePath::DevicePath(std::shared_ptr<Device> device, int index, const AlgorithmContext& context, Timeline& timeline)
    : owner_(std::move(device)),
      device_(*owner_),
      index_(index),
      context_(context),
      timeline_(timeline),
      stream_(device_.create_stream()),
      packed_(device_.create_event()) {}

DevicePath::~DevicePath() {
  try {  // copies may still use the staging buffer (an operation abandoned after an error)
    stream_->synchronize();
  } catch (...) {
  }
  instances_.clear();
  for (void* host : host_) device_.free_host(host);
}

void DevicePath::mark(const Response& response, const char* activity) {
  if (!timeline_.active()) return;
  for (const auto& name : response.names) timeline_.activity_start(name, activity);
}

void DevicePath::unmark(const Response& response) {
  if (!timeline_.active()) return;
  for (const auto& name : response.names) timeline_.activity_end(name);
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

uint8_t* DevicePath::device_fusion(size_t bytes) {
  if (fusion_buffer_.bytes() < bytes) {
    stream_->synchronize();
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
    uint8_t* packed = device_fusion(bytes);
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
    uint8_t* staged = device_fusion(bytes);
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

AllreduceAlgorithm& DevicePath::algorithm(const Problem& problem, std::string& activity) {
  // Collective the first time (every rank reaches its first device response together).
  if (!capabilities_) capabilities_ = agree_device_capabilities(context_.comm, device_);
  size_t chunk = 0;
  const DeviceAllreduceEntry& best = select_device_algorithm(DeviceProblem{problem, *capabilities_},
                                                             context_.cost_params, StagingParams(), "", &chunk);
  activity = "ALLREDUCE_DEVICE_" + best.name;
  std::transform(activity.begin(), activity.end(), activity.begin(), [](unsigned char c) { return std::toupper(c); });
  auto& instance = instances_[best.name + ":" + std::to_string(chunk)];
  if (!instance) instance = best.create(context_, device_, chunk);
  return *instance;
}

void DevicePath::allreduce(const Response& response, std::vector<TensorEntry>& entries, std::vector<bool>& completed,
                           ReduceOp op, double prescale, double postscale) {
  const DataType dtype = response.dtype;
  const size_t element = dtype_size(dtype);
  std::vector<size_t> tensor_bytes(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) tensor_bytes[i] = static_cast<size_t>(response.sizes[i]) * element;
  const size_t total_bytes = std::accumulate(tensor_bytes.begin(), tensor_bytes.end(), size_t{0});
  const size_t total = total_bytes / element;
  uint8_t* buffer = nullptr;
  // Host-side failures must not leave copies running into the callers' tensors.
  try {
    if (entries.size() == 1) {  // the output is the algorithm's buffer
      buffer = static_cast<uint8_t*>(entries[0].output.data);
      if (prescale != 1.0 && total > 0) {
        stream_->scale(buffer, entries[0].input.data, total, dtype, prescale);
      } else if (prescale == 1.0 && entries[0].input.data != buffer && total > 0) {
        stream_->copy(buffer, entries[0].input.data, total_bytes, CopyKind::kDeviceToDevice);
      }
    } else {  // pack into the fusion buffer on the device
      mark(response, "MEMCPY_IN_FUSION_BUFFER");
      buffer = device_fusion(total_bytes);
      std::vector<CopySpan> spans;
      size_t offset = 0;
      for (size_t i = 0; i < entries.size(); ++i) {
        if (tensor_bytes[i] > 0 && prescale != 1.0) {
          stream_->scale(buffer + offset, entries[i].input.data, tensor_bytes[i] / element, dtype, prescale);
        } else if (tensor_bytes[i] > 0) {
          spans.push_back(CopySpan{buffer + offset, entries[i].input.data, tensor_bytes[i]});
        }
        offset += tensor_bytes[i];
      }
      if (!spans.empty()) stream_->copy_batch(spans, CopyKind::kDeviceToDevice);
    }
    // The algorithm's own streams read the buffer: its packing must be complete.
    stream_->record(*packed_);
    packed_->synchronize();
    if (entries.size() > 1) unmark(response);

    std::string activity;
    auto& algorithm = this->algorithm(make_problem(context_, total, dtype, op), activity);
    mark(response, activity.c_str());
    algorithm.start(buffer, total, dtype, op);
    if (entries.size() == 1) {
      run_to_completion(algorithm);
      unmark(response);
      if (postscale != 1.0 && total > 0) stream_->scale(buffer, buffer, total, dtype, postscale);
      stream_->synchronize();
      return;
    }

    // Fused: copy each batch of final tensors out, complete them once its event is done.
    std::vector<size_t> start(entries.size(), 0);
    for (size_t i = 1; i < entries.size(); ++i) start[i] = start[i - 1] + tensor_bytes[i - 1];
    struct CopyOut {
      std::unique_ptr<Event> done;
      std::vector<size_t> tensors;
    };
    std::deque<CopyOut> copies;
    const auto complete = [&](bool block) {
      while (!copies.empty()) {
        CopyOut& front = copies.front();
        if (block) front.done->synchronize();
        else if (!front.done->query()) return;
        for (size_t i : front.tensors) {
          if (timeline_.active()) timeline_.activity_end(response.names[i]);
          entries[i].handle->complete();
          completed[i] = true;
        }
        copies.pop_front();
      }
    };
    drive_fused(
        algorithm, tensor_bytes,
        [&](const std::vector<size_t>& tensors) {
          std::vector<CopySpan> spans;
          for (size_t i : tensors) {
            if (timeline_.active()) {
              timeline_.activity_end(response.names[i]);  // the algorithm's activity
              timeline_.activity_start(response.names[i], "MEMCPY_OUT");
            }
            if (tensor_bytes[i] > 0 && postscale != 1.0) {
              stream_->scale(entries[i].output.data, buffer + start[i], tensor_bytes[i] / element, dtype, postscale);
            } else if (tensor_bytes[i] > 0) {
              spans.push_back(CopySpan{entries[i].output.data, buffer + start[i], tensor_bytes[i]});
            }
          }
          if (!spans.empty()) stream_->copy_batch(spans, CopyKind::kDeviceToDevice);
          CopyOut copy{device_.create_event(), tensors};
          stream_->record(*copy.done);
          copies.push_back(std::move(copy));
          complete(false);
        },
        [&] { complete(false); });
    complete(true);
  } catch (...) {
    try {
      stream_->synchronize();
    } catch (...) {
    }
    throw;
  }
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
