// concord-bench rows of allreduce: "mpi" = MPI_Allreduce (kAverage as MPI_SUM, then
// scaled by 1/P), "runtime" = concord::allreduce_async + wait (negotiation, fusion buffer,
// the runtime's own algorithm choice: what a framework sees), registry algorithms and
// "auto" = AllreduceAlgorithm::start (out of place: start_out_of_place, which the runtime
// calls for a response of one tensor; the algorithms without their own out-of-place path
// copy first) + run_to_completion; kAverage: reduced as kSum, then scaled.
#include <vector>

#include "common/enforce.h"
#include "common/reduce.h"
#include "concord/concord.h"
#include "tools/bench/bench_data.h"
#include "tools/bench/bench_runner.h"

namespace concord::bench {
namespace {

class AllreduceRunner : public RunnerBase<AllreduceAlgorithm> {
 public:
  AllreduceRunner(BenchContext& context, const Resolution& resolution, const RowSpec& spec)
      : RunnerBase(context, resolution, spec, allreduce_algorithms()),
        bytes_(spec.count * dtype_size(spec.dtype)),
        input_(bytes_),
        output_(spec.in_place ? 0 : bytes_) {
    if (resolution.kind == Resolution::Kind::kRuntime) context.start_runtime();
  }

  void fill() override { fill_reduction_input(input_.data(), 0, spec_.count, spec_.dtype, rank(), spec_.op); }

  void run() override {
    uint8_t* result = spec_.in_place ? input_.data() : output_.data();
    const bool average = spec_.op == ReduceOp::kAverage;
    switch (resolution_.kind) {
      case Resolution::Kind::kMpi: {
        MPI_Datatype mpi_dtype;
        MPI_Op mpi_op;
        mpi_reduction_types(spec_.dtype, spec_.op, mpi_dtype, mpi_op);  // make_runner checked it
        check_mpi(MPI_Allreduce(spec_.in_place ? MPI_IN_PLACE : input_.data(), result, static_cast<int>(spec_.count),
                                mpi_dtype, mpi_op, MPI_COMM_WORLD),
                  "MPI_Allreduce");
        break;
      }
      case Resolution::Kind::kRuntime: {
        const std::vector<int64_t> shape{static_cast<int64_t>(spec_.count)};
        concord::allreduce_async("concord-bench", TensorView{input_.data(), spec_.dtype, shape},
                                 TensorView{result, spec_.dtype, shape}, AllreduceOptions{spec_.op})
            .wait();
        return;  // the runtime scales averages itself
      }
      case Resolution::Kind::kRegistry:
        if (spec_.in_place) algorithm_->start(result, spec_.count, spec_.dtype, average ? ReduceOp::kSum : spec_.op);
        else
          algorithm_->start_out_of_place(input_.data(), result, spec_.count, spec_.dtype,
                                         average ? ReduceOp::kSum : spec_.op);
        run_to_completion(*algorithm_);
        break;
      case Resolution::Kind::kSkip: return;
    }
    if (average) scale_buffer(result, result, spec_.count, spec_.dtype, 1.0 / size());
  }

  long count_wrong() const override {
    const uint8_t* result = spec_.in_place ? input_.data() : output_.data();
    return count_wrong_reduction(result, 0, spec_.count, spec_.dtype, size(), spec_.op);
  }

 private:
  size_t bytes_;
  std::vector<uint8_t> input_;
  std::vector<uint8_t> output_;
};

}  // namespace

std::unique_ptr<CollectiveRunner> make_allreduce_runner(BenchContext& context, const Resolution& resolution,
                                                        const RowSpec& spec) {
  return std::make_unique<AllreduceRunner>(context, resolution, spec);
}

}  // namespace concord::bench
