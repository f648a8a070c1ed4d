// The dtype/op mapping of nccl_api.h (no NCCL header needed; nccl_library.cc checks the
// values against nccl.h).
#include "common/enforce.h"
#include "device/nccl/nccl_api.h"

namespace concord::nccl {

std::string declines(DataType dtype, ReduceOp op) {
  if (op == ReduceOp::kAdasum) return "adasum is not element-wise";
  if (dtype == DataType::kInt16) return "NCCL has no int16 type";
  if (dtype == DataType::kBool) return "bool is not reduced (NCCL has no bool type; Concord refuses bool reductions)";
  const bool floating = dtype == DataType::kFloat32 || dtype == DataType::kFloat64 || dtype == DataType::kFloat16 ||
                        dtype == DataType::kBFloat16;
  if (floating && (op == ReduceOp::kMin || op == ReduceOp::kMax)) {
    return std::string("NCCL's ") + reduce_op_name(op) +
           " of floats has its own NaN and signed-zero rule (Concord's kernels' rule is part of the result)";
  }
  return "";
}

Type type_of(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return Type::kFloat32;
    case DataType::kFloat64: return Type::kFloat64;
    case DataType::kFloat16: return Type::kFloat16;
    case DataType::kBFloat16: return Type::kBfloat16;
    case DataType::kInt32: return Type::kInt32;
    case DataType::kInt64: return Type::kInt64;
    case DataType::kInt8: return Type::kInt8;
    case DataType::kUInt8: return Type::kUint8;
    case DataType::kInt16:
    case DataType::kBool: break;
  }
  CONCORD_THROW(InvalidArgument, "NCCL has no type for ", dtype_name(dtype));
}

Op op_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return Op::kSum;
    case ReduceOp::kProduct: return Op::kProd;
    case ReduceOp::kMin: return Op::kMin;
    case ReduceOp::kMax: return Op::kMax;
    case ReduceOp::kAdasum: break;
  }
  CONCORD_THROW(InvalidArgument, "NCCL has no op for ", reduce_op_name(op));
}

std::string Status::summary() const {
  if (!built) return "NCCL: not built";
  if (!loaded) return "NCCL: built, not loaded (" + reason + ")";
  // NCCL's code since 2.9: major * 10000 + minor * 100 + patch.
  return "NCCL: " + std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100) + " (" + reason + ")";
}

}  // namespace concord::nccl
