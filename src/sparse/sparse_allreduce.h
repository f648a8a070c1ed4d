// The interface every sparse allreduce implements (Ok-Topk and its baselines,
// docs/algorithms.md): one call reduces the top-k-sparsified accumulators
// acc_i = residual_i + gradient_i of all ranks and leaves the new residual in place.
// Blocking, on one Communicator's nonblocking point-to-point (its traffic counters count
// every byte each algorithm sends). float32 values; COO on the wire with int32 indices
// (int64 when n >= 2^31).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sparse/topk.h"
#include "transport/communicator.h"

namespace concord::sparse {

/// Every parameter of the spec, with its default.
struct SparseOptions {
  double density = 0.01;        ///< d: k = topk_count(n, d)
  int tau = 64;                 ///< space repartition period (calls)
  int tau_local = 32;           ///< exact local threshold re-evaluation period (calls)
  int tau_global = 32;          ///< exact global threshold re-evaluation period (calls)
  int bucket_steps = 4;         ///< destination-rotation steps per bucket (min(4, P) used)
  double balance_factor = 4.0;  ///< balance when max_q c_q > balance_factor * T / P; <= 0 never
  /// Ok-Topk's volume cap: when a reused threshold selects more than (1 + max_overshoot) k
  /// entries (locally |S_i|, globally T), exactly k are kept among them and the threshold
  /// is reset from that selection (oktopk.h), so the paper's < 6k words per rank and call
  /// hold from the first calls on; < 0 never (the spec's lo/hi/f feedback alone, whose
  /// transient exceeds that bound for ~150 calls). Training accuracy with and without it:
  /// examples/train_digits.py --sparse-density 0.02 --compare --max-overshoot EPS.
  double max_overshoot = 0.25;
  bool strict = false;  ///< select |x| > th instead of |x| >= th
  bool exact = false;   ///< exact mode: tau_local = tau_global = 1 (spec "Exact-mode")
  ThresholdFeedback local_feedback{2.0 / 3.0, 5.0 / 4.0, 1.012};
  ThresholdFeedback global_feedback{2.0 / 3.0, 5.0 / 4.0, 1.008};
  int gaussian_corrections = 3;  ///< Gaussiank's threshold corrections
};

/// U in COO form: ascending indices, values already divided by P. Identical on every rank.
struct SparseResult {
  std::vector<int64_t> indices;
  std::vector<float> values;
};

/// One sparse allreduce algorithm bound to a communicator; keeps its state (thresholds,
/// regions, call counter t) across calls. Every rank calls allreduce() with the same n.
class SparseAllreduce {
 public:
  virtual ~SparseAllreduce() = default;
  /// Registry name ("oktopk", "topka", "topkdsa", "gtopk", "gaussiank", "dense").
  virtual const char* name() const = 0;
  /// `acc` (n floats: residual + gradient) on entry; on return `acc` holds the new residual
  /// (acc with the entries that reached the global result through this rank's selection
  /// zeroed) and `result` holds U. Blocking, collective. Throws InvalidArgument for n < 0,
  /// MismatchError when ranks pass different n, CommError on transport failure.
  virtual void allreduce(float* acc, int64_t n, SparseResult& result) = 0;
};

/// Names of every sparse allreduce, in registry order.
std::vector<std::string> sparse_allreduce_names();

struct SparseAlgorithmInfo {
  std::string name;
  std::string description;  ///< one line (concord-info)
};
/// Every sparse allreduce with its description, in registry order.
std::vector<SparseAlgorithmInfo> sparse_allreduce_algorithms();

/// The algorithm called `name` on `comm` (which must outlive it). Throws InvalidArgument
/// for an unknown name (listing the known ones) or invalid options.
std::unique_ptr<SparseAllreduce> make_sparse_allreduce(const std::string& name, Communicator& comm,
                                                       const SparseOptions& options = {});

}  // namespace concord::sparse
