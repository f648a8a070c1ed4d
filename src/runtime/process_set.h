// Process sets (Horovod's hvd.ProcessSet): a subset of the ranks that runs collectives
// among itself. Each set has its own control and data communicators (split from the
// world's, so its messages never match another set's), its own tensor queue (a name may be
// in flight once per set), its own Negotiator (with its own response cache and coordinator,
// the set's rank 0) and its own Executor. Set 0 is the world. The background thread
// negotiates the sets this rank belongs to in ascending id order every cycle; since every
// rank goes through the sets in the same order, the negotiations cannot deadlock.
//
// Sets are created at init() (InitOptions::process_sets) or, with
// CONCORD_DYNAMIC_PROCESS_SETS=1, by add_process_set()/remove_process_set(), which are
// collectives of the world negotiated like any other (CollectiveType::kProcessSet) and
// applied by every rank at the same point of the response order (ProcessSetTable::apply).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/autotune.h"
#include "common/config.h"
#include "common/timeline.h"
#include "control/negotiator.h"
#include "runtime/executor.h"
#include "runtime/tensor_queue.h"
#include "transport/communicator.h"

namespace concord {

/// One process set on this rank. Non-members keep only the id and the ranks.
struct ProcessSet {
  int32_t id = 0;
  std::vector<int> ranks;           ///< global ranks, ascending
  Communicator* control = nullptr;  ///< null on non-members
  Communicator* data = nullptr;
  std::unique_ptr<Communicator> owned_control;  // split ones (the world's are the runtime's)
  std::unique_ptr<Communicator> owned_data;
  /// A set formed by its members, on a member: a third communicator of the members for the
  /// point-to-point messages of the torch.distributed group it serves (null otherwise).
  std::shared_ptr<Communicator> p2p;
  TensorQueue queue;
  std::unique_ptr<Negotiator> negotiator;
  std::unique_ptr<Executor> executor;
  uint64_t barriers = 0;  // this rank's barriers in this set, to name them
  bool removed = false;   // set by ProcessSetTable::remove (background thread)

  bool member() const { return control != nullptr; }
  /// This rank's index in `ranks`, -1 if not a member.
  int rank_in_set(int global_rank) const;
  /// "process set 2 (ranks [0, 2])".
  std::string describe() const;
};

/// What a process set needs from the runtime to build its negotiator and executor.
struct ProcessSetContext {
  const Config& config;
  const CostParams& cost;
  const std::vector<int>& node_of_rank;  ///< node of every global rank
  Timeline& timeline;
  AutotuneTable world_tuned;           ///< measured selections adopted from rank 0 (the world's executor)
  std::string cost_model_cache_path;   ///< where the world's executor saves new measurements ("" = nowhere)
  const DeviceSet* devices = nullptr;  ///< what TensorView::device indexes (the runtime's)
  /// Members-only communicators for sets formed by their members (CommunicatorSet::
  /// create_group); empty: such sets are split from the world's communicators too.
  std::function<std::unique_ptr<Communicator>(const std::vector<int>&, const std::string&)> create_group;
};

/// The sets of this rank, by id. Lookups are thread-safe (framework threads enqueue);
/// creation and removal happen on the background thread (or in the constructor).
class ProcessSetTable {
 public:
  /// Creates set 0 over the world's communicators.
  ProcessSetTable(Communicator& world_control, Communicator& world_data, ProcessSetContext context);

  /// Creates a set of `ranks` (sorted, distinct, in [0, world size)); every rank calls it
  /// with the same ranks at the same point, members and non-members. Its communicators are
  /// split from the world's (collective over the world), or, for a set `formed_by_members`
  /// when the context has create_group, made by the members alone (the others create
  /// nothing), with a point-to-point communicator besides. Returns its id.
  int32_t add(const std::vector<int>& ranks, bool formed_by_members = false);
  /// Removes set `id` (not 0), failing its pending operations with StateError. Collective.
  void remove(int32_t id);

  /// The set `id`. Throws InvalidArgument naming the known ids if there is none.
  std::shared_ptr<ProcessSet> get(int32_t id) const;
  /// The id of the set with exactly these ranks, or -1.
  int32_t find(const std::vector<int>& ranks) const;
  /// Every set, ascending id.
  std::vector<std::shared_ptr<ProcessSet>> all() const;

  /// Executes a kProcessSet response of the world (every rank, same order): adds or
  /// removes the set and completes the requesting handle with {id}, or fails it with the
  /// same InvalidArgument on every rank (duplicate ranks, unknown id, set 0). The error
  /// response of a set formed by its members (formed_by_members) fails the members'
  /// handles with its MismatchError.
  void apply(const Response& response, TensorQueue& world_queue);

 private:
  std::shared_ptr<ProcessSet> make(int32_t id, const std::vector<int>& ranks, bool formed_by_members = false);

  Communicator& world_control_;
  Communicator& world_data_;
  ProcessSetContext context_;
  mutable std::mutex mutex_;
  std::map<int32_t, std::shared_ptr<ProcessSet>> sets_;
  int32_t next_id_ = 1;
};

/// Throws InvalidArgument unless `ranks` is non-empty, ascending, without duplicates and
/// within [0, world_size). `what` names the call.
void check_process_set_ranks(const std::vector<int>& ranks, int world_size, const std::string& what);

}  // namespace concord
