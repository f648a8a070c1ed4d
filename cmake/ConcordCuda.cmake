# Resolves CONCORD_WITH_CUDA (AUTO|ON|OFF) into CONCORD_CUDA_ENABLED and, when enabled,
# enables the CUDA language for sm_80 and sm_90 only (CI compiles every .cu on 2 cores).
# Nothing links the driver stub (libcuda.so): the runtime library is linked statically and
# driver functions are looked up at run time (src/device/cuda/driver_api.cc).
string(TOUPPER "${CONCORD_WITH_CUDA}" _concord_cuda_mode)
set(CONCORD_CUDA_ENABLED OFF)
if(NOT _concord_cuda_mode STREQUAL "OFF")
  if(NOT _concord_cuda_mode MATCHES "^(AUTO|ON)$")
    message(FATAL_ERROR "CONCORD_WITH_CUDA must be AUTO, ON or OFF (got '${CONCORD_WITH_CUDA}')")
  endif()
  find_package(CUDAToolkit QUIET)
  include(CheckLanguage)
  check_language(CUDA)
  if(CUDAToolkit_FOUND AND CMAKE_CUDA_COMPILER)
    set(CONCORD_CUDA_ENABLED ON)
  elseif(_concord_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "CONCORD_WITH_CUDA=ON but the CUDA toolkit or nvcc was not found "
                        "(CUDAToolkit_FOUND=${CUDAToolkit_FOUND}, nvcc=${CMAKE_CUDA_COMPILER})")
  endif()
endif()
if(CONCORD_CUDA_ENABLED)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  find_path(CONCORD_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(CONCORD_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib)
  message(STATUS "Concord: CUDA device layer ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}, NCCL: ${CONCORD_NCCL_LIBRARY})")
else()
  message(STATUS "Concord: CUDA device layer OFF (CONCORD_WITH_CUDA=${CONCORD_WITH_CUDA})")
endif()
