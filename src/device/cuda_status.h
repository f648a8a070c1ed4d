// Whether this build has the CUDA device layer and whether a GPU is usable at run time.
// Implemented by device/cuda/cuda_status.cc in CUDA builds (CONCORD_WITH_CUDA) and by
// device/cuda_status_off.cc otherwise; concord-info and the CUDA test suites read it.
#pragma once

#include <string>

namespace concord {

struct CudaStatus {
  bool built = false;  ///< compiled with CONCORD_WITH_CUDA
  int devices = 0;     ///< usable devices (0 when none or not built)
  std::string reason;  ///< why none is usable (the CUDA runtime's error), else empty

  /// "CUDA: not built", "CUDA: built, no usable device (<reason>)" or
  /// "CUDA: built, <n> device(s)".
  std::string summary() const;
};

/// Asks the CUDA runtime (once per call; never throws).
CudaStatus cuda_status();

}  // namespace concord
