// concord-bench rows of allgather of P equal blocks (the row's count, a multiple of P, is
// the whole output): "mpi" = MPI_Allgather of bytes (in place: MPI_IN_PLACE, this rank's
// block already in the output), registry algorithms and "auto" = AllgatherAlgorithm::start
// + run_to_completion (out of place: this rank's block is first copied into the output).
#include <cstring>
#include <vector>

#include "tools/bench/bench_data.h"
#include "tools/bench/bench_runner.h"

namespace concord::bench {
namespace {

class AllgatherRunner : public RunnerBase<AllgatherAlgorithm> {
 public:
  AllgatherRunner(BenchContext& context, const Resolution& resolution, const RowSpec& spec)
      : RunnerBase(context, resolution, spec, allgather_algorithms()),
        block_(spec.count / context.size()),
        block_bytes_(block_ * dtype_size(spec.dtype)),
        input_(spec.in_place ? 0 : block_bytes_),
        output_(spec.count * dtype_size(spec.dtype)) {}

  void fill() override {
    uint8_t* own = spec_.in_place ? output_.data() + own_offset() : input_.data();
    fill_pattern(own, first(rank()), block_, spec_.dtype, rank());
  }

  void run() override {
    const int block = static_cast<int>(block_bytes_);
    if (is_mpi()) {
      check_mpi(MPI_Allgather(spec_.in_place ? MPI_IN_PLACE : input_.data(), block, MPI_BYTE, output_.data(), block,
                              MPI_BYTE, MPI_COMM_WORLD),
                "MPI_Allgather");
      return;
    }
    if (!spec_.in_place && block_bytes_ > 0) std::memcpy(output_.data() + own_offset(), input_.data(), block_bytes_);
    algorithm_->start(output_.data(), std::vector<size_t>(size(), block_bytes_));
    run_to_completion(*algorithm_);
  }

  long count_wrong() const override {
    long wrong = 0;
    for (int r = 0; r < size(); ++r)
      wrong += count_wrong_pattern(output_.data() + r * block_bytes_, first(r), block_, spec_.dtype, r);
    return wrong;
  }

 private:
  size_t first(int rank) const { return static_cast<size_t>(rank) * block_; }
  size_t own_offset() const { return static_cast<size_t>(rank()) * block_bytes_; }

  size_t block_;        ///< elements per rank
  size_t block_bytes_;  ///< bytes per rank
  std::vector<uint8_t> input_;
  std::vector<uint8_t> output_;
};

}  // namespace

std::unique_ptr<CollectiveRunner> make_allgather_runner(BenchContext& context, const Resolution& resolution,
                                                        const RowSpec& spec) {
  return std::make_unique<AllgatherRunner>(context, resolution, spec);
}

}  // namespace concord::bench
