// The control plane's collectives (ControlCollectives) built on point-to-point messages,
// for transports that have no collectives of their own (the in-process and UCX
// transports): gather to a root and broadcast from it as a star of length-prefixed
// messages, the bitwise allreduce and the barrier as a gather then a broadcast. The
// negotiation moves a few hundred bytes per cycle, so a star (P - 1 messages at the root)
// costs less than the rounds of a tree at the sizes Concord runs.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "transport/communicator.h"
#include "transport/request_set.h"

namespace concord {

struct P2pControl {
  PointToPoint& p2p;
  /// Tag of the gathers; broadcasts use tag + 1 (tags::kInProcessControl).
  int tag;
  /// Blocks until every request of the set has completed (RequestSet::wait, or a
  /// transport's event-driven wait).
  std::function<void(RequestSet&)> wait;

  /// ControlCollectives::gather_bytes: root gets size() strings in rank order.
  std::vector<std::vector<uint8_t>> gather_bytes(const std::vector<uint8_t>& mine, int root) const;
  /// ControlCollectives::broadcast_bytes from `root`.
  void broadcast_bytes(std::vector<uint8_t>& data, int root) const;
  /// ControlCollectives::allreduce_bits: gather to rank 0, reduce, broadcast. Throws
  /// CommError when the ranks' vectors differ in length.
  void allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) const;
  /// ControlCollectives::barrier: an empty gather then an empty broadcast.
  void barrier() const;
};

}  // namespace concord
