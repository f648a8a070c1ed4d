// Device pointers on the wire: whether a transport accepts GPU (device) memory in isend/irecv
// directly -- a CUDA-aware MPI does ("Scalable Distributed DNN Training using TensorFlow
// and CUDA-Aware MPI", Awan et al., CCGrid 2019), Debian's Open MPI does not. A transport
// that can tell implements DevicePointerTransport next to Communicator (after
// NativeCollectives: only a transport that has the capability offers it); the others move
// host memory only. The device-buffer algorithms ask device_pointer_support() before
// handing a device pointer to a communicator (docs/algorithms.md, "Device buffers").
#pragma once

#include <string>

namespace concord {

class Communicator;

/// Whether isend/irecv take device memory, and why (not).
struct DevicePointerSupport {
  bool supported = false;
  std::string reason;  ///< e.g. "MPIX_Query_cuda_support() = 0" or how device memory is moved

  /// "yes (<reason>)" or "no (<reason>)".
  std::string summary() const { return (supported ? "yes (" : "no (") + reason + ")"; }
};

/// Implemented by transports that know whether they take device pointers.
class DevicePointerTransport {
 public:
  virtual ~DevicePointerTransport() = default;
  /// Never throws; the same answer for the communicator's lifetime.
  virtual DevicePointerSupport device_pointer_support() const = 0;
};

/// What `comm` says when it implements DevicePointerTransport; otherwise not supported
/// ("<transport> moves host memory only"). Local (not collective): ranks may disagree,
/// callers that select an algorithm by it agree first (algorithms/device_capabilities.h).
DevicePointerSupport device_pointer_support(const Communicator& comm);

/// Whether the MPI library takes CUDA device pointers, asked at run time through Open
/// MPI's MPIX_Query_cuda_support() (mpi-ext.h). The only place that knows whether the
/// extension exists at build time (transport/mpi_cuda_support.cc): without it the answer
/// is "no" with that reason. Open MPI sets the run-time flag during MPI_Init: before it
/// the answer is "no", with the build-time value of MPIX_CUDA_AWARE_SUPPORT as the reason
/// (0: the library was built without CUDA support). Never throws, initialises nothing.
DevicePointerSupport mpi_cuda_support();

}  // namespace concord
