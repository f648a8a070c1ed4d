#include "sim/schedule.h"

#include <algorithm>

#include "common/enforce.h"

namespace concord::sim {

OpId Schedule::add(int src, int dst, uint64_t bytes, uint64_t reduce_bytes, bool join, std::span<const OpId> deps) {
  CONCORD_ENFORCE(src >= 0 && src < ranks_ && dst >= 0 && dst < ranks_, InvalidArgument, "schedule op ", src, " -> ",
                  dst, " outside ranks [0, ", ranks_, ")");
  CONCORD_ENFORCE(join || src != dst, InvalidArgument, "schedule message from rank ", src, " to itself");
  CONCORD_ENFORCE(ops_.size() < kNoOp, InvalidArgument, "schedule too large");
  const auto first = static_cast<uint32_t>(deps_.size());
  for (const OpId dep : deps) {
    if (dep == kNoOp) continue;
    CONCORD_ENFORCE(dep < ops_.size(), InvalidArgument, "dependency ", dep, " not yet in the schedule");
    deps_.push_back(dep);
  }
  ops_.push_back({src, dst, bytes, reduce_bytes, first, static_cast<uint32_t>(deps_.size()) - first, join});
  return static_cast<OpId>(ops_.size() - 1);
}

OpId Schedule::send(int src, int dst, uint64_t bytes, uint64_t reduce_bytes, std::span<const OpId> deps) {
  return add(src, dst, bytes, reduce_bytes, false, deps);
}

OpId Schedule::join(int rank, std::span<const OpId> deps) { return add(rank, rank, 0, 0, true, deps); }

Traffic Schedule::traffic() const {
  std::vector<uint64_t> messages(ranks_, 0), bytes(ranks_, 0);
  Traffic traffic;
  for (const Op& op : ops_) {
    if (op.join) continue;
    ++messages[op.src];
    bytes[op.src] += op.bytes;
    ++traffic.total_messages_sent;
    traffic.total_bytes_sent += op.bytes;
  }
  for (int r = 0; r < ranks_; ++r) {
    traffic.max_messages_sent = std::max(traffic.max_messages_sent, messages[r]);
    traffic.max_bytes_sent = std::max(traffic.max_bytes_sent, bytes[r]);
  }
  return traffic;
}

}  // namespace concord::sim
