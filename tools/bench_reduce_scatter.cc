// concord-bench rows of reduce_scatter over P equal blocks (the row's count is a multiple
// of P): "mpi" = MPI_Reduce_scatter_block (rank r's block lands at the start of the
// receive buffer), registry algorithms and "auto" = ReduceScatterAlgorithm::start +
// run_to_completion in place on the whole vector (rank r's block stays at its offset; out
// of place the input is first copied to a full-size output). kAverage: reduced as kSum,
// then rank r's block is scaled by 1/P.
#include <cstring>
#include <vector>

#include "common/reduce.h"
#include "tools/bench_data.h"
#include "tools/bench_runner.h"

namespace concord::bench {
namespace {

class ReduceScatterRunner : public CollectiveRunner {
 public:
  ReduceScatterRunner(BenchContext& context, const Resolution& resolution, const RowSpec& spec)
      : context_(context), resolution_(resolution), spec_(spec), element_(dtype_size(spec.dtype)),
        block_(spec.count / context.size()), input_(spec.count * element_),
        output_(spec.in_place ? 0 : spec.count * element_) {
    if (resolution.kind == Resolution::Kind::kRegistry)
      algorithm_ = &context.instance(reduce_scatter_algorithms(), resolution.registry_name);
    if (resolution.kind == Resolution::Kind::kMpi) mpi_reduction_types(spec.dtype, spec.op, mpi_dtype_, mpi_op_);
  }

  void fill() override {
    fill_reduction_input(input_.data(), 0, spec_.count, spec_.dtype, context_.rank(), spec_.op);
  }

  void run() override {
    uint8_t* buffer = spec_.in_place ? input_.data() : output_.data();
    if (resolution_.kind == Resolution::Kind::kMpi) {
      check_mpi(MPI_Reduce_scatter_block(spec_.in_place ? MPI_IN_PLACE : input_.data(), buffer,
                                         static_cast<int>(block_), mpi_dtype_, mpi_op_, MPI_COMM_WORLD),
                "MPI_Reduce_scatter_block");
    } else {
      if (!spec_.in_place && !input_.empty()) std::memcpy(buffer, input_.data(), input_.size());
      const ReduceOp op = spec_.op == ReduceOp::kAverage ? ReduceOp::kSum : spec_.op;
      algorithm_->start(buffer, spec_.count, spec_.dtype, op);
      run_to_completion(*algorithm_);
    }
    if (spec_.op == ReduceOp::kAverage) scale_buffer(result(), result(), block_, spec_.dtype, 1.0 / context_.size());
  }

  long count_wrong() const override {
    const size_t first = static_cast<size_t>(context_.rank()) * block_;
    return count_wrong_reduction(result(), first, block_, spec_.dtype, context_.size(), spec_.op);
  }

 private:
  // This rank's reduced block.
  uint8_t* result() const {
    auto* buffer = const_cast<uint8_t*>(spec_.in_place ? input_.data() : output_.data());
    if (resolution_.kind == Resolution::Kind::kMpi) return buffer;
    return buffer + static_cast<size_t>(context_.rank()) * block_ * element_;
  }

  BenchContext& context_;
  Resolution resolution_;
  RowSpec spec_;
  size_t element_;
  size_t block_;  ///< elements per rank
  std::vector<uint8_t> input_;
  std::vector<uint8_t> output_;
  ReduceScatterAlgorithm* algorithm_ = nullptr;
  MPI_Datatype mpi_dtype_ = MPI_DATATYPE_NULL;
  MPI_Op mpi_op_ = MPI_OP_NULL;
};

}  // namespace

std::unique_ptr<CollectiveRunner> make_reduce_scatter_runner(BenchContext& context, const Resolution& resolution,
                                                             const RowSpec& spec) {
  return std::make_unique<ReduceScatterRunner>(context, resolution, spec);
}

}  // namespace concord::bench
