#include "runtime/executor.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <numeric>

#include "algorithms/tree_chunking.h"
#include "common/enforce.h"
#include "common/reduce.h"

namespace concord {

Executor::Executor(Communicator& data, const Config& config, const CostParams& cost,
                   std::vector<int> node_of_rank, Timeline& timeline, AutotuneTable tuned, std::string cache_path)
    : comm_(data),
      timeline_(timeline),
      config_(config),
      context_{data, scratch_, static_cast<size_t>(config.ring_chunk_bytes), std::move(node_of_rank), cost},
      allreduce_rules_(parse_size_rules(config.allreduce_algorithm, "CONCORD_ALLREDUCE_ALGORITHM")),
      allgather_rules_(parse_size_rules(config.allgather_algorithm, "CONCORD_ALLGATHER_ALGORITHM")),
      broadcast_rules_(parse_size_rules(config.broadcast_algorithm, "CONCORD_BROADCAST_ALGORITHM")),
      tuned_(std::move(tuned)),
      cache_path_(std::move(cache_path)) {}

Problem Executor::problem(size_t count, DataType dtype, ReduceOp op) const {
  return make_problem(context_, count, dtype, op);
}

template <typename AlgorithmType>
AlgorithmType& Executor::algorithm(const std::vector<RegistryEntry<AlgorithmType>>& entries,
                                   const Problem& problem, const std::string& forced, std::string& activity,
                                   const ProblemForEntry& problem_for) {
  const auto& entry = select_algorithm(entries, problem, context_.cost_params, forced, problem_for);
  const size_t chunk_bytes = problem_for ? problem_for(entry.name, problem).chunk_bytes : problem.chunk_bytes;
  std::string key = activity + "_" + entry.name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::toupper(c); });
  activity = key;
  Instance& slot = instances_[key];
  if (!slot.algorithm || slot.chunk_bytes != chunk_bytes) {
    AlgorithmContext context = context_;
    context.chunk_bytes = chunk_bytes;
    slot.algorithm = entry.create(context);
    slot.chunk_bytes = chunk_bytes;
  }
  return static_cast<AlgorithmType&>(*slot.algorithm);
}

void Executor::mark(const Response& response, const std::string& activity) {
  if (!timeline_.active()) return;
  for (const auto& name : response.names) timeline_.activity_start(name, activity.c_str());
}

void Executor::unmark(const Response& response) {
  if (!timeline_.active()) return;
  for (const auto& name : response.names) timeline_.activity_end(name);
}

void Executor::execute(const Response& response, TensorQueue& queue) {
  unmark(response);  // QUEUE, opened by the runtime when the response was negotiated
  std::vector<TensorEntry> entries;
  for (const auto& name : response.names) entries.push_back(queue.take(name));
  std::vector<bool> completed(entries.size(), false);  // handles completed early
  try {
    switch (response.type) {
      case ResponseType::kError:
        throw MismatchError(response.error);
      case ResponseType::kAllreduce:
        allreduce(response, entries, completed);
        break;
      case ResponseType::kAllgather:
        allgather(response, entries.at(0));
        break;
      case ResponseType::kBroadcast:
        broadcast(response, entries.at(0));
        break;
    }
  } catch (...) {
    for (size_t i = 0; i < entries.size(); ++i)
      if (!completed[i]) entries[i].handle->fail(std::current_exception());
    return;
  }
  for (size_t i = 0; i < entries.size(); ++i)
    if (!completed[i]) entries[i].handle->complete();
}

