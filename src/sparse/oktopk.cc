#include "sparse/oktopk.h"

#include <algorithm>
#include <cmath>

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
    local_threshold_ = options_.local_feedback.adjust(local_threshold_, static_cast<int64_t>(indices_.size()), k);
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
    if (options_.exact)
      topk_exact(all.values.data(), all.size(), kk, positions_);
    else if (kk > 0)
      select_above(all.values.data(), all.size(), global_threshold_, options_.strict, positions_);
    else
      positions_.clear();
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
  gather_.gather(kept_, index_bytes, options_.balance_factor, global);
  global_threshold_ = options_.global_feedback.adjust(global_threshold_, global.size(), k);
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
  if (trace_.repartitioned)
    regions_ = repartition(comm_, scratch_, trace_.selected.indices, length);
  else if (length != last_n_ || regions_.size() != P)
    regions_ = Regions::equal(length, P);
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
