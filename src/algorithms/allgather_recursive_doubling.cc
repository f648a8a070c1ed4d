#include "algorithms/allgather_recursive_doubling.h"

#include <algorithm>

#include "algorithms/doubling_steps.h"
#include "common/enforce.h"
#include "patterns/recursive_doubling.h"
#include "transport/tags.h"

namespace concord {
namespace {
constexpr int kDataTag = tags::kAllgatherRecursiveDoubling;

std::vector<size_t> near_equal_blocks(size_t bytes, int ranks) {
  std::vector<size_t> blocks(ranks);
  for (int r = 0; r < ranks; ++r) blocks[r] = patterns::segment(bytes, ranks, r).count;
  return blocks;
}
}  // namespace

AllgatherRecursiveDoubling::AllgatherRecursiveDoubling(Communicator& comm, ScratchBuffer& scratch)
    : comm_(comm), schedule_(comm, scratch, kDataTag) {}

void AllgatherRecursiveDoubling::start(void* output, const std::vector<size_t>& block_bytes) {
  CONCORD_ENFORCE(static_cast<int>(block_bytes.size()) == comm_.size(), InternalError, "allgather got ",
                  block_bytes.size(), " block sizes for ", comm_.size(), " ranks");
  schedule_.start(static_cast<uint8_t*>(output), steps(comm_.rank(), block_bytes));
}

Progress AllgatherRecursiveDoubling::progress() { return schedule_.progress(); }

std::vector<ExchangeStep> AllgatherRecursiveDoubling::steps(int rank, const std::vector<size_t>& block_bytes) {
  std::vector<ExchangeStep> result;
  const int ranks = static_cast<int>(block_bytes.size());
  std::vector<size_t> offset(ranks + 1, 0);
  for (int r = 0; r < ranks; ++r) offset[r + 1] = offset[r] + block_bytes[r];
  if (ranks == 1 || offset[ranks] == 0) return result;
  const patterns::RecursiveDoubling pattern{rank, ranks};
  const patterns::Segment whole{0, offset[ranks]};
  // The rank that folds out sends its own block and gets the whole output back.
  const int out = pattern.folds_out() ? rank : pattern.fold_partner();
  const patterns::Segment sent = out < 0 ? patterns::Segment{0, 0} : patterns::Segment{offset[out], block_bytes[out]};
  if (append_fold(result, pattern, sent, whole, Combine::kCopy)) return result;
  append_doubling_steps(result, pattern, [&](patterns::BlockRange range) {
    const size_t begin = offset[pattern.first_real_block(range.begin)];
    return patterns::Segment{begin, offset[pattern.first_real_block(range.end)] - begin};
  });
  append_unfold(result, pattern, whole);
  return result;
}

Cost AllgatherRecursiveDoubling::cost(const Problem& problem) {
  Cost cost;
  const int P = problem.ranks;
  if (P == 1 || problem.count == 0) return cost;
  const std::vector<size_t> blocks = near_equal_blocks(problem.count, P);
  tally_traffic(cost, P, [&](int rank) { return steps(rank, blocks); });
  const patterns::RecursiveDoubling pattern{0, P};
  const int pof2 = pattern.pof2();
  const int fold = P != pof2 ? 1 : 0;
  size_t largest_virtual = 0;
  for (int v = 0; v < pof2; ++v)
    largest_virtual = std::max(largest_virtual, patterns::rank_blocks(problem.count, pattern, {v, v + 1}).count);
  const double n = static_cast<double>(problem.count);
  cost.rounds = pattern.rounds() + 2 * fold;
  cost.wire_bytes = (pof2 - 1) * static_cast<double>(largest_virtual) + fold * (static_cast<double>(blocks[0]) + n);
  return cost.place(problem.nodes);
}

}  // namespace concord
