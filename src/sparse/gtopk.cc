#include "sparse/gtopk.h"

#include <algorithm>

#include "algorithms/broadcast_binomial.h"
#include "common/enforce.h"
#include "patterns/binomial_tree.h"
#include "transport/request_set.h"
#include "transport/tags.h"

namespace concord::sparse {
namespace {

constexpr int kReduceTag = tags::kSparseTreeReduce;

// out = a + b over the union of their ascending indices (common indices: a's value + b's).
void merge_sum(const CooBlock& a, const CooBlock& b, CooBlock& out) {
  out.clear();
  int64_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a.indices[i] < b.indices[j])) {
      out.push_back(a.indices[i], a.values[i]);
      ++i;
    } else if (i == a.size() || b.indices[j] < a.indices[i]) {
      out.push_back(b.indices[j], b.values[j]);
      ++j;
    } else {
      out.push_back(a.indices[i], a.values[i] + b.values[j]);
      ++i;
      ++j;
    }
  }
}

}  // namespace

void SparseAllreduceGTopk::merge_child(float* acc, int64_t k, const CooBlock& child) {
  merge_sum(set_, child, union_);
  const int64_t m = union_.size();
  topk_exact(union_.values.data(), m, k, keep_);
  set_.clear();
  size_t next_kept = 0;
  for (int64_t p = 0; p < m; ++p) {
    if (next_kept < keep_.size() && keep_[next_kept] == p) {
      set_.push_back(union_.indices[p], union_.values[p]);
      ++next_kept;
    } else {
      acc[union_.indices[p]] += union_.values[p];  // dropped here: kept in this residual
    }
  }
}

void SparseAllreduceGTopk::run(float* acc, int64_t n, SparseResult& result) {
  check_length(n);
  const int64_t k = topk_count(n, options_.density);
  const size_t index_bytes = coo_index_bytes(n);
  const size_t block = coo_wire_bytes(k, index_bytes);
  topk_exact(acc, n, k, selected_);
  take_entries(acc, selected_, set_);
  for (int64_t j : selected_) acc[j] = 0.0f;

  const patterns::BinomialTree tree{comm_.rank(), comm_.size(), 0};
  std::vector<int> children = tree.children();
  std::reverse(children.begin(), children.end());  // nearest child (round 0) first
  uint8_t* wire = wire_.get(block * (children.size() + 1));
  std::vector<RequestPtr> receives;
  for (size_t c = 0; c < children.size(); ++c)
    receives.push_back(comm_.irecv(wire + c * block, block, children[c], kReduceTag));
  for (size_t c = 0; c < children.size(); ++c) {
    RequestSet one;
    one.post(std::move(receives[c]));
    one.wait();
    child_.clear();
    coo_unpack(wire + c * block, k, index_bytes, child_);
    for (int64_t j : child_.indices)
      CONCORD_ENFORCE(j >= 0 && j < n, MismatchError, "gtopk: rank ", children[c], " sent index ", j, " outside [0, ",
                      n, "): ranks passed different n");
    merge_child(acc, k, child_);
  }
  uint8_t* final_block = wire + children.size() * block;
  coo_pack(set_, 0, set_.size(), index_bytes, final_block);
  if (tree.parent() >= 0) {
    RequestSet send;
    send.post(comm_.isend(final_block, block, tree.parent(), kReduceTag));
    send.wait();
  }

  BroadcastBinomial broadcast(comm_);
  broadcast.start(final_block, block, 0);
  run_to_completion(broadcast);
  set_.clear();
  coo_unpack(final_block, k, index_bytes, set_);
  const auto divisor = static_cast<float>(comm_.size());
  for (size_t i = 0; i < set_.indices.size(); ++i)
    if (set_.values[i] != 0.0f) {
      result.indices.push_back(set_.indices[i]);
      result.values.push_back(set_.values[i] / divisor);
    }
}

uint64_t SparseAllreduceGTopk::bytes_sent(int64_t n, double density, int ranks, int rank) {
  if (n == 0) return CooGather::words_traffic(ranks, rank, 1).bytes_sent;  // the length check
  const uint64_t block = coo_wire_bytes(topk_count(n, density), coo_index_bytes(n));
  const patterns::BinomialTree tree{rank, ranks, 0};
  return block * ((rank != 0 ? 1 : 0) + tree.children().size()) + CooGather::words_traffic(ranks, rank, 1).bytes_sent;
}

}  // namespace concord::sparse