void Executor::allreduce(const Response& response, std::vector<TensorEntry>& entries,
                         std::vector<bool>& completed) {
  const DataType dtype = response.dtype;
  const size_t element = dtype_size(dtype);
  const double prescale = response.prescale_factor;
  double postscale = response.postscale_factor;
  if (response.op == ReduceOp::kAverage) postscale /= comm_.size();
  const ReduceOp op = response.op == ReduceOp::kAverage ? ReduceOp::kSum : response.op;

  const size_t total = std::accumulate(response.sizes.begin(), response.sizes.end(), size_t{0});
  uint8_t* buffer = nullptr;
  if (entries.size() == 1) {  // reduce in the output tensor itself
    TensorEntry& entry = entries[0];
    buffer = static_cast<uint8_t*>(entry.output.data);
    if (prescale != 1.0) {
      scale_buffer(buffer, entry.input.data, total, dtype, prescale);
    } else if (entry.input.data != entry.output.data && total > 0) {
      std::memcpy(buffer, entry.input.data, total * element);
    }
  } else {  // pack into the fusion buffer
    mark(response, "MEMCPY_IN_FUSION_BUFFER");
    buffer = fusion_buffer_.get(total * element);
    size_t offset = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const size_t n = static_cast<size_t>(response.sizes[i]);
      if (prescale != 1.0) {
        scale_buffer(buffer + offset, entries[i].input.data, n, dtype, prescale);
      } else if (n > 0) {
        std::memcpy(buffer + offset, entries[i].input.data, n * element);
      }
      offset += n * element;
    }
    unmark(response);
  }

  if (op == ReduceOp::kAdasum) return adasum(response, entries, buffer, postscale);

  std::string activity = "allreduce";
  const ProblemForEntry tree_chunks = [this](const std::string& name, const Problem& p) {
    return tree_chunked_problem(name, p, config_.tree_chunks, context_.cost_params);
  };
  const Problem allreduce_problem = problem(total, dtype, op);
  auto& algorithm = this->algorithm(
      allreduce_algorithms(), allreduce_problem,
      choose("allreduce", allreduce_algorithms(), allreduce_rules_, allreduce_problem, tree_chunks), activity,
      tree_chunks);
  mark(response, activity);
  algorithm.start(buffer, total, dtype, op);
  if (entries.size() == 1) {  // the result is already in place: complete at the end
    run_to_completion(algorithm);
    unmark(response);
    if (postscale != 1.0) scale_buffer(buffer, buffer, total, dtype, postscale);
    return;
  }

  // Fused: per-range completion. Tensor i occupies bytes [start[i], start[i + 1]) of the
  // fusion buffer; as soon as all of them are final it is copied out and its handle
  // completed, while the algorithm goes on with the rest.
  std::vector<size_t> start(entries.size() + 1, 0);
  for (size_t i = 0; i < entries.size(); ++i) start[i + 1] = start[i] + static_cast<size_t>(response.sizes[i]) * element;
  std::vector<size_t> final_bytes(entries.size(), 0);
  const auto finish = [&](size_t i) {
    if (timeline_.active()) {
      timeline_.activity_end(response.names[i]);  // the algorithm's activity
      timeline_.activity_start(response.names[i], "MEMCPY_OUT");
    }
    const size_t n = static_cast<size_t>(response.sizes[i]);
    if (postscale != 1.0) {
      scale_buffer(entries[i].output.data, buffer + start[i], n, dtype, postscale);
    } else if (n > 0) {
      std::memcpy(entries[i].output.data, buffer + start[i], n * element);
    }
    if (timeline_.active()) timeline_.activity_end(response.names[i]);
    entries[i].handle->complete();
    completed[i] = true;
  };
  for (size_t i = 0; i < entries.size(); ++i)
    if (start[i + 1] == start[i]) finish(i);  // empty tensors are final at once

  FinalRangeCollector collector(algorithm, total * element);
  std::vector<ByteRange> ranges;
  Backoff backoff;
  for (;;) {
    const Progress state = algorithm.progress();
    ranges.clear();
    collector.collect(state, ranges);
    for (const ByteRange& range : ranges) {
      const size_t end = range.offset + range.bytes;
      // The first tensor that ends after range.offset, then every one that starts before end.
      size_t i = static_cast<size_t>(std::upper_bound(start.begin() + 1, start.end(), range.offset) - start.begin()) - 1;
      for (; i < entries.size() && start[i] < end; ++i) {
        const size_t overlap = std::min(end, start[i + 1]) - std::max(range.offset, start[i]);
        final_bytes[i] += overlap;
        if (!completed[i] && final_bytes[i] == start[i + 1] - start[i]) finish(i);
      }
    }
    if (state == Progress::kDone) break;
    if (ranges.empty()) backoff.wait();
  }
  CONCORD_ENFORCE(std::all_of(completed.begin(), completed.end(), [](bool done) { return done; }), InternalError,
                  "allreduce ended with a fused tensor not reported final");
}

