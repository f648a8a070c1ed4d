#include "algorithms/device_kernels.h"

namespace concord {

DeviceKernels::DeviceKernels(Device& device) : device_(device), stream_(device.create_stream()) {}

DeviceKernels::~DeviceKernels() {
  try {
    stream_->synchronize();
  } catch (...) {
  }
}

Kernels::Ticket DeviceKernels::record() {
  std::unique_ptr<Event> event;
  if (free_.empty()) {
    event = device_.create_event();
  } else {
    event = std::move(free_.back());
    free_.pop_back();
  }
  stream_->record(*event);
  in_flight_.push_back({++last_posted_, std::move(event)});
  return last_posted_;
}

Kernels::Ticket DeviceKernels::reduce(void* dst, const void* a, const void* src, size_t count, DataType dtype,
                                      ReduceOp op) {
  stream_->reduce_into(dst, a, src, count, dtype, op);
  return record();
}

Kernels::Ticket DeviceKernels::copy(void* dst, const void* src, size_t bytes) {
  stream_->copy(dst, src, bytes, CopyKind::kDeviceToDevice);
  return record();
}

Kernels::Ticket DeviceKernels::copy_batch(const std::vector<CopySpan>& spans) {
  stream_->copy_batch(spans, CopyKind::kDeviceToDevice);
  return record();
}

Kernels::Ticket DeviceKernels::scale(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  stream_->scale(dst, src, count, dtype, factor);
  return record();
}

bool DeviceKernels::done(Ticket ticket) {
  while (ticket > last_done_ && !in_flight_.empty() && in_flight_.front().event->query()) {
    last_done_ = in_flight_.front().ticket;
    free_.push_back(std::move(in_flight_.front().event));
    in_flight_.pop_front();
  }
  return ticket <= last_done_;
}

void DeviceKernels::synchronize() {
  stream_->synchronize();
  done(last_posted_);
}

uint8_t* DeviceKernels::scratch(size_t bytes) {
  if (scratch_.bytes() < bytes) {
    synchronize();
    scratch_ = DeviceBuffer();
    scratch_ = DeviceBuffer(device_, bytes);
  }
  return static_cast<uint8_t*>(scratch_.data());
}

}  // namespace concord
