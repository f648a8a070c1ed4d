// concord-bench rows of alltoall: each rank sends P equal blocks (the row's count, a
// multiple of P, is one rank's whole send buffer), block j to rank j. "mpi" =
// MPI_Alltoall of bytes (in place: MPI_IN_PLACE, the receive buffer holding the send
// blocks), registry algorithms and "auto" = AlltoallAlgorithm::start + run_to_completion
// (out of place only: the interface needs separate buffers). Block j of rank r holds the
// pattern of rank r at elements [j b, (j + 1) b), so after the exchange block i of rank
// r must hold rank i's pattern at [r b, (r + 1) b).
#include <vector>

#include "tools/bench_data.h"
#include "tools/bench_runner.h"

namespace concord::bench {
namespace {

class AlltoallRunner : public CollectiveRunner {
 public:
  AlltoallRunner(BenchContext& context, const Resolution& resolution, const RowSpec& spec)
      : context_(context), resolution_(resolution), spec_(spec), block_(spec.count / context.size()),
        block_bytes_(block_ * dtype_size(spec.dtype)), send_(spec.in_place ? 0 : spec.count * dtype_size(spec.dtype)),
        recv_(spec.count * dtype_size(spec.dtype)) {
    if (resolution.kind == Resolution::Kind::kRegistry)
      algorithm_ = &context.instance(alltoall_algorithms(), resolution.registry_name);
  }

  void fill() override {
    fill_pattern(spec_.in_place ? recv_.data() : send_.data(), 0, spec_.count, spec_.dtype, context_.rank());
  }

  void run() override {
    const int block = static_cast<int>(block_bytes_);
    if (resolution_.kind == Resolution::Kind::kMpi) {
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
    const size_t first = static_cast<size_t>(context_.rank()) * block_;
    for (int i = 0; i < context_.size(); ++i)
      wrong += count_wrong_pattern(recv_.data() + i * block_bytes_, first, block_, spec_.dtype, i);
    return wrong;
  }

 private:
  BenchContext& context_;
  Resolution resolution_;
  RowSpec spec_;
  size_t block_;        ///< elements per block
  size_t block_bytes_;  ///< bytes per block
  std::vector<uint8_t> send_;
  std::vector<uint8_t> recv_;
  AlltoallAlgorithm* algorithm_ = nullptr;
};

}  // namespace

std::unique_ptr<CollectiveRunner> make_alltoall_runner(BenchContext& context, const Resolution& resolution,
                                                       const RowSpec& spec) {
  return std::make_unique<AlltoallRunner>(context, resolution, spec);
}

}  // namespace concord::bench
