// concord-bench rows of reduce_scatter over P equal blocks (the row's count is a multiple
// of P): "mpi" = MPI_Reduce_scatter_block (rank r's block lands at the start of the
// receive buffer), registry algorithms and "auto" = ReduceScatterAlgorithm::start +
// run_to_completion in place on the whole vector (rank r's block stays at its offset; out
// of place the input is first copied to a full-size output). kAverage: reduced as kSum,
// then rank r's block is scaled by 1/P.
#include <cstring>
#include <vector>

#include "common/reduce.h"
#include "tools/bench/bench_data.h"
#include "tools/bench/bench_runner.h"

namespace concord::bench {
namespace {

class ReduceScatterRunner : public RunnerBase<ReduceScatterAlgorithm> {
 public:
  ReduceScatterRunner(BenchContext& context, const Resolution& resolution, const RowSpec& spec)
      : RunnerBase(context, resolution, spec, reduce_scatter_algorithms()),
        element_(dtype_size(spec.dtype)),
        block_(spec.count / context.size()),
        input_(spec.count * element_),
        output_(spec.in_place ? 0 : spec.count * element_) {}

  void fill() override { fill_reduction_input(input_.data(), 0, spec_.count, spec_.dtype, rank(), spec_.op); }

  void run() override {
    uint8_t* buffer = spec_.in_place ? input_.data() : output_.data();
    if (is_mpi()) {
      MPI_Datatype mpi_dtype;
      MPI_Op mpi_op;
      mpi_reduction_types(spec_.dtype, spec_.op, mpi_dtype, mpi_op);  // make_runner checked it
      check_mpi(MPI_Reduce_scatter_block(spec_.in_place ? MPI_IN_PLACE : input_.data(), buffer,
                                         static_cast<int>(block_), mpi_dtype, mpi_op, MPI_COMM_WORLD),
                "MPI_Reduce_scatter_block");
    } else {
      if (!spec_.in_place && !input_.empty()) std::memcpy(buffer, input_.data(), input_.size());
      const ReduceOp op = spec_.op == ReduceOp::kAverage ? ReduceOp::kSum : spec_.op;
      algorithm_->start(buffer, spec_.count, spec_.dtype, op);
      run_to_completion(*algorithm_);
    }
    if (spec_.op == ReduceOp::kAverage) scale_buffer(result(), result(), block_, spec_.dtype, 1.0 / size());
  }

  long count_wrong() const override {
    return count_wrong_reduction(result(), static_cast<size_t>(rank()) * block_, block_, spec_.dtype, size(), spec_.op);
  }

 private:
  // This rank's reduced block.
  uint8_t* result() const {
    auto* buffer = const_cast<uint8_t*>(spec_.in_place ? input_.data() : output_.data());
    return is_mpi() ? buffer : buffer + static_cast<size_t>(rank()) * block_ * element_;
  }

  size_t element_;
  size_t block_;  ///< elements per rank
  std::vector<uint8_t> input_;
  std::vector<uint8_t> output_;
};

}  // namespace

std::unique_ptr<CollectiveRunner> make_reduce_scatter_runner(BenchContext& context, const Resolution& resolution,
                                                             const RowSpec& spec) {
  return std::make_unique<ReduceScatterRunner>(context, resolution, spec);
}

}  // namespace concord::bench
