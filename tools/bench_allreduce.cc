#include "tools/bench_allreduce.h"

#include <cstring>
#include <vector>

#include "algorithms/allreduce_ring.h"
#include "common/enforce.h"
#include "common/half.h"
#include "concord/concord.h"
#include "transport/mpi_communicator.h"

namespace concord::bench {
namespace {

// Small integers: sums, minima, maxima and (one non-1 factor) products are exact in every
// dtype, including float16 and bfloat16, for up to 16 ranks.
double input_value(int rank, size_t i, ReduceOp op) {
  if (op == ReduceOp::kProduct) return rank == 0 ? 1.0 + static_cast<double>(i % 3) : 1.0;
  return static_cast<double>((static_cast<size_t>(rank) + i) % 5);
}

double expected_value(int size, size_t i, ReduceOp op) {
  double result = input_value(0, i, op);
  for (int r = 1; r < size; ++r) {
    const double v = input_value(r, i, op);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: result += v; break;
      case ReduceOp::kProduct: result *= v; break;
      case ReduceOp::kMin: result = std::min(result, v); break;
      case ReduceOp::kMax: result = std::max(result, v); break;
    }
  }
  return op == ReduceOp::kAverage ? result / size : result;
}

void store(uint8_t* p, DataType dtype, double v) {
  switch (dtype) {
    case DataType::kFloat32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); return; }
    case DataType::kFloat64: std::memcpy(p, &v, 8); return;
    case DataType::kFloat16: { uint16_t x = float_to_float16(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
    case DataType::kBFloat16: { uint16_t x = float_to_bfloat16(static_cast<float>(v)); std::memcpy(p, &x, 2); return; }
    case DataType::kInt32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); return; }
    case DataType::kInt64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); return; }
    case DataType::kInt8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); return; }
    case DataType::kUInt8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); return; }
  }
}

MPI_Datatype mpi_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUInt8: return MPI_UINT8_T;
    default: break;
  }
  CONCORD_THROW(InvalidArgument, "MPI_Allreduce has no ", dtype_name(dtype), " datatype in this MPI");
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kAverage: break;
  }
  CONCORD_THROW(InvalidArgument, "MPI_Allreduce has no average op");
}

// Runs one allreduce of the named algorithm; returns after it has completed on this rank.
class Runner {
 public:
  Runner(const std::string& algorithm, size_t count, DataType dtype, ReduceOp op, bool in_place)
      : algorithm_(algorithm), count_(count), dtype_(dtype), op_(op), in_place_(in_place),
        input_(count * dtype_size(dtype)), output_(in_place ? 0 : count * dtype_size(dtype)) {
    if (algorithm == "ring") comm_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
    if (algorithm == "runtime") concord::init();
    if (algorithm == "mpi") {
      mpi_dtype(dtype);
      mpi_op(op);
    }
  }
  ~Runner() {
    if (algorithm_ == "runtime") concord::shutdown();
  }

  void fill(int rank) {
    const size_t element = dtype_size(dtype_);
    for (size_t i = 0; i < count_; ++i) store(input_.data() + i * element, dtype_, input_value(rank, i, op_));
  }

  void run() {
    uint8_t* result = in_place_ ? input_.data() : output_.data();
    const size_t bytes = input_.size();
    if (algorithm_ == "mpi") {
      check_mpi(MPI_Allreduce(in_place_ ? MPI_IN_PLACE : input_.data(), result, static_cast<int>(count_),
                              mpi_dtype(dtype_), mpi_op(op_), MPI_COMM_WORLD),
                "MPI_Allreduce");
    } else if (algorithm_ == "ring") {
      if (!in_place_ && bytes > 0) std::memcpy(result, input_.data(), bytes);
      AllreduceRing ring(*comm_, scratch_);
      ring.start(result, count_, dtype_, op_ == ReduceOp::kAverage ? ReduceOp::kSum : op_);
      run_to_completion(ring);
    } else {
      TensorView in{input_.data(), dtype_, {static_cast<int64_t>(count_)}};
      TensorView out{result, dtype_, {static_cast<int64_t>(count_)}};
      concord::allreduce_async("bench", in, out, AllreduceOptions{op_}).wait();
    }
  }

  long count_wrong(int size) const {
    const size_t element = dtype_size(dtype_);
    const uint8_t* result = in_place_ ? input_.data() : output_.data();
    std::vector<uint8_t> expected(element);
    long wrong = 0;
    for (size_t i = 0; i < count_; ++i) {
      store(expected.data(), dtype_, expected_value(size, i, op_));
      wrong += std::memcmp(expected.data(), result + i * element, element) != 0;
    }
    return wrong;
  }

 private:
  std::string algorithm_;
  size_t count_;
  DataType dtype_;
  ReduceOp op_;
  bool in_place_;
  std::vector<uint8_t> input_;
  std::vector<uint8_t> output_;
  std::unique_ptr<MpiCommunicator> comm_;
  ScratchBuffer scratch_;
};

}  // namespace

bool is_known_algorithm(const std::string& name) {
  return name == "ring" || name == "mpi" || name == "runtime";
}

Measurement measure(const std::string& algorithm, size_t count, DataType dtype, ReduceOp op,
                    bool in_place, int iterations, int warmup, bool check) {
  CONCORD_ENFORCE(is_known_algorithm(algorithm), InvalidArgument, "unknown algorithm '", algorithm,
                  "': use ring, mpi or runtime");
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Runner runner(algorithm, count, dtype, op, in_place);
  Measurement result;
  result.wrong = -1;
  if (check) {
    runner.fill(rank);
    runner.run();
    long wrong = runner.count_wrong(size);
    MPI_Allreduce(&wrong, &result.wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
  runner.fill(rank);
  for (int i = 0; i < warmup; ++i) runner.run();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (int i = 0; i < iterations; ++i) runner.run();
  const double mean = (MPI_Wtime() - start) / std::max(iterations, 1);
  MPI_Allreduce(&mean, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return result;
}

}  // namespace concord::bench
