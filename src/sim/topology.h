// Network topologies of the scale-out simulator (docs/simulator.md): which links a message
// between two ranks occupies, and at what latency and bandwidth.
//
// (a) Flat switch: every rank has one full-duplex link to a non-blocking switch. A message
//     occupies the sender's uplink and the receiver's downlink (the two directions are
//     independent resources) for alpha + bytes * beta seconds (gap + bytes * beta with a
//     LogGP gap: LinkParams::gap).
// (b) Two-level: nodes of R consecutive ranks (rank r lives on node r / R; the last node may
//     hold fewer). Messages inside a node use the ranks' own shared-memory links (intra alpha,
//     beta); messages between nodes occupy the sending node's NIC uplink and the receiving
//     node's NIC downlink (inter alpha, beta), which all ranks of a node share. Shared
//     memory copies are made by the receiving rank's CPU, so its reductions wait for them
//     (and they for its reductions): copies_use_cpu().
// This is Hockney's alpha-beta model with per-link contention, as used by the LogGP family of
// simulators (e.g. Hoefler, Schneider & Lumsdaine, "LogGOPSim", HPDC 2010).
#pragma once

#include <string>

#include "algorithms/cost_model.h"

namespace concord::sim {

/// Latency (seconds per message) and inverse bandwidth (seconds per byte) of one link class.
struct LinkParams {
  double alpha = 0;
  double beta = 0;
  /// Token-bucket shaping of the sender's side (Linux tbf, as scripts/cluster.sh shapes each
  /// host's egress): the bucket's depth in bytes, 0 for a plain link. While the sender's
  /// bucket holds tokens, bytes leave at `line_beta` (the unshaped link); beyond them at
  /// `beta`, the shaped rate, at which the bucket also refills. The receiver's side then
  /// runs at `line_beta` (what a host receives is bounded by its peers' shaping).
  double bucket_bytes = 0;
  double line_beta = 0;  ///< seconds per byte while tokens last (bucket_bytes > 0)
  /// Seconds of a message's latency during which it occupies the sender's and the
  /// receiver's link (LogGP's gap g: the per-message cost that back-to-back messages on one
  /// link pay in turn); the rest of alpha is flight time that overlaps with other messages.
  /// < 0 (the default): all of alpha occupies the links. Clamped to alpha.
  double gap = -1;

  /// Per-message link occupancy: min(gap, alpha), or alpha when gap < 0.
  double occupancy() const { return gap < 0 || gap > alpha ? alpha : gap; }
};

/// The links one message occupies and the parameters it is priced at.
struct Route {
  int up;             ///< index of the sender-side link (busy for LinkParams::occupancy() + bytes * beta)
  int down;           ///< index of the receiver-side link
  LinkParams params;  ///< intra- or inter-node constants
  bool inter_node;    ///< crosses a NIC
};

class Topology {
 public:
  /// Every rank on its own switch port, all links priced at `link`. Throws InvalidArgument
  /// when ranks < 1.
  static Topology flat(int ranks, LinkParams link);
  /// Nodes of `ranks_per_node` ranks: intra-node messages at `intra` on per-rank links,
  /// inter-node messages at `inter` on the nodes' shared NICs. Throws InvalidArgument when
  /// ranks < 1 or ranks_per_node < 1.
  static Topology two_level(int ranks, int ranks_per_node, LinkParams intra, LinkParams inter);
  /// Flat at the inter-node constants of `params` when ranks_per_node == 1 (one rank per
  /// host), else two-level at params' intra/inter constants.
  static Topology from_params(int ranks, int ranks_per_node, const CostParams& params);

  int ranks() const { return ranks_; }
  int ranks_per_node() const { return ranks_per_node_; }
  int nodes() const { return (ranks_ + ranks_per_node_ - 1) / ranks_per_node_; }
  int node_of(int rank) const { return rank / ranks_per_node_; }
  bool is_flat() const { return flat_; }
  /// Every node holds ranks_per_node ranks.
  bool uniform_nodes() const { return ranks_ % ranks_per_node_ == 0; }
  /// Number of link resources (each one direction of one link).
  int link_count() const { return 2 * ranks_ + (flat_ ? 0 : 2 * nodes()); }
  const LinkParams& intra() const { return intra_; }
  const LinkParams& inter() const { return inter_; }

  /// The constants of link resource `index` (in [0, link_count())): the per-rank links
  /// are intra-node (on a flat topology every link is), the NICs' inter-node.
  const LinkParams& link(int index) const { return flat_ || index < 2 * ranks_ ? intra_ : inter_; }
  /// Links of a message from `src` to `dst` (src != dst, both in [0, ranks)).
  Route route(int src, int dst) const;
  /// True on a two-level topology: intra-node messages are shared-memory copies made by the
  /// receiving rank's CPU, which its reductions also need (the engine serialises them).
  bool copies_use_cpu() const { return !flat_; }
  /// The link whose calendar stands for `rank`'s CPU when copies_use_cpu(): its intra-node
  /// receive link.
  int cpu_link(int rank) const { return 2 * rank + 1; }
  /// E.g. "flat(P=8)" or "two-level(P=16, R=4)".
  std::string describe() const;

 private:
  Topology(int ranks, int ranks_per_node, bool flat, LinkParams intra, LinkParams inter);

  int ranks_;
  int ranks_per_node_;
  bool flat_;
  LinkParams intra_;
  LinkParams inter_;
};

}  // namespace concord::sim
