#include "sparse/options.h"

#include <cmath>

#include "common/enforce.h"

namespace concord::sparse {
namespace {

void validate_feedback(const ThresholdFeedback& feedback, const char* name) {
  CONCORD_ENFORCE(
      std::isfinite(feedback.lo) && std::isfinite(feedback.hi) && feedback.lo > 0 && feedback.lo <= feedback.hi,
      InvalidArgument, "SparseOptions.", name, ": need 0 < lo <= hi, got lo=", feedback.lo, " hi=", feedback.hi);
  CONCORD_ENFORCE(std::isfinite(feedback.factor) && feedback.factor >= 1, InvalidArgument, "SparseOptions.", name,
                  ".factor must be finite and >= 1, got ", feedback.factor);
}

void validate_period(int value, const char* name) {
  CONCORD_ENFORCE(value >= 1, InvalidArgument, "SparseOptions.", name, " must be >= 1, got ", value);
}

}  // namespace

void validate_options(const SparseOptions& options) {
  CONCORD_ENFORCE(options.density > 0 && options.density <= 1, InvalidArgument,
                  "SparseOptions.density must be in (0, 1], got ", options.density);
  validate_period(options.tau, "tau");
  validate_period(options.tau_local, "tau_local");
  validate_period(options.tau_global, "tau_global");
  validate_period(options.bucket_steps, "bucket_steps");
  CONCORD_ENFORCE(!std::isnan(options.balance_factor), InvalidArgument, "SparseOptions.balance_factor must not be NaN");
  CONCORD_ENFORCE(!std::isnan(options.max_overshoot), InvalidArgument, "SparseOptions.max_overshoot must not be NaN");
  validate_feedback(options.local_feedback, "local_feedback");
  validate_feedback(options.global_feedback, "global_feedback");
  CONCORD_ENFORCE(options.gaussian_corrections >= 0, InvalidArgument,
                  "SparseOptions.gaussian_corrections must be >= 0, got ", options.gaussian_corrections);
}

}  // namespace concord::sparse
