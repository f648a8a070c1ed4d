// The coordinator's message table (rank 0, the negotiation's slow path; docs/algorithms.md,
// "Negotiation"): counts, per tensor name, which ranks have requested it; a tensor is ready when every
// rank has. Ready tensors become responses in the order they became ready, which is the
// one global order every rank executes. Before answering, the coordinator checks that all
// ranks agree on the collective, dtype, shape (all but dim 0 for allgather), reduce op,
// scale factors, root and group; any disagreement becomes an ERROR response naming the
// tensor, the ranks and the differing values, raised on every rank. A process set formed by
// its members (Request::root == kFormedByMembers) is ready once its members have requested it. Members of a group
// (grouped allreduce) are held back until every member is ready, then released together.
//
// Join (Horovod's hvd.join()): a rank that has run out of data sends a kJoin request. From
// then on a tensor is ready once every rank that has not joined has requested it; the
// response lists the joined ranks, which take part contributing nothing. When every rank
// has joined, a kJoin response (sizes = {last rank to join}) completes join() everywhere
// and the joined set is emptied.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "control/message.h"
#include "control/rank_names.h"

namespace concord {

class Coordinator {
 public:
  /// Coordinates `size` ranks; its messages name them by `names` (global ranks and the
  /// process set, on a set's negotiation).
  explicit Coordinator(int size, RankNames names = {});

  /// Records a request (request.rank in [0, size)). A rank requesting a name twice before
  /// it was answered yields an ERROR response once every rank has requested it.
  void add(const Request& request);

  /// Takes the responses of every tensor all ranks have requested, in ready order, and
  /// forgets those tensors.
  std::vector<Response> take_ready();

  /// Number of tensors requested by some but not all ranks.
  size_t pending() const { return table_.size() - ready_.size() - held_for_group(); }

  /// Number of tensors ready on every rank but held back for the rest of their group.
  size_t held_for_group() const;

  /// The ranks that have joined and not yet been released by a kJoin response, ascending.
  std::vector<int32_t> joined() const;

 private:
  struct Entry {
    std::vector<std::optional<Request>> by_rank;
    int count = 0;
    std::string duplicate;  // non-empty if a rank requested the name twice
    std::chrono::steady_clock::time_point first_seen;
  };

  // Moves `name` to ready_ (or to its group's waiting members) once every rank that has
  // not joined has requested it.
  void check_ready(const std::string& name);
  void add_join(const Request& request);

  int size_;
  RankNames names_;
  std::vector<bool> joined_;
  int joined_count_ = 0;
  int last_joined_ = -1;
  bool join_complete_ = false;  // every rank joined: take_ready() ends with the kJoin response
  std::string join_name_;
  std::unordered_map<std::string, Entry> table_;
  std::unordered_map<std::string, std::vector<std::string>> groups_;  // group -> ready members
  std::vector<std::string> ready_;
};

/// Builds the response for one tensor from the requests of the ranks that submitted it
/// (all `size` ranks but the `joined` ones; size 0 = requests.size()): either the
/// collective's response or an ERROR response describing the first mismatch, naming the
/// ranks (and a broadcast's roots) by `names`. Exposed for unit tests.
Response build_response(const std::vector<Request>& requests, int size = 0, const std::vector<int32_t>& joined = {},
                        const RankNames& names = {});

}  // namespace concord
