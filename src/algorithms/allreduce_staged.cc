#include "algorithms/allreduce_staged.h"

#include <algorithm>
#include <cmath>

#include "algorithms/registry.h"
#include "common/enforce.h"

namespace concord {
namespace {

// The problem one chunk of `chunk_bytes` poses to the host algorithm.
Problem chunk_problem(const Problem& problem, size_t chunk_bytes) {
  Problem chunk = problem;
  chunk.memory = MemoryKind::kHost;  // the chunk is reduced in pinned host memory
  chunk.native_available = false;    // MPI_Allreduce is not an inner algorithm (it may not take every dtype)
  chunk.count = std::min(problem.count, std::max<size_t>(chunk_bytes / problem.element_size, 1));
  return chunk;
}

}  // namespace

AllreduceStaged::AllreduceStaged(const AlgorithmContext& context)
    : AllreduceStaged(*context.device, nullptr, context.chunk_bytes) {
  context_ = std::make_unique<AlgorithmContext>(context);
}

void AllreduceStaged::choose_inner(size_t count, DataType dtype, ReduceOp op) {
  const size_t chunk_bytes = chunk_bytes_for(make_problem(*context_, count, dtype, op), context_->cost_params);
  if (inner_ != nullptr && chunk_bytes == chunk_bytes_) return;
  // The inner algorithm is chosen per chunk size; every rank computes the same.
  Problem chunk = make_problem(*context_, std::max<size_t>(chunk_bytes / 4, 1), DataType::kFloat32, ReduceOp::kSum);
  chunk.native_available = false;
  inner_ = select_algorithm(allreduce_algorithms(), chunk, context_->cost_params).create(*context_);
  chunk_bytes_ = chunk_bytes;
}

Cost AllreduceStaged::cost(const Problem& problem) {
  Cost total;
  if (problem.count == 0) return total;
  const CostParams defaults;
  const Problem full = chunk_problem(problem, chunk_bytes_for(problem, defaults));
  const auto& inner = select_algorithm(allreduce_algorithms(), full, defaults);
  const size_t chunks = (problem.count + full.count - 1) / full.count;
  Problem last = full;
  last.count = problem.count - (chunks - 1) * full.count;
  for (const auto& [piece, times] : {std::pair{full, chunks - 1}, std::pair{last, size_t{1}}}) {
    const Cost one = inner.cost(piece);
    total.rounds += static_cast<double>(times) * one.rounds;
    total.wire_bytes += static_cast<double>(times) * one.wire_bytes;
    total.inter_rounds += static_cast<double>(times) * one.inter_rounds;
    total.inter_wire_bytes += static_cast<double>(times) * one.inter_wire_bytes;
    total.reduce_bytes += static_cast<double>(times) * one.reduce_bytes;
    total.max_messages_sent += times * one.max_messages_sent;
    total.max_bytes_sent += times * one.max_bytes_sent;
    total.total_messages_sent += times * one.total_messages_sent;
    total.total_bytes_sent += times * one.total_bytes_sent;
  }
  return total;
}

double AllreduceStaged::seconds(const Problem& problem, const CostParams& params, size_t chunk_bytes) {
  if (problem.count == 0) return 0;
  const StagingParams& staging = params.staging;
  const Problem chunk = chunk_problem(problem, chunk_bytes);
  const double chunks = std::ceil(static_cast<double>(problem.count) / static_cast<double>(chunk.count));
  const auto& inner = select_algorithm(allreduce_algorithms(), chunk, params);
  const double reduce = inner.seconds(chunk, params);
  const double copy = staging.copy_alpha + static_cast<double>(chunk.bytes()) * staging.copy_beta;
  // Fill and drain, then each chunk costs the slower of its reduction and its copies.
  return 2 * copy + chunks * reduce + (chunks - 1) * std::max(0.0, copy - reduce);
}

double AllreduceStaged::seconds(const Problem& problem, const CostParams& params) {
  return seconds(problem, params, chunk_bytes_for(problem, params));
}

size_t AllreduceStaged::chunk_bytes_for(const Problem& problem, const CostParams& params) {
  const size_t whole = std::max<size_t>(problem.bytes(), 1);
  size_t best = whole;
  double best_seconds = seconds(problem, params, whole);
  for (size_t chunk = size_t{64} << 10; chunk < whole && chunk <= (size_t{64} << 20); chunk *= 2) {
    const double candidate = seconds(problem, params, chunk);
    if (candidate < best_seconds) {
      best_seconds = candidate;
      best = chunk;
    }
  }
  return best;
}

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
  if (context_ != nullptr) choose_inner(count, dtype, op);
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
