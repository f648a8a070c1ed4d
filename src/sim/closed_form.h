// Closed-form alpha-beta-gamma times of the allreduce algorithms, for problems too large to
// simulate message by message (ring at P=32768 has ~2 P^2 messages). Each formula is the
// step-by-step engine's behaviour on an idealised, symmetric run (every link of a step equally
// loaded, largest segment everywhere), so it agrees with the engine to within a few percent
// at small P (tests/unit/test_sim_closed_form.cc checks P=2..64). Notation: T(m) = alpha +
// m beta for one message of m bytes on the slowest link the algorithm uses, G(m) = gamma m.
//
//   ring (C chunks of m bytes per segment):
//     (P-1) max(C T, T + G, C G) + (P-1) C T     (2(P-1)C T when the link is the bottleneck)
//     on one node of shared memory, where the receiving CPU makes the copy and then reduces
//     (Topology::copies_use_cpu()): (P-1) C (T + G) + (P-1) C T; likewise the pipelined
//     tree's (K-1) max(2T, 2G) becomes (K-1)(2T + 2G) there
//   recursive doubling (p = 2^floor(log2 P), fold when P != p):
//     log2 p (T(n) + G(n)) + [P != p] (2 T(n) + G(n))
//   halving-doubling: sum_{j=1..log2 p} (R(n / 2^j) + S(n / 2^j)) + [P != p] (R(n) + S(n)), where
//     a range of m bytes goes in k = ceil(m / c) pieces back to back (c =
//     CONCORD_RING_CHUNK_BYTES rounded down to a multiple of 8), S(m) = alpha + (k-1) o +
//     m beta (copied; o = the link's per-message occupancy, min(gap, alpha)), and R(m) =
//     S(m) + the last piece's G when each piece is reduced as it lands (or later, when
//     G > T: a two-stage pipeline); with one piece R + S = 2 T(m) + G(m)
//   pipelined binary tree of height h, K chunks of m bytes (inner nodes serve two children
//   through one link, hence the 2T per chunk):
//     up   (h-1)(2T + G) + T + G + (K-1) max(2T, 2G)
//     down T + (h-1) 2T + (K-1) 2T
//   double binary tree: the tree's formula at n/2 (both trees run at once, every rank is
//     inner in one tree, so its links carry the same load as one tree with half the data).
//   overlapped tree (C-Cube; the broadcast of chunk c starts when the root has reduced it):
//     one pipeline: the first chunk's way up and down, then (K-1) chunks at the busiest
//     rank's pace, L messages per chunk on its link (L = its children + parent, 3 for an
//     inner node of the binary tree, summed over both trees for the double tree):
//     (h-1)(2T + G) + T + G + T + (h-1) 2T + (K-1) max(L T, f G), f = the most children
//   overlapped double tree (K chunks of n/2, L and f summed over both trees, which load
//     every link from the start): (h-1) L T + h G + (K-1) max(L T, f G); K max(L T, f G) at
//     P = 2; with K = 1 the single tree's formula (one chunk per tree, latency-bound).
//   pipelined binomial reduce (ReduceBinomial; d = ceil(log2 P) children at the root, K chunks
//     of m bytes), within a node, the root's copies and reductions taking turns: K d (T + G)
//   binomial broadcast (whole message): ceil(log2 P) T(n)
//   chain broadcast (K chunks of m bytes): (P-1 + K-1) T(m)
//   hierarchical: the sum of its phases' closed forms (sim/models.cc): its reduce within a
//     node at intra-node constants, the flat allreduce it runs among the N leaders at
//     inter-node constants, its broadcast within a node.
#pragma once

#include "algorithms/cost_model.h"
#include "sim/topology.h"

namespace concord::sim {

/// Closed-form seconds of each algorithm for `problem` (ranks, count, element_size,
/// chunk_bytes) on `topology`, reduction at `gamma` s/B. Flat algorithms on a two-level
/// topology with several nodes are priced at the slower of the intra/inter constants.
double ring_closed_form(const Problem& problem, const Topology& topology, double gamma);
double recursive_doubling_closed_form(const Problem& problem, const Topology& topology, double gamma);
double halving_doubling_closed_form(const Problem& problem, const Topology& topology, double gamma);
double tree_closed_form(const Problem& problem, const Topology& topology, double gamma);
double double_tree_closed_form(const Problem& problem, const Topology& topology, double gamma);
double overlapped_tree_closed_form(const Problem& problem, const Topology& topology, double gamma);
double overlapped_double_tree_closed_form(const Problem& problem, const Topology& topology, double gamma);
/// Phases of composed algorithms on one link class (`problem` on the phase's ranks; the
/// broadcasts' count is bytes).
double binomial_reduce_closed_form(const Problem& problem, const LinkParams& link, double gamma);
double binomial_broadcast_closed_form(const Problem& problem, const LinkParams& link);
double chain_broadcast_closed_form(const Problem& problem, const LinkParams& link);

}  // namespace concord::sim
