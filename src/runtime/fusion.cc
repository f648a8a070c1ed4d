#include "runtime/fusion.h"

#include <numeric>

namespace concord {
namespace {

bool compatible(const Response& a, const Response& b) {
  return a.type == ResponseType::kAllreduce && b.type == ResponseType::kAllreduce &&
         a.dtype == b.dtype && a.op == b.op && a.prescale_factor == b.prescale_factor &&
         a.postscale_factor == b.postscale_factor;
}

int64_t bytes_of(const Response& response) {
  return std::accumulate(response.sizes.begin(), response.sizes.end(), int64_t{0}) *
         static_cast<int64_t>(dtype_size(response.dtype));
}

}  // namespace

std::vector<Response> plan_fusion(const std::vector<Response>& responses, int64_t threshold_bytes) {
  std::vector<Response> plan;
  std::vector<int64_t> plan_bytes;
  for (const auto& response : responses) {
    const int64_t bytes = response.type == ResponseType::kAllreduce ? bytes_of(response) : 0;
    int target = -1;
    if (response.type == ResponseType::kAllreduce && threshold_bytes > 0) {
      for (int i = static_cast<int>(plan.size()) - 1; i >= 0; --i) {
        if (compatible(plan[i], response)) {
          if (plan_bytes[i] + bytes <= threshold_bytes) target = i;
          break;
        }
      }
    }
    if (target < 0) {
      plan.push_back(response);
      plan_bytes.push_back(bytes);
      continue;
    }
    Response& fused = plan[target];
    fused.names.insert(fused.names.end(), response.names.begin(), response.names.end());
    fused.sizes.insert(fused.sizes.end(), response.sizes.begin(), response.sizes.end());
    plan_bytes[target] += bytes;
  }
  return plan;
}

}  // namespace concord
