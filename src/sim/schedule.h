// A collective's message schedule as the simulator sees it: a dependency graph of
// point-to-point messages (and zero-cost local joins). A message may leave its sender once
// every operation it depends on has completed at the sender; a message completes at its
// receiver when it has arrived and, if it carries data to reduce, that data has been
// reduced (gamma per byte, one reduction at a time per rank). Built by the per-algorithm
// generators in sim/schedules.h from the same patterns (src/patterns/) the algorithms use.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace concord::sim {

using OpId = uint32_t;
/// "No dependency": ignored wherever a dependency list is given.
inline constexpr OpId kNoOp = UINT32_MAX;

/// One operation of a schedule.
struct Op {
  int32_t src;            ///< sending rank (for a join: the rank it runs on)
  int32_t dst;            ///< receiving rank (for a join: == src)
  uint64_t bytes;         ///< payload in bytes (0 allowed; still one message)
  uint64_t reduce_bytes;  ///< bytes the receiver reduces on arrival (0: a plain copy)
  uint32_t first_dep;     ///< index into Schedule::deps()
  uint32_t dep_count;
  bool join;  ///< a local join: completes when its dependencies have, costs nothing
};

/// Messages and bytes sent, per the transport's TrafficCounters conventions (zero-byte
/// messages count; joins do not).
struct Traffic {
  uint64_t max_messages_sent = 0;    ///< by the busiest rank
  uint64_t max_bytes_sent = 0;       ///< by the busiest rank
  uint64_t total_messages_sent = 0;  ///< summed over ranks
  uint64_t total_bytes_sent = 0;     ///< summed over ranks
};

class Schedule {
 public:
  explicit Schedule(int ranks) : ranks_(ranks) {}

  /// Adds a message of `bytes` bytes from `src` to `dst` that waits for `deps` (completed at
  /// `src`); the receiver reduces `reduce_bytes` of it on arrival. Returns its id.
  OpId send(int src, int dst, uint64_t bytes, uint64_t reduce_bytes, std::span<const OpId> deps);
  OpId send(int src, int dst, uint64_t bytes, uint64_t reduce_bytes, std::initializer_list<OpId> deps = {}) {
    return send(src, dst, bytes, reduce_bytes, std::span<const OpId>(deps.begin(), deps.size()));
  }
  /// Adds a zero-cost local join on `rank` completing when all of `deps` have.
  OpId join(int rank, std::span<const OpId> deps);

  int ranks() const { return ranks_; }
  size_t size() const { return ops_.size(); }
  const Op& op(OpId id) const { return ops_[id]; }
  const std::vector<Op>& ops() const { return ops_; }
  const std::vector<OpId>& deps() const { return deps_; }
  /// Counts of every message (not joins), per rank then max and sum.
  Traffic traffic() const;

 private:
  OpId add(int src, int dst, uint64_t bytes, uint64_t reduce_bytes, bool join, std::span<const OpId> deps);

  int ranks_;
  std::vector<Op> ops_;
  std::vector<OpId> deps_;
};

}  // namespace concord::sim
