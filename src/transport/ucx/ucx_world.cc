#include "transport/ucx_world.h"

#include <unistd.h>

#include <algorithm>
#include <numeric>

#include "common/backoff.h"
#include "common/config.h"
#include "common/enforce.h"
#include "transport/rendezvous/world_rendezvous.h"
#include "transport/tags.h"
#include "transport/ucx/ucx_communicator.h"

namespace concord {
namespace {

// CONCORD_PEER_TIMEOUT in milliseconds (0: no heartbeat).
std::chrono::milliseconds peer_heartbeat_timeout() {
  const std::string text = config_value("CONCORD_PEER_TIMEOUT");
  double seconds = -1;
  try {
    seconds = std::stod(text);
  } catch (const std::exception&) {
  }
  CONCORD_ENFORCE(seconds >= 0, InvalidArgument, "CONCORD_PEER_TIMEOUT='", text, "': expected seconds >= 0");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// Polls `request` until it completes (Backoff between polls).
void complete(RequestPtr request) {
  Backoff backoff;
  while (!request->test()) backoff.wait();
}

std::string host_name() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

class UcxWorld : public TransportWorld {
 public:
  UcxWorld(const LaunchEnvironment& env, rendezvous::OpenStore store, std::chrono::milliseconds timeout)
      : store_(std::move(store)), worker_(std::make_shared<UcxWorker>(env.size > 1 ? env.local_size : 0)) {
    origin_.transport = "ucx";
    origin_.launcher = env.launcher;
    std::vector<rendezvous::PeerAddress> peers;
    const rendezvous::PeerAddress mine{host_name(), static_cast<int64_t>(::getpid()), worker_->address()};
    if (env.size == 1) {
      origin_.rendezvous = "none";
      peers.push_back(mine);
    } else {
      origin_.rendezvous = store_.describe();
      rendezvous::RendezvousOptions options{env.rank, env.size, env.run_id, rendezvous::Clock::now() + timeout};
      peers = store_.exchange(options, mine);
    }
    std::vector<std::vector<uint8_t>> addresses;
    std::vector<std::string> hosts;
    std::vector<int64_t> pids;
    for (auto& peer : peers) {
      addresses.push_back(std::move(peer.address));
      hosts.push_back(std::move(peer.host));
      pids.push_back(peer.pid);
    }
    worker_->connect(addresses);
    worker_->set_peers(hosts, pids);
    const auto peer_timeout = peer_heartbeat_timeout();
    if (env.size > 1 && peer_timeout.count() > 0 && store_.store) {  // PMIx: no store to beat in
      worker_->set_heartbeat(std::make_unique<PeerHeartbeat>(store_.store, rendezvous::key_prefix(env.run_id), env.rank,
                                                             env.size, peer_timeout));
    }
    for (const auto& host : hosts) {  // node numbers in order of each node's lowest rank
      const auto first = std::find(hosts.begin(), hosts.end(), host) - hosts.begin();
      nodes_.push_back(first == static_cast<long>(nodes_.size()) ? next_node_++ : nodes_[first]);
    }
    std::vector<int> members(env.size);
    std::iota(members.begin(), members.end(), 0);
    world_ = std::make_unique<UcxCommunicator>(worker_, 0, std::move(members), env.rank);
  }

  int rank() const override { return world_->rank(); }
  int size() const override { return world_->size(); }
  const WorldOrigin& origin() const override { return origin_; }
  std::unique_ptr<Communicator> duplicate(const std::string&) override { return world_->split(0, world_->rank()); }

  // The members agree on a communicator id as split() does, by messages among themselves on
  // the world communicator (tag kGroupFormation): each sends the lowest id it has free and
  // the group's ranks to the lowest member, which answers with the highest proposal.
  std::unique_ptr<Communicator> create_group(const std::vector<int>& members, const std::string& purpose) override {
    const std::string what = "create_group '" + purpose + "'";
    check_group_members(members, world_->rank(), world_->size(), what);
    const int leader = members.front();
    std::vector<int64_t> mine = {worker_->next_communicator_id()};
    mine.insert(mine.end(), members.begin(), members.end());
    int64_t id = mine[0];
    if (world_->rank() == leader) {
      std::vector<std::vector<int64_t>> proposals(members.size(), std::vector<int64_t>(mine.size()));
      for (size_t i = 1; i < members.size(); ++i)
        complete(world_->irecv(proposals[i].data(), mine.size() * sizeof(int64_t), members[i], tags::kGroupFormation));
      for (size_t i = 1; i < members.size(); ++i) {
        CONCORD_ENFORCE(std::equal(mine.begin() + 1, mine.end(), proposals[i].begin() + 1), CommError, what, ": rank ",
                        members[i], " formed another group with rank ", leader, " at this point");
        id = std::max(id, proposals[i][0]);
      }
      for (size_t i = 1; i < members.size(); ++i)
        complete(world_->isend(&id, sizeof id, members[i], tags::kGroupFormation));
    } else {
      complete(world_->isend(mine.data(), mine.size() * sizeof(int64_t), leader, tags::kGroupFormation));
      complete(world_->irecv(&id, sizeof id, leader, tags::kGroupFormation));
    }
    const uint32_t reserved = worker_->reserve_communicator_id(static_cast<uint32_t>(id));
    CONCORD_ENFORCE(reserved == id, CommError, what, ": communicator id ", id,
                    " was taken on this rank while the members agreed on it (a communicator was created "
                    "concurrently on another thread)");
    const int rank =
        static_cast<int>(std::lower_bound(members.begin(), members.end(), world_->rank()) - members.begin());
    return std::make_unique<UcxCommunicator>(worker_, reserved, members, rank);
  }
  const std::vector<int>& node_of_rank() override { return nodes_; }
  bool threads_supported() const override { return true; }
  void abort(const std::string& reason) override { worker_->abort(reason); }

 private:
  rendezvous::OpenStore store_;  // kept: a TCP store's server must outlive every rank's rendezvous
  std::shared_ptr<UcxWorker> worker_;
  std::unique_ptr<UcxCommunicator> world_;
  std::vector<int> nodes_;
  int next_node_ = 0;
  WorldOrigin origin_;
};

}  // namespace

bool ucx_available() { return true; }

std::unique_ptr<TransportWorld> make_ucx_world(const LaunchEnvironment& env, rendezvous::OpenStore store,
                                               std::chrono::milliseconds timeout) {
  return std::make_unique<UcxWorld>(env, std::move(store), timeout);
}

}  // namespace concord
