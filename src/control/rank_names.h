// How the control plane's messages (mismatch errors, duplicate submissions, stall warnings)
// name the ranks of the communicator it negotiates on. On the world a rank is its own
// name; on a process set (runtime/process_set.h) the negotiation sees set-relative ranks
// 0..n-1, and users must read GLOBAL ranks and which set it was, as Horovod's messages
// give them.
#pragma once

#include <string>
#include <vector>

namespace concord {

struct RankNames {
  /// Global rank of each communicator rank, ascending; empty = identity (the world).
  std::vector<int> global;
  /// Appended to messages: "" on the world, " in process set 2 (ranks [0, 2])" on a set.
  std::string scope;

  /// The global rank of communicator rank `rank` (`rank` itself when out of range, so a
  /// message about a bad rank still prints it).
  int operator()(int rank) const { return rank >= 0 && rank < static_cast<int>(global.size()) ? global[rank] : rank; }
  /// The global ranks of communicator ranks `ranks`, in the same order.
  std::vector<int> operator()(const std::vector<int>& ranks) const {
    std::vector<int> out;
    out.reserve(ranks.size());
    for (int rank : ranks) out.push_back((*this)(rank));
    return out;
  }
};

}  // namespace concord
