#include "sim/closed_form.h"

#include <algorithm>
#include <cmath>

#include "algorithms/exchange_schedule.h"
#include "patterns/binary_tree.h"
#include "patterns/chunking.h"
#include "patterns/ring.h"
#include "sim/schedules.h"

namespace concord::sim {
namespace {

// The constants of the slowest link a flat algorithm crosses on `topology`.
LinkParams slowest(const Topology& topology) {
  if (topology.is_flat() || topology.nodes() == 1) return topology.intra();
  const LinkParams& a = topology.intra();
  const LinkParams& b = topology.inter();
  return {std::max(a.alpha, b.alpha), std::max(a.beta, b.beta)};
}

double message(const LinkParams& link, double bytes) { return link.alpha + bytes * link.beta; }

int ceil_log2(int value) {
  int bits = 0;
  while ((1 << bits) < value) ++bits;
  return bits;
}

int log2_floor(int value) {
  int bits = 0;
  while ((2 << bits) <= value) ++bits;
  return bits;
}

// One range of `bytes` sent as ExchangeSchedule sends it, in pieces of `piece` bytes back
// to back on `link`, each reduced (gamma > 0) as it arrives, after the one before: the
// time until the last piece is reduced.
double pieces_time(const LinkParams& link, double bytes, double piece, double gamma) {
  double sent = 0, done = 0;
  double left = bytes;
  do {
    const double size = std::min(piece, left);
    sent += link.occupancy() + size * link.beta;
    done = std::max(sent + link.alpha - link.occupancy(), done) + gamma * size;
    left -= size;
  } while (left > 0);
  return done;
}

// True when a flat algorithm's copies and reductions take turns on each rank's CPU: every
// rank on one node of shared memory (Topology::copies_use_cpu()).
bool serial(const Topology& topology) { return topology.copies_use_cpu() && topology.nodes() == 1; }

// Ring allreduce among `P` parties of `count` elements on links `link`; `serial`: each
// chunk's copy and reduction take turns on the receiving CPU.
double ring_time(int P, const Problem& problem, const LinkParams& link, double gamma, bool serial) {
  if (P == 1 || problem.count == 0) return 0;
  const size_t largest = patterns::segment(problem.count, P, 0).count;
  const int C = chunk_count(largest * problem.element_size, problem.chunk_bytes);
  const double m = static_cast<double>(patterns::segment(largest, C, 0).count * problem.element_size);
  const double T = message(link, m), G = gamma * m;
  if (serial) return (P - 1) * C * (T + G) + (P - 1) * C * T;
  return (P - 1) * std::max({C * T, T + G, C * G}) + (P - 1) * C * T;
}

// Pipelined binary tree allreduce (reduce, then broadcast) of `count` elements.
double tree_time(int P, size_t count, const Problem& problem, const LinkParams& link, double gamma,
                 bool serial = false) {
  if (P == 1 || count == 0) return 0;
  const int h = patterns::tree_height(P);
  const int K = patterns::ChunkPlan::make(count, problem.element_size, problem.chunk_bytes).chunks;
  const double m = static_cast<double>(patterns::segment(count, K, 0).count * problem.element_size);
  const double T = message(link, m), G = gamma * m;
  if (P == 2) return T + G + (K - 1) * (serial ? T + G : std::max(T, G)) + K * T;
  const double up = (h - 1) * (2 * T + G) + T + G + (K - 1) * (serial ? 2 * T + 2 * G : std::max(2 * T, 2 * G));
  const double down = T + (h - 1) * 2 * T + (K - 1) * 2 * T;
  return up + down;
}

// Overlapped (C-Cube) allreduce of `count` elements on the binary tree (`trees` = 1), or of
// `count` and the rest of the buffer on the two trees of the double binary tree (`trees` = 2).
double overlapped_tree_time(int P, size_t count, size_t second, int trees, const Problem& problem,
                            const LinkParams& link, double gamma) {
  if (P == 1 || count == 0) return 0;
  if (second == 0) trees = 1;  // tree 1 carries nothing (a one-element buffer)
  const int h = patterns::tree_height(P);
  const int K = patterns::ChunkPlan::make(count, problem.element_size, problem.chunk_bytes).chunks;
  const double m = static_cast<double>(patterns::segment(count, K, 0).count * problem.element_size);
  const double T = message(link, m), G = gamma * m;
  int links = 0;   // messages per chunk on the busiest rank's link (children + parent)
  int fan_in = 0;  // chunks the busiest rank reduces per chunk step
  for (int r = 0; r < P; ++r) {
    int mine = 0, children = 0;
    for (int t = 0; t < trees; ++t) {
      const patterns::TreeNode node = patterns::double_binary_tree(r, P, t);
      mine += node.child_count() + (node.is_root() ? 0 : 1);
      children += node.child_count();
    }
    links = std::max(links, mine);
    fan_in = std::max(fan_in, children);
  }
  const double step = std::max(links * T, fan_in * G);
  if (trees == 2 && K > 1) {  // both trees' pipelines share every link from the start
    if (P == 2) return K * step;
    return (h - 1) * links * T + h * G + (K - 1) * step;
  }
  const double fan = P == 2 ? 1 : 2;  // messages per chunk an inner node serves on the way
  const double up = (h - 1) * (fan * T + G) + T + G;
  const double down = T + (h - 1) * fan * T;
  return up + down + (K - 1) * step;
}

}  // namespace

double ring_closed_form(const Problem& problem, const Topology& topology, double gamma) {
  return ring_time(problem.ranks, problem, slowest(topology), gamma, serial(topology));
}

double recursive_doubling_closed_form(const Problem& problem, const Topology& topology, double gamma) {
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return 0;
  const LinkParams link = slowest(topology);
  const double n = static_cast<double>(problem.bytes());
  const double T = message(link, n), G = gamma * n;
  const int rounds = log2_floor(P);
  const bool fold = (1 << rounds) != P;
  return rounds * (T + G) + (fold ? 2 * T + G : 0);
}

double halving_doubling_closed_form(const Problem& problem, const Topology& topology, double gamma) {
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return 0;
  const LinkParams link = slowest(topology);
  const double n = static_cast<double>(problem.bytes());
  const double piece = static_cast<double>(ExchangeSchedule::piece_size(problem.chunk_bytes));
  const int rounds = log2_floor(P);
  double seconds = 0;
  double part = n;
  for (int j = 1; j <= rounds; ++j) {  // a halving round and its doubling round
    part /= 2;
    seconds += pieces_time(link, part, piece, gamma) + pieces_time(link, part, piece, 0);
  }
  if ((1 << rounds) != P) seconds += pieces_time(link, n, piece, gamma) + pieces_time(link, n, piece, 0);
  return seconds;
}

double tree_closed_form(const Problem& problem, const Topology& topology, double gamma) {
  return tree_time(problem.ranks, problem.count, problem, slowest(topology), gamma, serial(topology));
}

double double_tree_closed_form(const Problem& problem, const Topology& topology, double gamma) {
  const int P = problem.ranks;
  const size_t half = patterns::segment(problem.count, 2, 0).count;
  const LinkParams link = slowest(topology);
  double seconds = tree_time(P, half, problem, link, gamma);
  if (P > 4 && half > 0) {
    // Each rank's uplink carries its inner-tree sends and its leaf-tree sends; the leaf sends
    // (all ready at once) go first, which costs one message time per chunk in the engine.
    const int K = patterns::ChunkPlan::make(half, problem.element_size, problem.chunk_bytes).chunks;
    const double m = static_cast<double>(patterns::segment(half, K, 0).count * problem.element_size);
    seconds += (K - 1) * message(link, m);
  }
  return seconds;
}

double overlapped_tree_closed_form(const Problem& problem, const Topology& topology, double gamma) {
  return overlapped_tree_time(problem.ranks, problem.count, 0, 1, problem, slowest(topology), gamma);
}

double overlapped_double_tree_closed_form(const Problem& problem, const Topology& topology, double gamma) {
  return overlapped_tree_time(problem.ranks, patterns::segment(problem.count, 2, 0).count,
                              patterns::segment(problem.count, 2, 1).count, 2, problem, slowest(topology), gamma);
}

double binomial_reduce_closed_form(const Problem& problem, const LinkParams& link, double gamma) {
  if (problem.ranks == 1 || problem.count == 0) return 0;
  const int d = ceil_log2(problem.ranks);  // children of the root
  const int K = patterns::ChunkPlan::make(problem.count, problem.element_size, problem.chunk_bytes).chunks;
  const double m = static_cast<double>(patterns::segment(problem.count, K, 0).count * problem.element_size);
  const double T = message(link, m), G = gamma * m;
  return K * d * (T + G);  // within a node: the root's copies and reductions take turns
}

double binomial_broadcast_closed_form(const Problem& problem, const LinkParams& link) {
  if (problem.ranks == 1 || problem.count == 0) return 0;
  return ceil_log2(problem.ranks) * message(link, static_cast<double>(problem.count));
}

double chain_broadcast_closed_form(const Problem& problem, const LinkParams& link) {
  const auto plan = patterns::ChunkPlan::make(problem.count, 1, problem.chunk_bytes);
  if (problem.ranks == 1 || plan.chunks == 0) return 0;
  return (problem.ranks - 1 + plan.chunks - 1) * message(link, static_cast<double>(plan.largest_bytes()));
}

}  // namespace concord::sim
