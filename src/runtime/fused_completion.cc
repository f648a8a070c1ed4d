#include "runtime/fused_completion.h"

#include <algorithm>
#include <numeric>

#include "common/backoff.h"
#include "common/enforce.h"

namespace concord {

void drive_fused(AllreduceAlgorithm& algorithm, const std::vector<size_t>& tensor_bytes,
                 const std::function<void(const std::vector<size_t>& tensors)>& on_final,
                 const std::function<void()>& on_idle) {
  const size_t n = tensor_bytes.size();
  // Tensor i occupies bytes [start[i], start[i + 1]) of the buffer.
  std::vector<size_t> start(n + 1, 0);
  for (size_t i = 0; i < n; ++i) start[i + 1] = start[i] + tensor_bytes[i];
  std::vector<size_t> final_bytes(n, 0);
  size_t finished = 0;
  std::vector<size_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (tensor_bytes[i] == 0) ready.push_back(i);  // empty tensors are final at once
  if (!ready.empty()) on_final(ready);
  finished += ready.size();

  FinalRangeCollector collector(algorithm, start[n]);
  std::vector<ByteRange> ranges;
  Backoff backoff;
  for (;;) {
    const Progress state = algorithm.progress();
    ranges.clear();
    collector.collect(state, ranges);
    ready.clear();
    for (const ByteRange& range : ranges) {
      const size_t end = range.offset + range.bytes;
      // The first tensor that ends after range.offset, then every one that starts before end.
      size_t i =
          static_cast<size_t>(std::upper_bound(start.begin() + 1, start.end(), range.offset) - start.begin()) - 1;
      for (; i < n && start[i] < end; ++i) {
        if (tensor_bytes[i] == 0) continue;
        const size_t overlap = std::min(end, start[i + 1]) - std::max(range.offset, start[i]);
        final_bytes[i] += overlap;
        if (final_bytes[i] == tensor_bytes[i]) ready.push_back(i);
      }
    }
    if (!ready.empty()) {
      on_final(ready);
      finished += ready.size();
    }
    if (state == Progress::kDone) break;
    if (ready.empty()) {
      if (on_idle) on_idle();
      backoff.wait();
    }
  }
  CONCORD_ENFORCE(finished == n, InternalError, "allreduce ended with ", n - finished,
                  " fused tensor(s) not reported final");
}

}  // namespace concord
