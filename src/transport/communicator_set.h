// The communicators one Concord runtime runs on, made by the transport layer and injected
// into the runtime (as Horovod's Controller is): an MPI
// job gets them from mpi_communicator_set() (src/transport/mpi_communicator.h), the unit
// tests from split_communicator_set() over an in-process world, so the whole negotiate ->
// fuse -> execute cycle also runs with threads as ranks.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/communicator.h"

namespace concord {

struct CommunicatorSet {
  /// Negotiation and settings adoption; never carries data.
  std::unique_ptr<Communicator> control;
  /// The algorithms' messages: same ranks in the same order as `control`, separate
  /// matching space, so negotiation messages never match data messages.
  std::unique_ptr<Communicator> data;
  /// Node (host) of every rank, numbered 0, 1, ... in order of each node's lowest rank;
  /// empty = every rank on one node.
  std::vector<int> node_of_rank;
  /// The transport may be called from several threads at once (MPI: MPI_THREAD_MULTIPLE).
  bool threads_supported = true;
  /// Makes a communicator of the world ranks `members` (ascending), collective over them
  /// only, named `purpose` (TransportWorld::create_group); empty where the transport has
  /// none (the in-process worlds of the unit tests): process sets formed by their members
  /// are then split from the world's communicators by every rank.
  std::function<std::unique_ptr<Communicator>(const std::vector<int>& members, const std::string& purpose)>
      create_group;

  /// This rank's index among the ranks of its node, and how many ranks its node holds.
  int local_rank() const;
  int local_size() const;
};

/// Two communicators split from `world` (control, then data; collective over `world`),
/// every rank on one node unless `node_of_rank` says otherwise. `world` must outlive
/// them.
CommunicatorSet split_communicator_set(Communicator& world, std::vector<int> node_of_rank = {});

}  // namespace concord
