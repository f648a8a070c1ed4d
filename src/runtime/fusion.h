// Tensor fusion planning (Horovod's tensor fusion; docs/architecture.md): merges ready
// allreduce (or allgather, or reduce-scatter) responses that share collective, dtype, reduce
// op, scale factors, group, joined ranks and memory (host or device) into one response whose tensors are packed
// back to back in the fusion buffer, while the packed size stays within the fusion
// threshold (allgather: the gathered bytes). A pure function of the response list and the threshold, so every
// rank computes the same plan.
#pragma once

#include <cstdint>
#include <vector>

#include "control/message.h"

namespace concord {

/// Returns the responses to execute, in order. Each allreduce, allgather or reduce-scatter
/// joins the most recent fused response of the same collective with the same (dtype, op,
/// prescale, postscale, joined, device) if the total stays <=
/// `threshold_bytes`; otherwise it starts a new one. Other responses pass through unchanged.
/// The members of a group (answered in one cycle) are fused with each other and with every
/// other response ready in that cycle, as in Romero et al. (NSDI 2022) section 3.2, except
/// for the large ones below. threshold_bytes == 0 disables fusion. A host-memory allreduce
/// of one tensor larger than `max_tensor_bytes` (> 0) is never fused: it runs unfused,
/// straight in its own tensor (in place) or from its input to its output tensor (out of
/// place), with no fusion-buffer copies (for such sizes the two copies cost more than the
/// per-collective latency that fusion saves; docs/tuning.md,
/// CONCORD_FUSION_MAX_TENSOR_BYTES); 0 = no limit.
std::vector<Response> plan_fusion(const std::vector<Response>& responses, int64_t threshold_bytes,
                                  int64_t max_tensor_bytes = 0);

}  // namespace concord
