#include "transport/mpi_world.h"

#include "transport/mpi_communicator.h"

namespace concord {
namespace {

class MpiWorld : public TransportWorld {
 public:
  explicit MpiWorld(const std::string& launcher) : origin_{"mpi", launcher, "MPI_Init"} {
    ensure_mpi_initialized();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const WorldOrigin& origin() const override { return origin_; }

  std::unique_ptr<Communicator> duplicate(const std::string&) override {
    return std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
  }

  const std::vector<int>& node_of_rank() override {
    if (nodes_.empty()) nodes_ = node_of_every_rank(MPI_COMM_WORLD);
    return nodes_;
  }

  bool threads_supported() const override {
    int level = MPI_THREAD_SINGLE;
    check_mpi(MPI_Query_thread(&level), "MPI_Query_thread");
    return level >= MPI_THREAD_MULTIPLE;
  }

 private:
  WorldOrigin origin_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<int> nodes_;
};

}  // namespace

std::unique_ptr<TransportWorld> make_mpi_world(const std::string& launcher) {
  return std::make_unique<MpiWorld>(launcher);
}

}  // namespace concord
