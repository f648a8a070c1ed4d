// The part of NCCL (NVIDIA Collective Communications Library) Concord uses, behind an
// interface: the library itself, loaded with dlopen at run time (nccl_library.cc; no link
// dependency, so binaries start where libnccl.so.2 is missing), or a fake in the tests.
// Types mirror nccl.h's values (checked against nccl.h by static_assert where NCCL is
// built); no NCCL or CUDA header is needed to use this one.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "concord/types.h"

namespace concord::nccl {

/// ncclDataType_t values.
enum class Type : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
};

/// ncclRedOp_t values (the built-in ones).
enum class Op : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };

/// ncclUniqueId: 128 opaque bytes made by one rank and handed to all (over MPI).
struct UniqueId {
  static constexpr size_t kBytes = 128;
  char bytes[kBytes] = {};
};

/// ncclComm_t.
using Comm = void*;

/// "" when NCCL can allreduce `dtype` with `op` bit-compatibly with Concord's kernels,
/// otherwise why not: int16 and bool have no NCCL type (and Concord reduces no bool),
/// adasum is not element-wise, and float min/max follow NCCL's own NaN and signed-zero
/// rule, not common/reduce_ops.h's.
std::string declines(DataType dtype, ReduceOp op);
/// NCCL's type for `dtype`. Throws InvalidArgument when declines() says so.
Type type_of(DataType dtype);
/// NCCL's op for `op`: kAverage reduces as kSum (the caller scales, as for every
/// AllreduceAlgorithm). Throws InvalidArgument for kAdasum.
Op op_of(ReduceOp op);

/// NCCL's functions. Failures throw DeviceError("<function> failed: <ncclGetErrorString>").
class Api {
 public:
  virtual ~Api() = default;
  /// NCCL's version code (e.g. 22805 for 2.28.5).
  virtual int version() = 0;
  /// ncclGetUniqueId: called on one rank only.
  virtual UniqueId unique_id() = 0;
  /// cudaSetDevice(cuda_ordinal), then ncclCommInitRank (collective over the `nranks`
  /// ranks that got the same id; blocks until all joined).
  virtual Comm init_rank(int nranks, const UniqueId& id, int rank, int cuda_ordinal) = 0;
  /// ncclAllReduce of `count` elements, enqueued on the cudaStream_t `stream`.
  virtual void all_reduce(const void* send, void* recv, size_t count, Type type, Op op, Comm comm, void* stream) = 0;
  /// ncclCommDestroy; never throws (used on shutdown).
  virtual void destroy(Comm comm) noexcept = 0;
};

/// Whether this build has NCCL and whether it loads here.
struct Status {
  bool built = false;   ///< nccl.h and libnccl were found at build time (CUDA builds)
  bool loaded = false;  ///< dlopen and every symbol succeeded
  int version = 0;      ///< ncclGetVersion, when loaded
  std::string reason;   ///< why not loaded (or what was loaded)
  /// "NCCL: not built", "NCCL: built, not loaded (<reason>)" or "NCCL: 2.28.9 (<path>)".
  std::string summary() const;
};

/// The process's NCCL library, loaded on first use (dlopen of libnccl.so.2, then the path
/// found at build time), or nullptr with `status` saying why. Thread-safe; the library
/// stays loaded until exit.
Api* library(Status* status = nullptr);

}  // namespace concord::nccl
