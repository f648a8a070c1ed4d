// concord-bench rows of alltoall: each rank sends P equal blocks (the row's count, a
// multiple of P, is one rank's whole send buffer), block j to rank j. "mpi" =
// MPI_Alltoall of bytes (in place: MPI_IN_PLACE, the receive buffer holding the send
// blocks), registry algorithms and "auto" = AlltoallAlgorithm::start + run_to_completion
// (out of place only: the interface needs separate buffers). Block j of rank r holds the
// pattern of rank r at elements [j b, (j + 1) b), so after the exchange block i of rank
// r must hold rank i's pattern at [r b, (r + 1) b).
#include <vector>

#include "tools/bench/bench_data.h"
#include "tools/bench/bench_runner.h"

namespace concord::bench {
namespace {

class AlltoallRunner : public RunnerBase<AlltoallAlgorithm> {
 public:
  AlltoallRunner(BenchContext& context, const Resolution& resolution, const RowSpec& spec)
      : RunnerBase(context, resolution, spec, alltoall_algorithms()),
        block_(spec.count / context.size()),
        block_bytes_(block_ * dtype_size(spec.dtype)),
        send_(spec.in_place ? 0 : spec.count * dtype_size(spec.dtype)),
        recv_(spec.count * dtype_size(spec.dtype)) {}

  void fill() override {
    fill_pattern(spec_.in_place ? recv_.data() : send_.data(), 0, spec_.count, spec_.dtype, rank());
  }

  void run() override {
    const int block = static_cast<int>(block_bytes_);
    if (is_mpi()) {
      check_mpi(MPI_Alltoall(spec_.in_place ? MPI_IN_PLACE : send_.data(), block, MPI_BYTE, recv_.data(), block,
                             MPI_BYTE, MPI_COMM_WORLD),
                "MPI_Alltoall");
      return;
    }
    algorithm_->start(send_.data(), recv_.data(), block_bytes_);
    run_to_completion(*algorithm_);
  }

  long count_wrong() const override {
    long wrong = 0;
    const size_t first = static_cast<size_t>(rank()) * block_;
    for (int i = 0; i < size(); ++i)
      wrong += count_wrong_pattern(recv_.data() + i * block_bytes_, first, block_, spec_.dtype, i);
    return wrong;
  }

 private:
  size_t block_;        ///< elements per block
  size_t block_bytes_;  ///< bytes per block
  std::vector<uint8_t> send_;
  std::vector<uint8_t> recv_;
};

}  // namespace

std::unique_ptr<CollectiveRunner> make_alltoall_runner(BenchContext& context, const Resolution& resolution,
                                                       const RowSpec& spec) {
  return std::make_unique<AlltoallRunner>(context, resolution, spec);
}

}  // namespace concord::bench
