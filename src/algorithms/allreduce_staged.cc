#include "device/allreduce_staged.h"

#include <algorithm>

#include "common/enforce.h"

namespace concord {

AllreduceStaged::AllreduceStaged(Device& device, std::unique_ptr<AllreduceAlgorithm> inner, size_t chunk_bytes)
    : device_(device),
      inner_(std::move(inner)),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 1)),
      down_(device.create_stream()),
      up_(device.create_stream()) {
  for (int s = 0; s < kSlots; ++s) {
    copied_down_[s] = device.create_event();
    copied_up_[s] = device.create_event();
  }
}

AllreduceStaged::~AllreduceStaged() {
  // Copies may still use the staging slots (an operation abandoned after an error).
  try {
    down_->synchronize();
    up_->synchronize();
  } catch (...) {
  }
  device_.free_host(staging_);
}

size_t AllreduceStaged::chunk_count(size_t chunk) const {
  return std::min(chunk_elements_, count_ - chunk * chunk_elements_);
}

void AllreduceStaged::start(void* data, size_t count, DataType dtype, ReduceOp op) {
  CONCORD_ENFORCE(inner_running_ == false && next_final_ == chunks_, InternalError,
                  "AllreduceStaged::start while an operation is in progress");
  data_ = static_cast<uint8_t*>(data);
  dtype_ = dtype;
  op_ = op;
  element_ = dtype_size(dtype);
  count_ = count;
  chunk_elements_ = std::max<size_t>(chunk_bytes_ / element_, 1);
  chunks_ = (count + chunk_elements_ - 1) / chunk_elements_;
  next_down_ = reducing_ = next_final_ = 0;
  final_.reset(count * element_);
  const size_t needed = std::min(count, chunk_elements_) * element_;
  if (needed > slot_bytes_) {
    down_->synchronize();
    up_->synchronize();
    device_.free_host(staging_);
    staging_ = nullptr;
    staging_ = device_.allocate_host(needed * kSlots);
    slot_bytes_ = needed;
  }
  for (size_t c = 0; c < std::min<size_t>(chunks_, 2); ++c) issue_d2h(c);
}

void AllreduceStaged::start_out_of_place(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) {
  if (input != output && count > 0) down_->copy(output, input, count * dtype_size(dtype), CopyKind::kDeviceToDevice);
  start(output, count, dtype, op);
}

void AllreduceStaged::issue_d2h(size_t chunk) {
  const int s = static_cast<int>(chunk % kSlots);
  down_->wait(*copied_up_[s]);  // the slot's previous chunk has gone back up
  down_->copy(slot(chunk), data_ + chunk_offset(chunk), chunk_count(chunk) * element_, CopyKind::kDeviceToHost);
  down_->record(*copied_down_[s]);
  next_down_ = chunk + 1;
}

Progress AllreduceStaged::progress() {
  // Chunks whose h2d has completed are final, in order.
  while (next_final_ < reducing_ && copied_up_[next_final_ % kSlots]->query()) {
    final_.add(chunk_offset(next_final_), chunk_count(next_final_) * element_);
    ++next_final_;
  }
  if (inner_running_) {
    if (inner_->progress() == Progress::kInProgress) return Progress::kInProgress;
    inner_running_ = false;
    const int s = static_cast<int>(reducing_ % kSlots);
    up_->copy(data_ + chunk_offset(reducing_), slot(reducing_), chunk_count(reducing_) * element_,
              CopyKind::kHostToDevice);
    up_->record(*copied_up_[s]);
    ++reducing_;
    // Keep two chunks in flight downwards: reducing_ (maybe arrived) and the one after.
    if (next_down_ < chunks_ && next_down_ <= reducing_ + 1) issue_d2h(next_down_);
  }
  if (reducing_ < chunks_ && !inner_running_ && copied_down_[reducing_ % kSlots]->query()) {
    inner_->start(slot(reducing_), chunk_count(reducing_), dtype_, op_);
    inner_running_ = true;
    if (inner_->progress() == Progress::kInProgress) return Progress::kInProgress;
    return progress();  // finished at once (one rank, or tiny): hand it up and go on
  }
  if (next_final_ < chunks_) return Progress::kInProgress;
  final_.finish();
  return Progress::kDone;
}

}  // namespace concord
