// Validation of SparseOptions (sparse/sparse_allreduce.h), shared by every sparse allreduce
// and the registry.
#pragma once

#include "sparse/sparse_allreduce.h"

namespace concord::sparse {

/// Throws InvalidArgument naming the offending option (and its value) unless:
/// 0 < density <= 1; tau, tau_local, tau_global, bucket_steps >= 1; balance_factor and
/// max_overshoot are not NaN (<= 0: never balance; < 0: never trim); each feedback has
/// 0 < lo <= hi and factor >= 1 (all finite); gaussian_corrections >= 0.
void validate_options(const SparseOptions& options);

}  // namespace concord::sparse
