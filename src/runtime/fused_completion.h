// Per-range completion of a fused allreduce (docs/architecture.md, "Fusion"): the tensors
// of a fused batch lie back to back in the fusion buffer; while the algorithm runs, the
// byte ranges it reports final (AllreduceAlgorithm::take_final_ranges) are mapped to the
// tensors they cover, and a tensor is handed on (copied out, its handle completed) as soon
// as all of its bytes are final, before the rest of the batch has finished. Shared by the
// host data path (executor.cc) and the device data path (device_path.cc).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algorithms/algorithm.h"

namespace concord {

/// Drives `algorithm` (already started on a buffer holding tensors of `tensor_bytes`
/// bytes, back to back) to completion. Calls `on_final(tensors)` with the indices of the
/// tensors that became wholly final since the last call (zero-byte tensors first, at
/// once), each index exactly once; `on_idle()` (if set) after every progress round that
/// made no tensor final, before backing off (yield, then short sleeps). Throws
/// InternalError if the algorithm finishes with a tensor not reported final, and whatever
/// the algorithm or the callbacks throw.
void drive_fused(AllreduceAlgorithm& algorithm, const std::vector<size_t>& tensor_bytes,
                 const std::function<void(const std::vector<size_t>& tensors)>& on_final,
                 const std::function<void()>& on_idle = {});

}  // namespace concord
