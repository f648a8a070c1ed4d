#include "runtime/executor.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
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
  if (!path) path = std::make_unique<DevicePath>(devices_->shared(index), index, context_);
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
                                   const std::string& forced, std::string& activity, const ProblemForEntry& problem_for,
                                   Device* device) {
  const auto& entry = select_algorithm(entries, problem, context_.cost_params, forced, problem_for);
  const size_t chunk_bytes = problem_for ? problem_for(entry.name, problem).chunk_bytes : problem.chunk_bytes;
  std::string key = activity + "_" + entry.name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::toupper(c); });
  activity = key;
  Instance& slot = instances_[key];
  if (!slot.algorithm || slot.chunk_bytes != chunk_bytes || slot.device != device) {
    AlgorithmContext context = context_;
    context.chunk_bytes = chunk_bytes;
    context.device = device;
    slot.algorithm = entry.create(context);
    slot.chunk_bytes = chunk_bytes;
    slot.device = device;
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

void Executor::refuse_joined(const Response& response) const {
  if (response.joined.empty()) return;
  // Horovod 0.28.1's texts (horovod/common/controller.cc, ConstructResponse), which scripts
  // match on; then the tensor and the ranks that joined.
  const char* horovod = nullptr;
  switch (response.type) {
    case ResponseType::kAllgather:
      horovod =
          "Allgather is not supported with Join at this time. Specify sparse_to_dense=True if using "
          "DistributedOptimizer";
      break;
    case ResponseType::kBroadcast: horovod = "Broadcast is not supported with Join at this time."; break;
    case ResponseType::kAlltoall: horovod = "Alltoall is not supported with Join at this time."; break;
    case ResponseType::kReducescatter: horovod = "Reducescatter is not supported with Join at this time."; break;
    default: return;
  }
  CONCORD_THROW(InvalidArgument, horovod, " (tensor '", response.names[0], "'; rank(s) ",
                shape_string(std::vector<int64_t>(response.joined.begin(), response.joined.end())),
                " have called join())");
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
    refuse_joined(response);
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
  // Average divides by every rank of the set, joined ones included (they contribute zeros),
  // as Horovod's allreduce does.
  if (response.op == ReduceOp::kAverage) postscale /= comm_.size();
  const ReduceOp op = response.op == ReduceOp::kAverage ? ReduceOp::kSum : response.op;

  CollectiveMemory& memory = this->memory(response, entries.at(0));
  Kernels& kernels = memory.kernels();
  std::vector<size_t> tensor_bytes(entries.size()), start(entries.size() + 1, 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    tensor_bytes[i] = static_cast<size_t>(response.sizes[i]) * element;
    start[i + 1] = start[i] + tensor_bytes[i];
  }
  const size_t total = start.back() / element;
  // Host-side failures must not leave device work running into the callers' tensors.
  try {
    uint8_t* buffer = nullptr;
    const void* source = nullptr;  // what the algorithm reads: == buffer unless out of place
    if (entries.size() == 1) {     // reduce in the output tensor itself, no fusion buffer
      TensorEntry& entry = entries[0];
      buffer = static_cast<uint8_t*>(entry.output.data);
      source = buffer;
      if (prescale != 1.0) {  // the scaling pass writes the output: then in place
        kernels.scale(buffer, entry.input.data, total, dtype, prescale);
      } else {  // out of place: the algorithm reads the input and writes the output itself
        source = entry.input.data;
      }
    } else {  // pack into the fusion buffer
      mark(response, "MEMCPY_IN_FUSION_BUFFER");
      buffer = memory.fusion(start.back());
      std::vector<CopySpan> spans;
      for (size_t i = 0; i < entries.size(); ++i)
        spans.push_back(CopySpan{buffer + start[i], entries[i].input.data, tensor_bytes[i]});
      kernels.copy_scaled(spans, dtype, prescale);
      source = buffer;
    }
    // The algorithm (on its own streams, for device memory) reads what the packing wrote.
    kernels.synchronize();
    if (entries.size() > 1) unmark(response);

    std::string activity = "allreduce";
    AllreduceAlgorithm& algorithm = allreduce_algorithm(response, entries.at(0), problem(total, dtype, op), activity);
    mark(response, activity);
    if (entries.size() > 1) algorithm.set_tensors(tensor_bytes);  // adasum: dot products per tensor
    algorithm.start_out_of_place(source, buffer, total, dtype, op);
    if (entries.size() == 1) {  // the result is already in place: complete at the end
      run_to_completion(algorithm);
      unmark(response);
      if (postscale != 1.0) kernels.scale(buffer, buffer, total, dtype, postscale);
      kernels.synchronize();
      return;
    }

    // Fused: per-range completion (runtime/fused_completion.h). As soon as all of a
    // tensor's bytes are final its copy out (scaled) is posted; its handle completes once
    // that copy is done (at once on the host), while the algorithm goes on.
    struct CopyOut {
      Kernels::Ticket done;
      std::vector<size_t> tensors;
    };
    std::deque<CopyOut> copies;
    const auto complete = [&](bool block) {
      if (block) kernels.synchronize();
      while (!copies.empty() && kernels.done(copies.front().done)) {
        for (size_t i : copies.front().tensors) {
          if (timeline_.active()) timeline_.activity_end(response.names[i]);
          entries[i].handle->complete();
          completed[i] = true;
        }
        copies.pop_front();
      }
    };
    drive_fused(
        algorithm, tensor_bytes,
        [&](const std::vector<size_t>& tensors) {
          std::vector<CopySpan> spans;
          for (size_t i : tensors) {
            if (timeline_.active()) {
              timeline_.activity_end(response.names[i]);  // the algorithm's activity
              timeline_.activity_start(response.names[i], "MEMCPY_OUT");
            }
            spans.push_back(CopySpan{entries[i].output.data, buffer + start[i], tensor_bytes[i]});
          }
          copies.push_back(CopyOut{kernels.copy_scaled(spans, dtype, postscale), tensors});
          complete(false);
        },
        [&] { complete(false); });
    complete(true);
  } catch (...) {
    try {
      kernels.synchronize();
    } catch (...) {
    }
    throw;
  }
}

AllreduceAlgorithm& Executor::allreduce_algorithm(const Response& response, const TensorEntry& first,
                                                  const Problem& host_problem, std::string& activity) {
  Problem problem = host_problem;
  Device* device = nullptr;
  if (response.device) {  // the rows on device buffers, judged on the capabilities every rank has
    DevicePath& path = device_path(first.input.device);
    problem.memory = MemoryKind::kDevice;
    problem.device = &path.capabilities();
    device = &path.device();
  }
  const ProblemForEntry tree_chunks = policy_.problem_for();
  // Memoised apart: device buffers and adasum have rows of their own.
  const char* memo = response.device                   ? "allreduce_device"
                     : problem.op == ReduceOp::kAdasum ? "allreduce_adasum"
                                                       : "allreduce";
  return this->algorithm(allreduce_algorithms(), problem, choose("allreduce", allreduce_algorithms(), problem, memo),
                         activity, tree_chunks, device);
}

void Executor::allgather(const Response& response, std::vector<TensorEntry>& entries) {
  // Tensor t has sizes[t * P + r] rows from rank r of row_bytes[t] (no rank has joined:
  // refuse_joined).
  const size_t P = static_cast<size_t>(comm_.size());
  const size_t me = static_cast<size_t>(comm_.rank());
  const size_t element = dtype_size(response.dtype);
  const std::vector<int64_t>& rows = response.sizes;
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
                                                 const std::string&, std::string&, const ProblemForEntry&, Device*);
// Used by executor_alltoall.cc and executor_reducescatter.cc.
template AlltoallAlgorithm& Executor::algorithm(const std::vector<AlltoallEntry>&, const Problem&, const std::string&,
                                                std::string&, const ProblemForEntry&, Device*);
template ReduceScatterAlgorithm& Executor::algorithm(const std::vector<ReduceScatterEntry>&, const Problem&,
                                                     const std::string&, std::string&, const ProblemForEntry&, Device*);

}  // namespace concord
