// mpi_cuda_support() (transport/device_pointers.h): the single place that depends on Open
// MPI's CUDA extension being present at build time. mpi-ext.h is Open MPI's; MPICH and
// builds without the extension answer "no" with the reason.
#include <mpi.h>

#include <string>

#include "transport/device_pointers.h"

#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

namespace concord {

DevicePointerSupport mpi_cuda_support() {
  int initialized = 0;
  MPI_Initialized(&initialized);
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  // MPIX_CUDA_AWARE_SUPPORT is what the headers were built with; the run-time query is
  // what the loaded library (and its MCA settings) actually do.
  const int built = MPIX_CUDA_AWARE_SUPPORT;
  if (!initialized) {  // Open MPI sets the run-time flag during MPI_Init
    if (built == 0) {
      return {false, "MPI was built without CUDA support (MPIX_CUDA_AWARE_SUPPORT = 0; asked before MPI_Init)"};
    }
    return {false, "built with MPIX_CUDA_AWARE_SUPPORT = 1; MPIX_Query_cuda_support() answers only after MPI_Init"};
  }
  const int now = MPIX_Query_cuda_support();
  const std::string detail = "MPIX_Query_cuda_support() = " + std::to_string(now) +
                             ", built with MPIX_CUDA_AWARE_SUPPORT = " + std::to_string(built);
  if (now == 1) return {true, "CUDA-aware MPI: " + detail};
  return {false, "MPI is not CUDA-aware: " + detail};
#else
  (void)initialized;
  return {false, "MPI has no CUDA extension (no MPIX_Query_cuda_support in mpi-ext.h at build time)"};
#endif
}

}  // namespace concord