void Executor::adasum(const Response& response, std::vector<TensorEntry>& entries, uint8_t* buffer,
                      double postscale) {
  const size_t element = dtype_size(response.dtype);
  if (!adasum_) adasum_ = std::make_unique<AllreduceAdasum>(comm_);
  mark(response, "ALLREDUCE_ADASUM");
  size_t offset = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const size_t n = static_cast<size_t>(response.sizes[i]);
    adasum_->start(buffer + offset, n, response.dtype, ReduceOp::kAdasum);
    run_to_completion(*adasum_);
    offset += n * element;
  }
  unmark(response);
  offset = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const size_t n = static_cast<size_t>(response.sizes[i]);
    void* output = entries[i].output.data;
    if (postscale != 1.0) {
      scale_buffer(output, buffer + offset, n, response.dtype, postscale);
    } else if (output != buffer + offset && n > 0) {
      std::memcpy(output, buffer + offset, n * element);
    }
    offset += n * element;
  }
}

void Executor::allgather(const Response& response, TensorEntry& entry) {
  const auto& shape = entry.input.shape;
  int64_t row_elements = 1;
  for (size_t d = 1; d < shape.size(); ++d) row_elements *= shape[d];
  const size_t row_bytes = static_cast<size_t>(row_elements) * dtype_size(entry.input.dtype);
  std::vector<size_t> block_bytes;
  int64_t rows = 0;
  for (int64_t dim0 : response.sizes) {
    block_bytes.push_back(static_cast<size_t>(dim0) * row_bytes);
    rows += dim0;
  }
  auto& state = *entry.handle;
  state.output_shape = shape;
  state.output_shape[0] = rows;
  state.output_bytes.assign(static_cast<size_t>(rows) * row_bytes, 0);
  const size_t own_offset = std::accumulate(block_bytes.begin(), block_bytes.begin() + comm_.rank(), size_t{0});
  if (block_bytes[comm_.rank()] > 0)
    std::memcpy(state.output_bytes.data() + own_offset, entry.input.data, block_bytes[comm_.rank()]);
  std::string activity = "allgather";
  const Problem gather_problem = problem(state.output_bytes.size(), DataType::kUInt8, ReduceOp::kSum);
  auto& algorithm = this->algorithm(allgather_algorithms(), gather_problem,
                                    choose("allgather", allgather_algorithms(), allgather_rules_, gather_problem),
                                    activity);
  mark(response, activity);
  algorithm.start(state.output_bytes.data(), block_bytes);
  run_to_completion(algorithm);
  unmark(response);
}

void Executor::broadcast(const Response& response, TensorEntry& entry) {
  std::string activity = "broadcast";
  const Problem broadcast_problem = problem(entry.output.num_bytes(), DataType::kUInt8, ReduceOp::kSum);
  auto& algorithm = this->algorithm(broadcast_algorithms(), broadcast_problem,
                                    choose("broadcast", broadcast_algorithms(), broadcast_rules_, broadcast_problem),
                                    activity);
  mark(response, activity);
  algorithm.start(entry.output.data, entry.output.num_bytes(), response.root);
  run_to_completion(algorithm);
  unmark(response);
}

// Used by executor_selection.cc to run the candidates it times.
template AllreduceAlgorithm& Executor::algorithm(const std::vector<RegistryEntry<AllreduceAlgorithm>>&,
                                                 const Problem&, const std::string&, std::string&,
                                                 const ProblemForEntry&);

}  // namespace concord
