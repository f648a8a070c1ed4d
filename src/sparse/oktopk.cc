#include "sparse/oktopk.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "sparse/options.h"
#include "sparse/topk.h"

namespace concord::sparse {

OkTopk::OkTopk(Communicator& comm, const SparseOptions& options)
    : comm_(comm), options_(options), split_reduce_(comm), gather_(comm) {
  validate_options(options_);
}

void OkTopk::select_local(const float* acc, int64_t n, int64_t k) {
  if (options_.exact) {
    topk_exact(acc, n, k, indices_);
    trace_.local_threshold = 0;
  } else {
    if (trace_.call % options_.tau_local == 0) local_threshold_ = k > 0 ? kth_largest_magnitude(acc, n, k) : 0;
    trace_.local_threshold = local_threshold_;
    // A zero threshold would select zeros, which change neither U nor the residual.
    select_above(acc, n, local_threshold_, options_.strict || local_threshold_ <= 0, indices_);
    trace_.local_candidates = static_cast<int64_t>(indices_.size());
    if (options_.max_overshoot >= 0 && k > 0 &&
        static_cast<double>(trace_.local_candidates) < options_.local_feedback.lo * static_cast<double>(k)) {
      // Too few: re-evaluate the threshold exactly now (O(n), no communication).
      local_threshold_ = kth_largest_magnitude(acc, n, k);
      select_above(acc, n, local_threshold_, options_.strict || local_threshold_ <= 0, indices_);
      trace_.local_candidates = static_cast<int64_t>(indices_.size());
    }
    trace_.local_trimmed = trace_.local_candidates > overshoot_cap(k);
    if (trace_.local_trimmed) {
      // Every entry above the exact k-th largest |acc| is a candidate: the exact top-k of
      // the candidates is the exact top-k of acc, and its k-th magnitude the exact threshold.
      candidates_.resize(indices_.size());
      for (size_t e = 0; e < indices_.size(); ++e) candidates_[e] = acc[indices_[e]];
      local_threshold_ = kth_largest_magnitude(candidates_.data(), trace_.local_candidates, k);
      topk_exact(candidates_.data(), trace_.local_candidates, k, positions_);
      for (size_t e = 0; e < positions_.size(); ++e) indices_[e] = indices_[positions_[e]];
      indices_.resize(positions_.size());
    } else {
      local_threshold_ = options_.local_feedback.adjust(local_threshold_, trace_.local_candidates, k);
    }
  }
  CooBlock& selected = trace_.selected;
  selected.clear();
  for (int64_t j : indices_)
    if (acc[j] != 0) selected.push_back(j, acc[j]);
}

void OkTopk::select_global(int64_t k, size_t index_bytes, CooBlock& global) {
  const CooBlock& reduced = trace_.reduced;
  if (trace_.exact_global) {
    CooBlock all;
    gather_.gather(reduced, index_bytes, options_.balance_factor, all);
    const int64_t kk = std::min(k, all.size());
    if (kk > 0) global_threshold_ = kth_largest_magnitude(all.values.data(), all.size(), kk);
    trace_.global_threshold = global_threshold_;
    if (options_.exact) topk_exact(all.values.data(), all.size(), kk, positions_);
    else if (kk > 0) select_above(all.values.data(), all.size(), global_threshold_, options_.strict, positions_);
    else positions_.clear();
    global.clear();
    for (int64_t e : positions_) global.push_back(all.indices[e], all.values[e]);
    return;
  }
  trace_.global_threshold = global_threshold_;
  kept_.clear();
  const bool strict = options_.strict || global_threshold_ <= 0;
  for (int64_t e = 0; e < reduced.size(); ++e) {
    const float magnitude = std::fabs(reduced.values[e]);
    if (strict ? magnitude > global_threshold_ : magnitude >= global_threshold_)
      kept_.push_back(reduced.indices[e], reduced.values[e]);
  }
  const bool capped = options_.max_overshoot >= 0;
  // With the cap, every owner's count of reduced nonzeros travels with its kept count.
  const std::vector<int64_t> words = gather_.allgather_words(capped ? std::vector<int64_t>{kept_.size(), reduced.size()}
                                                                    : std::vector<int64_t>{kept_.size()});
  const size_t stride = capped ? 2 : 1;
  std::vector<int64_t> counts(comm_.size()), nonzeros(comm_.size());
  int64_t total = 0, total_nonzeros = 0;
  for (int q = 0; q < comm_.size(); ++q) {
    counts[q] = words[q * stride];
    nonzeros[q] = capped ? words[q * stride + 1] : 0;
    total += counts[q];
    total_nonzeros += nonzeros[q];
  }
  trace_.global_candidates = total;
  trace_.global_trimmed = total > overshoot_cap(k);
  // Too few entries pass th_g (gradients shrank since it was set): every owner takes its
  // share of k, in proportion to its reduced nonzeros, from its reduced region instead.
  const bool refill = capped && !trace_.global_trimmed &&
                      static_cast<double>(total) < options_.global_feedback.lo * static_cast<double>(k) &&
                      total_nonzeros > total;
  if (refill) {
    kept_ = reduced;
    counts = proportional_quotas(nonzeros, k);
  } else if (trace_.global_trimmed) {
    counts = proportional_quotas(counts, k);
  }
  if (refill || trace_.global_trimmed) {
    // Every owner keeps its exact top-(its share of k): no data moves before the trim.
    topk_exact(kept_.values.data(), kept_.size(), counts[comm_.rank()], positions_);
    for (size_t e = 0; e < positions_.size(); ++e) {
      kept_.indices[e] = kept_.indices[positions_[e]];
      kept_.values[e] = kept_.values[positions_[e]];
    }
    kept_.indices.resize(positions_.size());
    kept_.values.resize(positions_.size());
  }
  gather_.gather_counted(kept_, std::move(counts), index_bytes, options_.balance_factor, global);
  if (refill || trace_.global_trimmed) {
    // The smallest kept magnitude (G is identical on every rank, so is the threshold).
    float smallest = std::numeric_limits<float>::infinity();
    for (float v : global.values) smallest = std::min(smallest, std::fabs(v));
    if (global.size() > 0) global_threshold_ = smallest;
  } else {
    global_threshold_ = options_.global_feedback.adjust(global_threshold_, global.size(), k);
  }
}

int64_t OkTopk::overshoot_cap(int64_t k) const {
  if (options_.max_overshoot < 0) return std::numeric_limits<int64_t>::max();
  const double cap = std::floor((1.0 + options_.max_overshoot) * static_cast<double>(k));
  return cap >= 9.0e18 ? std::numeric_limits<int64_t>::max() : std::max(k, static_cast<int64_t>(cap));
}

std::vector<int64_t> proportional_quotas(const std::vector<int64_t>& counts, int64_t k) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  if (total <= k) return counts;
  const size_t P = counts.size();
  std::vector<int64_t> quotas(P);
  std::vector<std::pair<int64_t, size_t>> remainders(P);  // (c_q k mod T, q)
  int64_t given = 0;
  for (size_t q = 0; q < P; ++q) {
    const auto share = static_cast<__int128>(counts[q]) * k;
    quotas[q] = static_cast<int64_t>(share / total);
    remainders[q] = {static_cast<int64_t>(share % total), q};
    given += quotas[q];
  }
  // Largest remainders first, lower rank on ties; each such rank has c_q k / T < c_q
  // with a fractional part, so quota + 1 <= c_q.
  std::sort(remainders.begin(), remainders.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (size_t i = 0; given < k && i < P; ++i, ++given) ++quotas[remainders[i].second];
  return quotas;
}

void OkTopk::allreduce(float* acc, int64_t n, SparseResult& result) {
  const int P = comm_.size();
  // A negative n is reported after the count exchange, on every rank alike; until then
  // this rank takes part with an empty vector.
  const int64_t length = std::max<int64_t>(n, 0);
  const int64_t k = topk_count(length, options_.density);
  const size_t index_bytes = coo_index_bytes(length);
  trace_.call = t_;
  trace_.k = k;

  select_local(acc, length, k);  // Phase 0

  // Phase 1. When n changed since the last call, regions are replaced by equal ones
  // locally (no communication, so a rank-dependent n cannot make ranks disagree on it).
  trace_.repartitioned = t_ % options_.tau == 0;
  if (trace_.repartitioned) regions_ = repartition(comm_, scratch_, trace_.selected.indices, length);
  else if (length != last_n_ || regions_.size() != P) regions_ = Regions::equal(length, P);
  trace_.regions = regions_;
  ++t_;

  // Phase 2 (throws on bad or mismatched n, on every rank alike). Until it has passed,
  // last_n_ = -1: after a mismatch the regions of the failed call (whose ends differ
  // between ranks) are replaced by equal ones on every rank at the next call.
  last_n_ = -1;
  split_reduce_.run(trace_.selected, regions_, n, index_bytes, options_.bucket_steps, "oktopk", trace_.reduced);
  last_n_ = length;

  trace_.exact_global = options_.exact || trace_.call % options_.tau_global == 0;
  select_global(k, index_bytes, global_);  // Phases 3 and 4
  trace_.gather = gather_.trace();

  result.indices.assign(global_.indices.begin(), global_.indices.end());
  result.values.resize(global_.values.size());
  const float ranks = static_cast<float>(P);
  for (size_t e = 0; e < global_.values.size(); ++e) result.values[e] = global_.values[e] / ranks;

  // Residual: zero S_i ∩ G (both ascending).
  const std::vector<int64_t>& selected = trace_.selected.indices;
  size_t s = 0;
  for (int64_t j : global_.indices) {
    while (s < selected.size() && selected[s] < j) ++s;
    if (s < selected.size() && selected[s] == j) acc[j] = 0;
  }
}

}  // namespace concord::sparse
