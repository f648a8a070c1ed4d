// concord-bench rows of broadcast from rank 0 of the row's count elements: "mpi" =
// MPI_Bcast of bytes, registry algorithms and "auto" = BroadcastAlgorithm::start +
// run_to_completion. Out of place the root first copies its input into the output, which
// every rank then broadcasts in place (nccl-tests' convention).
#include <cstring>
#include <vector>

#include "tools/bench/bench_data.h"
#include "tools/bench/bench_runner.h"

namespace concord::bench {
namespace {

constexpr int kRoot = 0;

class BroadcastRunner : public RunnerBase<BroadcastAlgorithm> {
 public:
  BroadcastRunner(BenchContext& context, const Resolution& resolution, const RowSpec& spec)
      : RunnerBase(context, resolution, spec, broadcast_algorithms()),
        bytes_(spec.count * dtype_size(spec.dtype)),
        input_(bytes_),
        output_(spec.in_place ? 0 : bytes_) {}

  void fill() override {
    // Non-roots start from their own pattern, so a missed element is counted as wrong.
    fill_pattern(input_.data(), 0, spec_.count, spec_.dtype, rank());
    if (!spec_.in_place) fill_pattern(output_.data(), 0, spec_.count, spec_.dtype, rank() + 1);
  }

  void run() override {
    uint8_t* buffer = spec_.in_place ? input_.data() : output_.data();
    if (!spec_.in_place && rank() == kRoot && bytes_ > 0) std::memcpy(buffer, input_.data(), bytes_);
    if (is_mpi()) {
      check_mpi(MPI_Bcast(buffer, static_cast<int>(bytes_), MPI_BYTE, kRoot, MPI_COMM_WORLD), "MPI_Bcast");
      return;
    }
    algorithm_->start(buffer, bytes_, kRoot);
    run_to_completion(*algorithm_);
  }

  long count_wrong() const override {
    const uint8_t* buffer = spec_.in_place ? input_.data() : output_.data();
    return count_wrong_pattern(buffer, 0, spec_.count, spec_.dtype, kRoot);
  }

 private:
  size_t bytes_;
  std::vector<uint8_t> input_;
  std::vector<uint8_t> output_;
};

}  // namespace

std::unique_ptr<CollectiveRunner> make_broadcast_runner(BenchContext& context, const Resolution& resolution,
                                                        const RowSpec& spec) {
  return std::make_unique<BroadcastRunner>(context, resolution, spec);
}

}  // namespace concord::bench
