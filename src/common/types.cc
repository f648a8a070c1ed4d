// Implementation of the small helpers declared in include/concord/types.h.
#include <sstream>

#include "common/enforce.h"
#include "concord/types.h"

namespace concord {

namespace {
struct DTypeInfo {
  DataType dtype;
  const char* name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DataType::kFloat32, "float32", 4},   {DataType::kFloat64, "float64", 8}, {DataType::kFloat16, "float16", 2},
    {DataType::kBFloat16, "bfloat16", 2}, {DataType::kInt32, "int32", 4},     {DataType::kInt64, "int64", 8},
    {DataType::kInt8, "int8", 1},         {DataType::kUInt8, "uint8", 1},     {DataType::kInt16, "int16", 2},
    {DataType::kBool, "bool", 1},
};

const DTypeInfo& info(DataType dtype) {
  for (const auto& entry : kDTypes)
    if (entry.dtype == dtype) return entry;
  CONCORD_THROW(InvalidArgument, "unknown dtype code ", static_cast<int>(dtype));
}
}  // namespace

size_t dtype_size(DataType dtype) { return info(dtype).size; }

const char* dtype_name(DataType dtype) { return info(dtype).name; }

DataType dtype_from_name(const std::string& name) {
  for (const auto& entry : kDTypes)
    if (name == entry.name) return entry.dtype;
  CONCORD_THROW(InvalidArgument, "unsupported dtype '", name,
                "': Concord supports float32, float64, float16, bfloat16, int32, int64, int16, int8, uint8 "
                "(and bool for broadcast, allgather and alltoall)");
}

bool dtype_reducible(DataType dtype) { return info(dtype).dtype != DataType::kBool; }

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kAverage: return "average";
    case ReduceOp::kMin: return "min";
    case ReduceOp::kMax: return "max";
    case ReduceOp::kProduct: return "product";
    case ReduceOp::kAdasum: return "adasum";
  }
  CONCORD_THROW(InvalidArgument, "unknown reduce op code ", static_cast<int>(op));
}

const char* collective_name(CollectiveType type) {
  switch (type) {
    case CollectiveType::kAllreduce: return "allreduce";
    case CollectiveType::kAllgather: return "allgather";
    case CollectiveType::kBroadcast: return "broadcast";
    case CollectiveType::kReducescatter: return "reducescatter";
    case CollectiveType::kAlltoall: return "alltoall";
    case CollectiveType::kBarrier: return "barrier";
    case CollectiveType::kJoin: return "join";
    case CollectiveType::kProcessSet: return "process_set";
  }
  CONCORD_THROW(InvalidArgument, "unknown collective code ", static_cast<int>(type));
}

int64_t TensorView::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t TensorView::num_bytes() const { return static_cast<size_t>(num_elements()) * dtype_size(dtype); }

std::string shape_string(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ']';
  return out.str();
}

}  // namespace concord
