// MpiCommunicator's native allreduce: MPI_Allreduce (MPI_IN_PLACE for in place), the baseline that
// Concord's own algorithms are measured against (AllreduceMpi, concord-bench "mpi").
//
// Types: float32/float64/int32/int64/int16/int8/uint8 map to MPI_FLOAT, MPI_DOUBLE,
// MPI_INT32_T, MPI_INT64_T, MPI_INT16_T, MPI_INT8_T, MPI_UINT8_T with the builtin MPI_SUM/MIN/MAX/PROD (kAverage is
// MPI_SUM; the caller scales). MPI has no 16-bit float type, so float16 and bfloat16 travel
// as MPI_UINT16_T with a commutative user-defined op (MPI-3.1 section 5.9.5) that calls
// Concord's own reduce_inplace, rounding to nearest even once per combination. 8-bit sums
// and 16-bit integer sums also use such an op: Open MPI 4.1's AVX reduction component
// saturates int8/uint8 (and, with the same instructions, int16) sums instead of wrapping
// (open-mpi/ompi#8045), and Concord's sums wrap. bool is not reducible.
#include <algorithm>
#include <climits>

#include "common/enforce.h"
#include "common/reduce.h"
#include "transport/mpi_communicator.h"

namespace concord {
namespace {

// Elements per MPI_Allreduce call (MPI counts are ints).
constexpr size_t kMaxCallCount = size_t{1} << 30;

// MPI_User_function calling Concord's kernel: inout[i] = inout[i] op in[i]. The op is
// commutative, so MPI may combine in any order; the result is the same on every rank
// because MPI_Allreduce returns one value to all.
template <DataType kDtype, ReduceOp kOp>
void concord_user_op(void* in, void* inout, int* length, MPI_Datatype*) {
  reduce_inplace(inout, in, static_cast<size_t>(*length), kDtype, kOp);
}

template <DataType kDtype>
MPI_User_function* user_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return &concord_user_op<kDtype, ReduceOp::kSum>;
    case ReduceOp::kMin: return &concord_user_op<kDtype, ReduceOp::kMin>;
    case ReduceOp::kMax: return &concord_user_op<kDtype, ReduceOp::kMax>;
    case ReduceOp::kProduct: return &concord_user_op<kDtype, ReduceOp::kProduct>;
    case ReduceOp::kAdasum: break;  // not element-wise: never native (known_op)
  }
  return nullptr;
}

// Combinations that MPI has no builtin for, or gets wrong (see the file comment).
bool needs_user_op(DataType dtype, ReduceOp op) {
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) return true;
  const bool sum = op == ReduceOp::kSum || op == ReduceOp::kAverage;
  return sum && (dtype == DataType::kInt8 || dtype == DataType::kUInt8 || dtype == DataType::kInt16);
}

MPI_User_function* user_function(DataType dtype, ReduceOp op) {
  switch (dtype) {
    case DataType::kFloat16: return user_function<DataType::kFloat16>(op);
    case DataType::kBFloat16: return user_function<DataType::kBFloat16>(op);
    case DataType::kInt8: return user_function<DataType::kInt8>(op);
    case DataType::kUInt8: return user_function<DataType::kUInt8>(op);
    case DataType::kInt16: return user_function<DataType::kInt16>(op);
    default: return nullptr;
  }
}

MPI_Datatype mpi_datatype(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kBool: break;
    case DataType::kFloat16:
    case DataType::kBFloat16: return MPI_UINT16_T;
  }
  CONCORD_THROW(InvalidArgument, "unknown dtype code ", static_cast<int>(dtype));
}

MPI_Op builtin_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kAdasum: break;
  }
  CONCORD_THROW(InvalidArgument, "unknown reduce op code ", static_cast<int>(op));
}

bool known_op(ReduceOp op) { return static_cast<int>(op) <= static_cast<int>(ReduceOp::kProduct); }

bool known_dtype(DataType dtype) { return static_cast<int>(dtype) <= static_cast<int>(DataType::kInt16); }

}  // namespace

bool MpiCommunicator::native_allreduce_supported(DataType dtype, ReduceOp op) const {
  return known_dtype(dtype) && known_op(op);
}

MPI_Op MpiCommunicator::mpi_op(DataType dtype, ReduceOp op) {
  if (!needs_user_op(dtype, op)) return builtin_op(op);
  MPI_Op& slot = user_ops_[static_cast<int>(dtype)][static_cast<int>(op)];
  if (slot == MPI_OP_NULL) check_mpi(MPI_Op_create(user_function(dtype, op), /*commute=*/1, &slot), "MPI_Op_create");
  return slot;
}

void MpiCommunicator::native_allreduce(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
  CONCORD_ENFORCE(native_allreduce_supported(dtype, op), InvalidArgument, "MPI_Allreduce cannot reduce dtype code ",
                  static_cast<int>(dtype), " with op code ", static_cast<int>(op));
  const MPI_Datatype type = mpi_datatype(dtype);
  const MPI_Op mpi = mpi_op(dtype, op);
  const bool in_place = input == output;
  const auto* from = static_cast<const uint8_t*>(input);
  auto* bytes = static_cast<uint8_t*>(output);
  const size_t element = dtype_size(dtype);
  size_t done = 0;
  do {  // one call even for count == 0, so every rank takes part in the same calls
    const size_t n = std::min(kMaxCallCount, count - done);
    check_mpi(MPI_Allreduce(in_place ? MPI_IN_PLACE : from + done * element, bytes + done * element,
                            static_cast<int>(n), type, mpi, comm_),
              "MPI_Allreduce");
    done += n;
  } while (done < count);
}

}  // namespace concord
