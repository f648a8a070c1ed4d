// DirectCommunicator: a transport decorator (transport/forwarding_communicator.h), CUDA-aware
// for ranks that share one address space (the in-process transport's threads): a message
// between device buffers is copied device-to-device by the receiver's stream straight from
// the sender's buffer -- what a CUDA-aware MPI does between GPUs of one node over CUDA IPC /
// NVLink (Awan et al., CCGrid 2019). No staging through host memory. Over the wrapped communicator only a 24-byte
// descriptor travels (address, bytes, and the sender's completion flag), with the
// message's own tag, so MPI's matching order holds; the receiver enqueues the d2d copy
// once the descriptor arrived, and sets the sender's flag once the copy's event has
// completed: the sender's request completes then (its buffer may be reused).
//
// Both sides of a message must use device memory, or both host memory (host messages pass
// straight through); the device algorithms always do. Every rank's device must be able to
// copy from every other's memory: one shared EmulatedDevice, or CUDA devices of one process
// (unified addressing; peer copies between GPUs). Used by concord-gpubench-allreduce to
// run "cuda_aware" without MPI, and by the tests of that path.
#pragma once

#include <atomic>
#include <deque>
#include <memory>

#include "device/device.h"
#include "transport/device_pointers.h"
#include "transport/forwarding_communicator.h"

namespace concord {

class DirectCommunicator : public ForwardingCommunicator, public DevicePointerTransport {
 public:
  /// Wraps `inner` (an in-process communicator; must outlive this object) for device
  /// memory of `device`, whose streams must reach the other ranks' device memory.
  DirectCommunicator(Communicator& inner, Device& device);
  /// Owns `inner` (split() children: the in-process split wrapped for the same device).
  DirectCommunicator(std::unique_ptr<Communicator> inner, Device& device);
  /// Waits for the copies in flight. Peers must have completed the receives of this
  /// rank's messages (a collective that finished has).
  ~DirectCommunicator() override;

  /// Device memory: sends a descriptor; the request completes once the receiver's copy
  /// has. Host memory: the inner isend.
  RequestPtr isend(const void* data, size_t bytes, int peer, int tag) override;
  /// Device memory: receives the descriptor, copies d2d on this rank's stream; the request
  /// completes once the copy has. Throws CommError when the sizes differ.
  RequestPtr irecv(void* data, size_t bytes, int peer, int tag) override;
  /// None: the wrapped transport's native collectives would be handed device pointers.
  NativeCollectives* native() override { return nullptr; }
  /// Supported: "device-to-device copies between ranks of one process (<device>)".
  DevicePointerSupport device_pointer_support() const override;

 private:
  std::unique_ptr<Communicator> wrap(std::unique_ptr<Communicator> child) override;
  class SendRequest;
  class ReceiveRequest;
  struct Descriptor {
    uint64_t address = 0;
    uint64_t bytes = 0;
    uint64_t flag = 0;  // std::atomic<bool>* the receiver sets once its copy is done
  };

  Device& device_;
  std::unique_ptr<Stream> stream_;                        // this rank's copies (as receiver)
  std::deque<std::shared_ptr<std::atomic<bool>>> flags_;  // sends whose receiver may still write the flag
};

}  // namespace concord
