#include "runtime/validate.h"

#include <cmath>
#include <numeric>

#include "common/enforce.h"

namespace concord {
namespace {

void check_reduction(const Request& request, const TensorView& input, const TensorView& output) {
  const std::string& name = request.name;
  const char* what = collective_name(request.type);
  CONCORD_ENFORCE(dtype_reducible(input.dtype), InvalidArgument, what, " of tensor '", name, "': dtype ",
                  dtype_name(input.dtype),
                  " cannot be reduced (bool is supported by broadcast, allgather and "
                  "alltoall only)");
  CONCORD_ENFORCE(output.dtype == input.dtype, InvalidArgument, what, " of tensor '", name, "': output is ",
                  dtype_name(output.dtype), " but input is ", dtype_name(input.dtype));
  CONCORD_ENFORCE(output.data != nullptr || output.num_elements() == 0, InvalidArgument, "Tensor '", name,
                  "' has a null output pointer");
  CONCORD_ENFORCE(std::isfinite(request.prescale_factor) && std::isfinite(request.postscale_factor), InvalidArgument,
                  what, " of tensor '", name, "': scale factors must be finite");
}

void check_reducescatter(const Request& request, const TensorView& input, const TensorView& output, int size,
                         int rank) {
  const std::string& name = request.name;
  CONCORD_ENFORCE(!input.shape.empty(), InvalidArgument, "reducescatter of tensor '", name,
                  "': a scalar has no dim 0 to scatter; reshape it to [1]");
  CONCORD_ENFORCE(request.op == ReduceOp::kSum || request.op == ReduceOp::kAverage, InvalidArgument,
                  "reducescatter of tensor '", name, "': op ", reduce_op_name(request.op),
                  " is not supported; use sum or average");
  std::vector<int64_t> expected = input.shape;
  expected[0] = input.shape[0] / size + (rank < input.shape[0] % size ? 1 : 0);
  CONCORD_ENFORCE(output.shape == expected, InvalidArgument, "reducescatter of tensor '", name, "': output shape ",
                  shape_string(output.shape), " but rank ", rank, " of ", size, " receives ", shape_string(expected),
                  " of input ", shape_string(input.shape));
}

void check_alltoall(const Request& request, const TensorView& input, int size) {
  const std::string& name = request.name;
  CONCORD_ENFORCE(!input.shape.empty(), InvalidArgument, "alltoall of tensor '", name,
                  "': a scalar has no dim 0 to split; reshape it to [1]");
  const int64_t rows = input.shape[0];
  CONCORD_ENFORCE(static_cast<int>(request.splits.size()) == size, InvalidArgument, "alltoall of tensor '", name,
                  "': ", request.splits.size(), " splits for ", size, " ranks; pass one entry per rank");
  for (size_t j = 0; j < request.splits.size(); ++j)
    CONCORD_ENFORCE(request.splits[j] >= 0, InvalidArgument, "alltoall of tensor '", name, "': splits[", j,
                    "] = ", request.splits[j], " is negative");
  const int64_t sum = std::accumulate(request.splits.begin(), request.splits.end(), int64_t{0});
  CONCORD_ENFORCE(sum == rows, InvalidArgument, "alltoall of tensor '", name, "': splits ",
                  shape_string(request.splits), " sum to ", sum, " but dim 0 is ", rows);
}

}  // namespace

void validate(const Request& request, const TensorView& input, const TensorView& output, int size, int rank) {
  const std::string& name = request.name;
  CONCORD_ENFORCE(!name.empty(), InvalidArgument, collective_name(request.type), ": the tensor name must not be empty");
  if (request.type == CollectiveType::kBarrier || request.type == CollectiveType::kJoin ||
      request.type == CollectiveType::kProcessSet)
    return;                 // no data
  dtype_size(input.dtype);  // throws for an unknown dtype code
  for (int64_t d : input.shape)
    CONCORD_ENFORCE(d >= 0, InvalidArgument, "Tensor '", name, "' has a negative dimension in shape ",
                    shape_string(input.shape));
  CONCORD_ENFORCE(input.data != nullptr || input.num_elements() == 0, InvalidArgument, "Tensor '", name,
                  "' has a null data pointer");
  switch (request.type) {
    case CollectiveType::kAllreduce:
      check_reduction(request, input, output);
      CONCORD_ENFORCE(output.shape == input.shape, InvalidArgument, "allreduce of tensor '", name, "': output is ",
                      shape_string(output.shape), " but input is ", shape_string(input.shape));
      if (request.op == ReduceOp::kAdasum) {
        CONCORD_ENFORCE((size & (size - 1)) == 0, InvalidArgument, "allreduce of tensor '", name,
                        "' with op Adasum needs a power-of-two number of ranks (its vector-halving "
                        "distance-doubling schedule); this job has ",
                        size, " ranks");
        CONCORD_ENFORCE(input.dtype == DataType::kFloat32 || input.dtype == DataType::kFloat64, InvalidArgument,
                        "allreduce of tensor '", name, "' with op Adasum: dtype ", dtype_name(input.dtype),
                        " is not supported (float32 or float64)");
      }
      break;
    case CollectiveType::kReducescatter:
      check_reduction(request, input, output);
      check_reducescatter(request, input, output, size, rank);
      break;
    case CollectiveType::kAllgather:
      CONCORD_ENFORCE(!input.shape.empty(), InvalidArgument, "allgather of tensor '", name,
                      "': a scalar has no dim 0 to concatenate along; reshape it to [1]");
      break;
    case CollectiveType::kAlltoall: check_alltoall(request, input, size); break;
    case CollectiveType::kBroadcast:
      CONCORD_ENFORCE(request.root >= 0 && request.root < size, InvalidArgument, "broadcast of tensor '", name,
                      "': root rank ", request.root, " is outside [0, ", size, ")");
      break;
    default: break;
  }
}

std::string validate_device(const Request& request, const TensorView& input, const TensorView& output,
                            const DeviceSet& devices) {
  const CollectiveType type = request.type;
  if (type == CollectiveType::kBarrier || type == CollectiveType::kJoin || type == CollectiveType::kProcessSet)
    return "";  // no data
  const char* what = collective_name(type);
  const bool has_output = type == CollectiveType::kAllreduce || type == CollectiveType::kReducescatter;
  if (input.device == kHostMemory) {
    CONCORD_ENFORCE(!has_output || output.device == kHostMemory, InvalidArgument, what, " of tensor '", request.name,
                    "': the input is in host memory but the output on device ", output.device,
                    "; both must be in the same memory");
    return "";
  }
  CONCORD_ENFORCE(input.device >= 0 && input.device < devices.count(), InvalidArgument, what, " of tensor '",
                  request.name, "': device ", input.device, " does not exist (this process has ", devices.describe(),
                  ")");
  const std::string name = devices.name(input.device);
  CONCORD_ENFORCE(type != CollectiveType::kAllreduce || request.op != ReduceOp::kAdasum, InvalidArgument, what,
                  " of tensor '", request.name, "': the tensor is on ", name,
                  " but the Adasum op takes host tensors only (its dot products run on the host); copy it to host "
                  "memory first");
  CONCORD_ENFORCE(!has_output || output.device == input.device, InvalidArgument, what, " of tensor '", request.name,
                  "': the input is on ", name, " but the output ",
                  output.device == kHostMemory ? std::string("in host memory") : "on " + devices.name(output.device),
                  "; both must be on the same device");
  return name;
}

}  // namespace concord
