#include "algorithms/algorithm.h"

#include <algorithm>
#include <cstring>

namespace concord {

void AllreduceAlgorithm::start_out_of_place(const void* input, void* output, size_t count, DataType dtype,
                                            ReduceOp op) {
  if (input != output && count > 0) std::memcpy(output, input, count * dtype_size(dtype));
  start(output, count, dtype, op);
}

void run_to_completion(Algorithm& algorithm) {
  Backoff backoff;
  while (algorithm.progress() == Progress::kInProgress) backoff.wait();
}

void FinalRanges::reset(size_t buffer_bytes) {
  buffer_bytes_ = buffer_bytes;
  finished_ = false;
  added_.clear();
  pending_.clear();
}

void FinalRanges::add(size_t offset, size_t bytes) {
  if (bytes == 0) return;
  added_.push_back({offset, bytes});
  pending_.push_back({offset, bytes});
}

void FinalRanges::finish() {
  if (finished_) return;
  finished_ = true;
  std::vector<ByteRange> sorted = added_;
  std::sort(sorted.begin(), sorted.end(), [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  size_t covered = 0;  // [0, covered) is added or a gap already filled
  for (const ByteRange& range : sorted) {
    if (range.offset > covered) add(covered, range.offset - covered);
    covered = std::max(covered, range.offset + range.bytes);
  }
  if (buffer_bytes_ > covered) add(covered, buffer_bytes_ - covered);
}

void FinalRanges::take(std::vector<ByteRange>& out) {
  out.insert(out.end(), pending_.begin(), pending_.end());
  pending_.clear();
}

FinalRangeCollector::FinalRangeCollector(AllreduceAlgorithm& algorithm, size_t buffer_bytes) : algorithm_(algorithm) {
  ranges_.reset(buffer_bytes);
}

void FinalRangeCollector::collect(Progress state, std::vector<ByteRange>& out) {
  taken_.clear();
  algorithm_.take_final_ranges(taken_);
  for (const ByteRange& range : taken_) ranges_.add(range.offset, range.bytes);
  if (state == Progress::kDone) ranges_.finish();
  ranges_.take(out);
}

}  // namespace concord
