#include "runtime/fusion.h"

#include <algorithm>
#include <numeric>

namespace concord {
namespace {

bool fusible(const Response& r) {
  return r.type == ResponseType::kAllreduce || r.type == ResponseType::kAllgather ||
         r.type == ResponseType::kReducescatter;
}

bool compatible(const Response& a, const Response& b) {
  return fusible(a) && a.type == b.type && a.dtype == b.dtype && a.op == b.op &&
         a.prescale_factor == b.prescale_factor && a.postscale_factor == b.postscale_factor && a.joined == b.joined &&
         a.device == b.device;
}

// Bytes the response occupies in the fusion buffer (allgather: the gathered output).
int64_t bytes_of(const Response& response) {
  int64_t elements = 0;
  if (response.type == ResponseType::kAllgather) {
    const size_t ranks = response.sizes.size() / std::max<size_t>(response.row_elements.size(), 1);
    for (size_t i = 0; i < response.sizes.size(); ++i)
      elements += response.sizes[i] * (i / ranks < response.row_elements.size() ? response.row_elements[i / ranks] : 1);
  } else {
    elements = std::accumulate(response.sizes.begin(), response.sizes.end(), int64_t{0});
  }
  return elements * static_cast<int64_t>(dtype_size(response.dtype));
}

}  // namespace

std::vector<Response> plan_fusion(const std::vector<Response>& responses, int64_t threshold_bytes,
                                  int64_t max_tensor_bytes) {
  // A host allreduce above max_tensor_bytes runs unfused, in its own tensors: its
  // fusion-buffer copies would cost more than the per-collective latency fusion saves.
  const auto runs_unfused = [max_tensor_bytes](const Response& r, int64_t bytes) {
    return max_tensor_bytes > 0 && r.type == ResponseType::kAllreduce && !r.device && bytes > max_tensor_bytes;
  };
  std::vector<Response> plan;
  std::vector<int64_t> plan_bytes;
  std::vector<bool> alone;
  for (const auto& response : responses) {
    const int64_t bytes = fusible(response) ? bytes_of(response) : 0;
    const bool by_itself = runs_unfused(response, bytes);
    int target = -1;
    if (fusible(response) && threshold_bytes > 0 && !by_itself) {
      for (int i = static_cast<int>(plan.size()) - 1; i >= 0; --i) {
        if (!alone[i] && compatible(plan[i], response)) {
          if (plan_bytes[i] + bytes <= threshold_bytes) target = i;
          break;
        }
      }
    }
    if (target < 0) {
      plan.push_back(response);
      plan_bytes.push_back(bytes);
      alone.push_back(by_itself);
      continue;
    }
    Response& fused = plan[target];
    fused.names.insert(fused.names.end(), response.names.begin(), response.names.end());
    fused.sizes.insert(fused.sizes.end(), response.sizes.begin(), response.sizes.end());
    fused.rows.insert(fused.rows.end(), response.rows.begin(), response.rows.end());
    fused.row_elements.insert(fused.row_elements.end(), response.row_elements.begin(), response.row_elements.end());
    plan_bytes[target] += bytes;
  }
  return plan;
}

}  // namespace concord
