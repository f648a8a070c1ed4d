#include "transport/mpi_world.h"

#include "transport/mpi_communicator.h"

namespace concord {
namespace {

// The tag of MPI_Comm_create_group: a rank creates its groups one at a time, so one tag
// serves them all.
constexpr int kCreateGroupTag = 0x3A50;

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

  // MPI_Comm_create_group of MPI_COMM_WORLD's group restricted to `members`, collective over
  // them only, then a communicator that owns it.
  std::unique_ptr<Communicator> create_group(const std::vector<int>& members, const std::string& purpose) override {
    check_group_members(members, rank_, size_, "create_group '" + purpose + "'");
    MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world_group), "MPI_Comm_group");
    const int included = MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &group);
    MPI_Group_free(&world_group);
    check_mpi(included, "MPI_Group_incl");
    MPI_Comm comm = MPI_COMM_NULL;
    const int created = MPI_Comm_create_group(MPI_COMM_WORLD, group, kCreateGroupTag, &comm);
    MPI_Group_free(&group);
    check_mpi(created, "MPI_Comm_create_group");
    return MpiCommunicator::adopt_comm(comm);
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
