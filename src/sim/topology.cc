#include "sim/topology.h"

#include "common/enforce.h"

namespace concord::sim {

Topology::Topology(int ranks, int ranks_per_node, bool flat, LinkParams intra, LinkParams inter)
    : ranks_(ranks), ranks_per_node_(ranks_per_node), flat_(flat), intra_(intra), inter_(inter) {
  CONCORD_ENFORCE(ranks >= 1, InvalidArgument, "topology needs at least one rank, got ", ranks);
  CONCORD_ENFORCE(ranks_per_node >= 1, InvalidArgument, "ranks per node must be >= 1, got ", ranks_per_node);
}

Topology Topology::flat(int ranks, LinkParams link) { return Topology(ranks, 1, true, link, link); }

Topology Topology::two_level(int ranks, int ranks_per_node, LinkParams intra, LinkParams inter) {
  return Topology(ranks, ranks_per_node, false, intra, inter);
}

Topology Topology::from_params(int ranks, int ranks_per_node, const CostParams& params) {
  const LinkParams intra{params.alpha, params.beta};
  const LinkParams inter{params.inter_alpha, params.inter_beta};
  if (ranks_per_node <= 1) return flat(ranks, inter);
  return two_level(ranks, ranks_per_node, intra, inter);
}

Route Topology::route(int src, int dst) const {
  if (flat_ || node_of(src) == node_of(dst)) return {2 * src, 2 * dst + 1, intra_, false};
  const int nic = 2 * ranks_;
  return {nic + 2 * node_of(src), nic + 2 * node_of(dst) + 1, inter_, true};
}

std::string Topology::describe() const {
  if (flat_) return "flat(P=" + std::to_string(ranks_) + ")";
  return "two-level(P=" + std::to_string(ranks_) + ", R=" + std::to_string(ranks_per_node_) + ")";
}

}  // namespace concord::sim
