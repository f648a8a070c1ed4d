// DeviceKernels: the Kernels (algorithms/kernels.h) of one device -- every reduction, copy
// and scaling is a kernel (or d2d copy) on one stream of the device, followed by an event
// recorded on that stream; a ticket is done once its event has completed (the stream runs
// in order, so so is every earlier ticket). Events come from a pool that grows to the
// number of tickets in flight. scratch() is device memory. Completion is tracked with
// events, never with device-wide synchronisation (Awan et al., CCGrid 2019).
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "algorithms/kernels.h"
#include "device/device.h"

namespace concord {

class DeviceKernels : public Kernels {
 public:
  /// Kernels on `device` (which must outlive this object), on a stream of their own.
  explicit DeviceKernels(Device& device);
  /// Waits for the work in flight (kernels of an abandoned operation may still read the
  /// scratch or the caller's buffers).
  ~DeviceKernels() override;

  Ticket reduce(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) override;
  Ticket copy(void* dst, const void* src, size_t bytes) override;
  Ticket copy_batch(const std::vector<CopySpan>& spans) override;
  Ticket scale(void* dst, const void* src, size_t count, DataType dtype, double factor) override;
  bool done(Ticket ticket) override;
  void synchronize() override;
  uint8_t* scratch(size_t bytes) override;

  Device& device() const { return device_; }

 private:
  Ticket record();  // an event after the work posted so far

  struct InFlight {
    Ticket ticket;
    std::unique_ptr<Event> event;
  };
  Device& device_;
  std::unique_ptr<Stream> stream_;
  std::deque<InFlight> in_flight_;            // in posting order
  std::vector<std::unique_ptr<Event>> free_;  // completed, to be recorded again
  Ticket last_posted_ = 0;
  Ticket last_done_ = 0;
  DeviceBuffer scratch_;
};

}  // namespace concord
