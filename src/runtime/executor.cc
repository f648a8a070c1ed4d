#include "runtime/executor.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <numeric>

#include "algorithms/tree_chunking.h"
#include "common/enforce.h"
#include "common/reduce.h"
#include "runtime/fused_completion.h"

namespace concord {

Executor::Executor(Communicator& data, const Config& config, const CostParams& cost, std::vector<int> node_of_rank,
                   Timeline& timeline, AutotuneTable tuned, std::string cache_path, const DeviceSet* devices)
    : comm_(data),
      timeline_(timeline),
      config_(config),
      context_{data, scratch_, static_cast<size_t>(config.ring_chunk_bytes), std::move(node_of_rank), cost},
      policy_(config, cost),
      tuned_(std::move(tuned)),
      cache_path_(std::move(cache_path)),
      devices_(devices) {}

Executor::~Executor() = default;

DevicePath& Executor::device_path(int index) {
  CONCORD_ENFORCE(devices_ != nullptr, InternalError, "a device tensor reached an executor without devices");
  auto& path = device_paths_[index];
  if (!path) path = std::make_unique<DevicePath>(devices_->shared(index), index, context_, timeline_);
  return *path;
}

CollectiveMemory& Executor::memory(const Response& response, const TensorEntry& first) {
  if (!response.device) return host_memory_;
  return device_path(first.input.device);
}

Problem Executor::problem(size_t count, DataType dtype, ReduceOp op) const {
  return make_problem(context_, count, dtype, op);
}

template <typename AlgorithmType>
AlgorithmType& Executor::algorithm(const std::vector<RegistryEntry<AlgorithmType>>& entries, const Problem& problem,
                                   const std::string& forced, std::string& activity,
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

int Executor::active_ranks(const Response& response) const {
  return comm_.size() - static_cast<int>(response.joined.size());
}

TensorEntry Executor::placeholder(const Response& response, size_t index) {
  TensorEntry entry;
  entry.request.name = response.names[index];
  entry.handle = std::make_shared<HandleState>();
  const int64_t row = index < response.row_elements.size() ? response.row_elements[index] : 1;
  int64_t in_elements = 0, out_elements = 0;
  switch (response.type) {
    case ResponseType::kAllreduce:
    case ResponseType::kBroadcast: in_elements = out_elements = response.sizes.at(index); break;
    case ResponseType::kReducescatter: {
      const int64_t rows = response.rows.at(index);
      in_elements = rows * row;
      out_elements = (rows / comm_.size() + 1) * row;
      break;
    }
    default:  // allgather: no rows; others carry no data
      break;
  }
  const size_t element = dtype_size(response.dtype);
  // Each buffer's data pointer is taken at once: a later emplace_back may move the vectors
  // (their heap buffers stay put).
  void* in = placeholders_.emplace_back(static_cast<size_t>(in_elements) * element, 0).data();
  void* out = placeholders_.emplace_back(static_cast<size_t>(out_elements) * element, 0).data();
  entry.input = TensorView{in, response.dtype, {in_elements / std::max<int64_t>(row, 1), row}};
  entry.output = TensorView{out, response.dtype, {out_elements / std::max<int64_t>(row, 1), row}};
  if (response.type == ResponseType::kAllreduce || response.type == ResponseType::kBroadcast) {
    entry.input.shape = {in_elements};
    entry.output.shape = {out_elements};
  }
  return entry;
}

void Executor::execute(const Response& response, TensorQueue& queue) {
  unmark(response);  // QUEUE, opened by the runtime when the response was negotiated
  placeholders_.clear();
  const bool joined = std::find(response.joined.begin(), response.joined.end(), comm_.rank()) != response.joined.end();
  std::vector<TensorEntry> entries;
  entries.reserve(response.names.size());
  auto taken = queue.try_take_all(response.names);
  for (size_t i = 0; i < response.names.size(); ++i) {
    if (auto& entry = taken[i]) {
      entries.push_back(std::move(*entry));
    } else {
      CONCORD_ENFORCE(joined && response.type != ResponseType::kJoin, InternalError, "response for tensor '",
                      response.names[i], "' which is not in flight on this rank");
      entries.push_back(placeholder(response, i));
    }
  }
  std::vector<bool> completed(entries.size(), false);  // handles completed early
  try {
    if (response.device && response.type != ResponseType::kError) {
      CONCORD_ENFORCE(response.joined.empty(), InvalidArgument, "tensor '", response.names[0],
                      "' is in device memory while rank(s) ",
                      shape_string(std::vector<int64_t>(response.joined.begin(), response.joined.end())),
                      " have joined: join() works with host tensors only");
    }
    switch (response.type) {
      case ResponseType::kError: throw MismatchError(response.error);
      case ResponseType::kAllreduce: allreduce(response, entries, completed); break;
      case ResponseType::kAllgather: allgather(response, entries); break;
      case ResponseType::kBroadcast: broadcast(response, entries.at(0)); break;
      case ResponseType::kReducescatter: reducescatter(response, entries); break;
      case ResponseType::kAlltoall: alltoall(response, entries.at(0)); break;
      case ResponseType::kJoin: entries.at(0).handle->received_splits = response.sizes; break;
      case ResponseType::kBarrier:  // negotiated once every rank has arrived: nothing to move
        break;
      case ResponseType::kProcessSet:
        throw InternalError("process set responses are executed by the runtime, not the executor");
    }
  } catch (...) {
    for (size_t i = 0; i < entries.size(); ++i)
      if (!completed[i]) entries[i].handle->fail(std::current_exception());
    return;
  }
  for (size_t i = 0; i < entries.size(); ++i)
    if (!completed[i]) entries[i].handle->complete();
}

void Executor::allreduce(const Response& response, std::vector<TensorEntry>& entries, std::vector<bool>& completed) {
  const DataType dtype = response.dtype;
  const size_t element = dtype_size(dtype);
  const double prescale = response.prescale_factor;
  double postscale = response.postscale_factor;
  if (response.op == ReduceOp::kAverage) postscale /= active_ranks(response);
  const ReduceOp op = response.op == ReduceOp::kAverage ? ReduceOp::kSum : response.op;

  if (response.device) {
    CONCORD_ENFORCE(op != ReduceOp::kAdasum, InternalError, "Adasum reached the device data path");
    return device_path(entries.at(0).input.device).allreduce(response, entries, completed, op, prescale, postscale);
  }
  const size_t total = std::accumulate(response.sizes.begin(), response.sizes.end(), size_t{0});
  uint8_t* buffer = nullptr;
  const void* source = nullptr;  // what the algorithm reads: == buffer unless out of place
  if (entries.size() == 1) {     // reduce in the output tensor itself, no fusion buffer
    TensorEntry& entry = entries[0];
    buffer = static_cast<uint8_t*>(entry.output.data);
    source = buffer;
    if (prescale != 1.0) {  // the scaling pass writes the output: then in place
      scale_buffer(buffer, entry.input.data, total, dtype, prescale);
    } else if (op == ReduceOp::kAdasum) {
      if (entry.input.data != buffer && total > 0) std::memcpy(buffer, entry.input.data, total * element);
    } else {  // out of place: the algorithm reads the input and writes the output itself
      source = entry.input.data;
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
    source = buffer;
  }

  if (op == ReduceOp::kAdasum) return adasum(response, entries, buffer, postscale);

  std::string activity = "allreduce";
  const ProblemForEntry tree_chunks = policy_.problem_for();
  const Problem allreduce_problem = problem(total, dtype, op);
  auto& algorithm =
      this->algorithm(allreduce_algorithms(), allreduce_problem,
                      choose("allreduce", allreduce_algorithms(), allreduce_problem), activity, tree_chunks);
  mark(response, activity);
  algorithm.start_out_of_place(source, buffer, total, dtype, op);
  if (entries.size() == 1) {  // the result is already in place: complete at the end
    run_to_completion(algorithm);
    unmark(response);
    if (postscale != 1.0) scale_buffer(buffer, buffer, total, dtype, postscale);
    return;
  }

  // Fused: per-range completion (runtime/fused_completion.h). Tensor i occupies
  // sizes[i] * element bytes of the fusion buffer, back to back; as soon as all of them
  // are final it is copied out and its handle completed, while the algorithm goes on.
  std::vector<size_t> start(entries.size() + 1, 0), tensor_bytes(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    tensor_bytes[i] = static_cast<size_t>(response.sizes[i]) * element;
    start[i + 1] = start[i] + tensor_bytes[i];
  }
  drive_fused(algorithm, tensor_bytes, [&](const std::vector<size_t>& tensors) {
    for (size_t i : tensors) {
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
    }
  });
}

void Executor::adasum(const Response& response, std::vector<TensorEntry>& entries, uint8_t* buffer, double postscale) {
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

void Executor::allgather(const Response& response, std::vector<TensorEntry>& entries) {
  // Tensor t has sizes[t * P + r] rows from rank r (0 for a joined rank) of row_bytes[t].
  const size_t P = static_cast<size_t>(comm_.size());
  const size_t me = static_cast<size_t>(comm_.rank());
  const size_t element = dtype_size(response.dtype);
  std::vector<int64_t> rows = response.sizes;
  for (size_t t = 0; t < entries.size(); ++t)
    for (int32_t j : response.joined) rows.at(t * P + static_cast<size_t>(j)) = 0;
  std::vector<size_t> row_bytes, block_bytes(P, 0);
  for (size_t t = 0; t < entries.size(); ++t) {
    row_bytes.push_back(static_cast<size_t>(response.row_elements.at(t)) * element);
    for (size_t r = 0; r < P; ++r) block_bytes[r] += static_cast<size_t>(rows[t * P + r]) * row_bytes[t];
  }
  std::vector<size_t> block_offset(P + 1, 0);
  for (size_t r = 0; r < P; ++r) block_offset[r + 1] = block_offset[r] + block_bytes[r];
  CollectiveMemory& memory = this->memory(response, entries.at(0));
  // A single host tensor is gathered straight into the handle's output.
  const bool direct = entries.size() == 1 && memory.host_accessible();
  uint8_t* buffer = direct ? static_cast<uint8_t*>(memory.allocate_output(*entries[0].handle, block_offset[P]))
                           : memory.staging(block_offset[P], 0);
  std::vector<CopySpan> own;
  size_t offset = block_offset[me];
  for (size_t t = 0; t < entries.size(); ++t) {
    const size_t bytes = static_cast<size_t>(rows[t * P + me]) * row_bytes[t];
    own.push_back(CopySpan{buffer + offset, entries[t].input.data, bytes});
    offset += bytes;
  }
  memory.copy_in(own, response.dtype, 1.0);
  std::string activity = "allgather";
  const Problem gather_problem = problem(block_offset[P], DataType::kUInt8, ReduceOp::kSum);
  auto& algorithm = this->algorithm(allgather_algorithms(), gather_problem,
                                    choose("allgather", allgather_algorithms(), gather_problem), activity);
  mark(response, activity);
  algorithm.start(buffer, block_bytes);
  run_to_completion(algorithm);
  unmark(response);
  std::vector<size_t> cursor(block_offset.begin(), block_offset.end() - 1);  // per rank, in buffer
  for (size_t t = 0; t < entries.size(); ++t) {
    auto& state = *entries[t].handle;
    int64_t total_rows = 0;
    for (size_t r = 0; r < P; ++r) total_rows += rows[t * P + r];
    state.output_shape = entries[t].input.shape;
    state.output_shape.at(0) = total_rows;
    if (direct) continue;
    auto* output = static_cast<uint8_t*>(memory.allocate_output(state, static_cast<size_t>(total_rows) * row_bytes[t]));
    std::vector<CopySpan> pieces;
    size_t out = 0;
    for (size_t r = 0; r < P; ++r) {
      const size_t bytes = static_cast<size_t>(rows[t * P + r]) * row_bytes[t];
      pieces.push_back(CopySpan{output + out, buffer + cursor[r], bytes});
      cursor[r] += bytes;
      out += bytes;
    }
    memory.copy_out(pieces, response.dtype, 1.0);
  }
}

void Executor::broadcast(const Response& response, TensorEntry& entry) {
  CONCORD_ENFORCE(std::find(response.joined.begin(), response.joined.end(), response.root) == response.joined.end(),
                  InvalidArgument, "broadcast of tensor '", response.names[0], "': root rank ", response.root,
                  " has called join() and has no tensor to send");
  std::string activity = "broadcast";
  const Problem broadcast_problem = problem(entry.output.num_bytes(), DataType::kUInt8, ReduceOp::kSum);
  auto& algorithm = this->algorithm(broadcast_algorithms(), broadcast_problem,
                                    choose("broadcast", broadcast_algorithms(), broadcast_problem), activity);
  mark(response, activity);
  if (response.device) {
    device_path(entry.output.device).broadcast(entry, entry.output.num_bytes(), response.root, algorithm);
  } else {
    algorithm.start(entry.output.data, entry.output.num_bytes(), response.root);
    run_to_completion(algorithm);
  }
  unmark(response);
}

// Used by executor_selection.cc to run the candidates it times.
template AllreduceAlgorithm& Executor::algorithm(const std::vector<RegistryEntry<AllreduceAlgorithm>>&, const Problem&,
                                                 const std::string&, std::string&, const ProblemForEntry&);
// Used by executor_alltoall.cc and executor_reducescatter.cc.
template AlltoallAlgorithm& Executor::algorithm(const std::vector<AlltoallEntry>&, const Problem&, const std::string&,
                                                std::string&, const ProblemForEntry&);
template ReduceScatterAlgorithm& Executor::algorithm(const std::vector<ReduceScatterEntry>&, const Problem&,
                                                     const std::string&, std::string&, const ProblemForEntry&);

}  // namespace concord
