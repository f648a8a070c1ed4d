// One negotiation round of the background cycle (slow path of
// ../shared/specs/control-plane.md):
//   1. every rank encodes its new requests (and whether it asks to shut down);
//   2. gather of the encoded lists to rank 0 (lengths, then gatherv of bytes);
//   3. rank 0 feeds them to its Coordinator and takes the ready responses, in the order
//      the tensors became ready; shutdown is set if any rank asked for it;
//   4. broadcast of the encoded response list; every rank decodes the same list.
// Cost per cycle: 2 collectives of O(log P) latency; rank 0 receives every rank's
// requests, so bytes at the coordinator grow linearly with P (the response cache of issue
// "coordination that stays cheap at scale" removes this).
#pragma once

#include <optional>

#include "control/coordinator.h"
#include "control/message.h"
#include "transport/communicator.h"

namespace concord {

class Negotiator {
 public:
  /// `control` is a communicator used for nothing else (so control and data messages never
  /// match each other).
  explicit Negotiator(Communicator& control);

  /// Runs one round. Collective over `control`: every rank must call it once per cycle.
  /// Throws CommError on transport failure, InternalError on a malformed message.
  ResponseList negotiate(const RequestList& mine);

 private:
  Communicator& comm_;
  std::optional<Coordinator> coordinator_;  // rank 0 only
};

}  // namespace concord
