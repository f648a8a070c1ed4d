// StagingCommunicator: a transport decorator (transport/forwarding_communicator.h) that takes
// device pointers by moving their bytes through the device interface -- what a CUDA-aware MPI does inside when it has no GPUDirect
// (Awan et al., CCGrid 2019, "Scalable Distributed DNN Training using TensorFlow and
// CUDA-Aware MPI": device buffers staged through pinned host memory). It wraps any
// Communicator (MPI, in-process) and is itself one, reporting device pointers as
// supported (DevicePointerTransport), so the algorithms that run on device buffers
// (AllreduceRing with the device's kernels, algorithms/kernels.h) run over it exactly as
// over a CUDA-aware MPI:
//   isend(device pointer): d2h copy into a pinned bounce buffer on the send stream; the
//     message is posted once the copy's event completes. Sends are posted in the order
//     they were issued (MPI's non-overtaking rule holds across the wrapper).
//   irecv(device pointer): received into a pinned bounce buffer; once it arrives an h2d
//     copy on the receive stream moves it to the device; test() is true once that copy
//     is done, so a completed receive's bytes are in device memory (CUDA-aware MPI
//     semantics).
// Host pointers pass straight through (in issue order with the staged sends); everything
// else is the wrapped communicator's. Uses: the GPU-reduction variant of the staged
// allreduce ("staged_gpu": the ring's peer chunks are copied up and reduced by the
// device's kernel) on any MPI, and the tests of the CUDA-aware path on the strict
// emulated device (docs/algorithms.md, "Device buffers").
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "device/device.h"
#include "transport/device_pointers.h"
#include "transport/forwarding_communicator.h"

namespace concord {

class StagingCommunicator : public ForwardingCommunicator, public DevicePointerTransport {
 public:
  /// Wraps `inner` (which must outlive this object) for device memory of `device`.
  StagingCommunicator(Communicator& inner, Device& device);
  /// Owns `inner` (split() children).
  StagingCommunicator(std::unique_ptr<Communicator> inner, Device& device);
  /// Waits for the copies in flight (requests must be complete or abandoned).
  ~StagingCommunicator() override;

  /// As PointToPoint::isend; `data` may be device memory of the device. The returned
  /// request must not outlive this communicator. Throws DeviceError when a copy fails.
  RequestPtr isend(const void* data, size_t bytes, int peer, int tag) override;
  /// As PointToPoint::irecv; `data` may be device memory of the device.
  RequestPtr irecv(void* data, size_t bytes, int peer, int tag) override;
  /// None: the wrapped transport's native collectives would be handed device pointers.
  NativeCollectives* native() override { return nullptr; }
  /// Supported, "staged through pinned host memory by Concord (<device name>)".
  DevicePointerSupport device_pointer_support() const override;

  /// Advances the staged sends: posts, in issue order, every send whose d2h copy is done.
  /// Called by every test() of this communicator's requests.
  void pump();

 private:
  std::unique_ptr<Communicator> wrap(std::unique_ptr<Communicator> child) override;
  struct PendingSend;
  class SendRequest;
  class ReceiveRequest;
  // A pinned buffer of at least `bytes` bytes (reused; power-of-two sizes).
  void* acquire(size_t bytes);
  void release(void* data);

  Device& device_;
  std::unique_ptr<Stream> down_;                    // d2h of sends
  std::unique_ptr<Stream> up_;                      // h2d of receives
  std::deque<std::shared_ptr<PendingSend>> queue_;  // issued, not yet posted, in order
  std::multimap<size_t, void*> free_;               // pinned buffers by size
  std::map<void*, size_t> sizes_;                   // every pinned buffer we own
};

}  // namespace concord
