// Public value types of Concord: data types, reduce ops, collective kinds and tensor views.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace concord {

/// Element types a collective can carry. float16 is IEEE 754 binary16, bfloat16 is the
/// upper half of an IEEE binary32 (as in PyTorch and TensorFlow). kBool (one byte, 0 or 1)
/// is carried by broadcast, allgather and alltoall only: it has no reduction.
enum class DataType : uint8_t {
  kFloat32 = 0,
  kFloat64 = 1,
  kFloat16 = 2,
  kBFloat16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kInt8 = 6,
  kUInt8 = 7,
  kInt16 = 8,
  kBool = 9,
};

/// Reduction applied element-wise by allreduce. kAverage is kSum followed by a
/// multiplication by 1/size (for integer types the product is truncated toward zero).
/// kAdasum is not element-wise: the adaptive summation of Maleki et al. (MLSys 2021) over
/// whole tensors (algorithms/allreduce_adasum.h; float32/float64, power-of-two ranks).
enum class ReduceOp : uint8_t { kSum = 0, kAverage = 1, kMin = 2, kMax = 3, kProduct = 4, kAdasum = 5 };

/// The collective an operation performs. kJoin is join() (this rank has no more data),
/// kBarrier a barrier(), kProcessSet the collective registration or removal of a process set.
enum class CollectiveType : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kReducescatter = 3,
  kAlltoall = 4,
  kBarrier = 5,
  kJoin = 6,
  kProcessSet = 7,
};

/// Size of one element in bytes. Throws InvalidArgument for an unknown code.
size_t dtype_size(DataType dtype);
/// Lower-case name ("float32", "bfloat16", ...).
const char* dtype_name(DataType dtype);
/// Parses a name as printed by dtype_name. Throws InvalidArgument naming the bad string.
DataType dtype_from_name(const std::string& name);
/// True for the dtypes a reduction accepts (every dtype but kBool).
bool dtype_reducible(DataType dtype);
/// Lower-case name ("sum", "average", ...).
const char* reduce_op_name(ReduceOp op);
/// "allreduce", "allgather", "broadcast", "reducescatter", "alltoall", "barrier", "join",
/// "process_set".
const char* collective_name(CollectiveType type);

/// TensorView::device of a tensor in host memory.
inline constexpr int32_t kHostMemory = -1;

/// TensorView::device asking the runtime to find out where `data` lives: at submission
/// (before negotiation) it asks each device of the runtime's device table whether `data`
/// points into its memory, through that device's pointer cache (the pointer cache of Awan
/// et al., "Scalable Distributed DNN Training using TensorFlow and CUDA-Aware MPI", CCGrid
/// 2019: an address-range map answered without a driver call once an allocation is known;
/// docs/architecture.md, "Pointer cache"), and uses that device's index, or kHostMemory when
/// no device claims it. A device buffer costs one driver query the first time its allocation
/// is seen (none for the emulated device, which registers its allocations) and none on
/// every later submission. On CUDA a host buffer costs one cuPointerGetAttributes per CUDA
/// device per submission (host memory is not cached: it may later be device memory); give
/// kHostMemory explicitly where that matters. A null `data` (a tensor with no elements) is
/// host memory: give the device explicitly for an empty device tensor whose peers on other
/// ranks are not empty, else negotiation reports a device mismatch. The output of an
/// allreduce or reduce-scatter may also say kDetectDevice. Throws DeviceError when the
/// driver cannot tell.
inline constexpr int32_t kDetectDevice = -2;

/// Counters of the pointer caches of the runtime's devices (summed over the devices made
/// so far; docs/architecture.md, "Pointer cache"). A lookup is a hit (answered from the
/// cache) or a miss; a miss costs a driver query (`queries`) unless the device registers
/// every allocation it makes (the emulated device), so a repeated kDetectDevice
/// submission of the same device buffer adds one hit and no query.
struct PointerCacheStats {
  uint64_t hits = 0;     ///< lookups answered from a cached allocation
  uint64_t misses = 0;   ///< lookups of an address no cached allocation contains
  uint64_t queries = 0;  ///< driver (provider) queries made: misses not known to be host, plus validations
  uint64_t entries = 0;  ///< allocations cached now
};

/// A non-owning view of a dense, row-major (C-contiguous) tensor in host memory or in the
/// memory of one of the runtime's devices (docs/architecture.md, "Device layer").
/// `data` may be null only when the tensor has zero elements.
struct TensorView {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;  ///< dimensions, outermost first; {} is a scalar
  /// kHostMemory, or the index of the device holding `data` in the runtime's device table:
  /// the CUDA device ordinal, or 0 for the strict emulated device with
  /// CONCORD_DEVICE=emulated; or kDetectDevice to let the runtime find out. Device memory is never touched by the host: the runtime moves
  /// it through the device's streams only, and it must be ready (its producer's work done)
  /// when the collective is submitted.
  int32_t device = kHostMemory;

  /// Number of elements (product of shape; 1 for a scalar).
  int64_t num_elements() const;
  /// Number of bytes: num_elements() * dtype_size(dtype).
  size_t num_bytes() const;
};

/// Formats a shape as "[2, 3]".
std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace concord
