#include "runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/backoff.h"
#include "common/enforce.h"
#include "common/logging.h"
#include "algorithms/autotune.h"
#include "algorithms/registry.h"
#include "algorithms/size_rules.h"
#include "patterns/cross.h"
#include "runtime/fusion.h"

namespace concord {
namespace {

// The settings every rank must share, as rank 0 has them: the config table's shared rows
// (fusion and pipelining sizes, forced algorithms and size rules, autotune, cache
// capacity) and the cost model, each by name, so that every rank selects the same
// algorithm and cuts it into the same chunks. Collective over `comm`.
void adopt_rank0_settings(Communicator& comm, Config& config, CostParams& cost) {
  const nlohmann::json mine = {{"settings", encode_shared_settings(config)}, {"cost", cost.encode()}};
  const std::string text = mine.dump();
  std::vector<uint8_t> bytes(text.begin(), text.end());
  comm.broadcast_bytes(bytes, 0);
  if (std::string(bytes.begin(), bytes.end()) == text) return;
  const auto root = nlohmann::json::parse(bytes.begin(), bytes.end());
  std::vector<std::string> differed = adopt_shared_settings(config, root.at("settings").get<std::string>());
  const CostParams root_cost = CostParams::decode(root.at("cost").get<std::string>());
  if (root_cost.encode() != cost.encode()) differed.push_back("the cost model constants");
  cost = root_cost;
  std::string names;
  for (const auto& name : differed) names += (names.empty() ? "" : ", ") + name;
  CONCORD_LOG_WARN("using rank 0's {}: this rank's settings differ", names);
}

// Rank 0's measured selections for this configuration (read from the cost-model cache
// file when autotuning), given to every rank. Collective over `comm`.
AutotuneTable adopt_rank0_autotune_table(Communicator& comm, const Config& config, int nodes) {
  AutotuneTable table(autotune_scope(comm.size(), nodes, config.ring_chunk_bytes, config.tree_chunks));
  if (comm.rank() == 0 && config.autotune) {
    const std::string path = cost_model_cache_path();
    try {
      if (!path.empty()) table.load(path);
    } catch (const Error& error) {
      CONCORD_LOG_WARN("autotune: ignoring the measured choices of '{}': {}", path, error.what());
    }
  }
  const std::string mine = table.encode();
  std::vector<uint8_t> bytes(mine.begin(), mine.end());
  comm.broadcast_bytes(bytes, 0);
  table.decode(std::string(bytes.begin(), bytes.end()));
  return table;
}

// Fails init() with InvalidArgument listing the known names when a forced algorithm does
// not exist (rather than failing every later collective).
void check_algorithm_names(const Config& config) {
  auto check = [](const auto& entries, const std::string& value, const char* variable) {
    for (const SizeRule& rule : parse_size_rules(value, variable)) {
      try {
        find_algorithm(entries, rule.algorithm);
      } catch (const InvalidArgument& e) {
        CONCORD_THROW(InvalidArgument, variable, "=", value, ": ", e.what());
      }
    }
  };
  check(allreduce_algorithms(), config.allreduce_algorithm, "CONCORD_ALLREDUCE_ALGORITHM");
  check(allgather_algorithms(), config.allgather_algorithm, "CONCORD_ALLGATHER_ALGORITHM");
  check(broadcast_algorithms(), config.broadcast_algorithm, "CONCORD_BROADCAST_ALGORITHM");
}

void validate(const Request& request, const TensorView& input, const TensorView& output, int size) {
  const std::string& name = request.name;
  CONCORD_ENFORCE(!name.empty(), InvalidArgument, collective_name(request.type),
                  ": the tensor name must not be empty");
  dtype_size(input.dtype);  // throws for an unknown dtype code
  for (int64_t d : input.shape)
    CONCORD_ENFORCE(d >= 0, InvalidArgument, "Tensor '", name, "' has a negative dimension in shape ",
                    shape_string(input.shape));
  CONCORD_ENFORCE(input.data != nullptr || input.num_elements() == 0, InvalidArgument,
                  "Tensor '", name, "' has a null data pointer");
  switch (request.type) {
    case CollectiveType::kAllreduce:
      CONCORD_ENFORCE(output.dtype == input.dtype && output.shape == input.shape, InvalidArgument,
                      "allreduce of tensor '", name, "': output is ", dtype_name(output.dtype), " ",
                      shape_string(output.shape), " but input is ", dtype_name(input.dtype), " ",
                      shape_string(input.shape));
      CONCORD_ENFORCE(output.data != nullptr || output.num_elements() == 0, InvalidArgument,
                      "Tensor '", name, "' has a null output pointer");
      CONCORD_ENFORCE(std::isfinite(request.prescale_factor) && std::isfinite(request.postscale_factor),
                      InvalidArgument, "allreduce of tensor '", name, "': scale factors must be finite");
      if (request.op == ReduceOp::kAdasum) {
        CONCORD_ENFORCE((size & (size - 1)) == 0, InvalidArgument, "allreduce of tensor '", name,
                        "' with op Adasum needs a power-of-two number of ranks (its vector-halving "
                        "distance-doubling schedule); this job has ", size, " ranks");
        CONCORD_ENFORCE(input.dtype == DataType::kFloat32 || input.dtype == DataType::kFloat64, InvalidArgument,
                        "allreduce of tensor '", name, "' with op Adasum: dtype ", dtype_name(input.dtype),
                        " is not supported (float32 or float64)");
      }
      break;
    case CollectiveType::kAllgather:
      CONCORD_ENFORCE(!input.shape.empty(), InvalidArgument, "allgather of tensor '", name,
                      "': a scalar has no dim 0 to concatenate along; reshape it to [1]");
      break;
    case CollectiveType::kBroadcast:
      CONCORD_ENFORCE(request.root >= 0 && request.root < size, InvalidArgument, "broadcast of tensor '",
                      name, "': root rank ", request.root, " is outside [0, ", size, ")");
      break;
  }
}

}  // namespace

Runtime::Runtime(CommunicatorSet comms, Config config) : config_(std::move(config)) {
  CONCORD_ENFORCE(comms.control && comms.data && comms.control->size() == comms.data->size() &&
                      comms.control->rank() == comms.data->rank(),
                  InvalidArgument, "Runtime: the control and data communicators must span the same ranks");
  local_rank_ = comms.local_rank();
  local_size_ = comms.local_size();
  mpi_threads_supported_ = comms.threads_supported;
  control_ = std::move(comms.control);
  data_ = std::move(comms.data);
  if (comms.node_of_rank.empty()) comms.node_of_rank.assign(control_->size(), 0);
  const patterns::CrossPosition cross = patterns::cross_position(comms.node_of_rank, control_->rank());
  cross_rank_ = cross.rank;
  cross_size_ = cross.size;
  configure_logging(control_->rank(), config_.log_level);
  CostParams cost = CostParams::from_env();
  adopt_rank0_settings(*control_, config_, cost);
  check_algorithm_names(config_);
  if (!config_.timeline_path.empty()) start_timeline(config_.timeline_path);
  negotiator_ = std::make_unique<Negotiator>(
      *control_, NegotiatorOptions{static_cast<uint32_t>(config_.cache_capacity), config_.stall_warning_seconds,
                                   config_.stall_shutdown_seconds});
  negotiator_->set_timeline(&timeline_);
  const int nodes = *std::max_element(comms.node_of_rank.begin(), comms.node_of_rank.end()) + 1;
  AutotuneTable tuned = adopt_rank0_autotune_table(*control_, config_, nodes);
  executor_ = std::make_unique<Executor>(*data_, config_, cost, std::move(comms.node_of_rank), timeline_,
                                         std::move(tuned), rank() == 0 ? cost_model_cache_path() : "");
  thread_ = std::thread([this] { background_loop(); });
}

Runtime::~Runtime() { shutdown(); }

void Runtime::shutdown() {
  shutdown_requested_ = true;
  queue_.interrupt();  // an idle background thread wakes at once
  if (thread_.joinable()) thread_.join();
  timeline_.stop();
}

void Runtime::start_timeline(const std::string& path) {
  if (rank() == 0) timeline_.start(path);
}

void Runtime::stop_timeline() { timeline_.stop(); }

Handle Runtime::enqueue(Request request, const TensorView& input, const TensorView& output) {
  request.rank = rank();
  request.dtype = input.dtype;
  request.shape = input.shape;
  validate(request, input, output, size());
  auto state = std::make_shared<HandleState>();
  queue_.push(TensorEntry{std::move(request), input, output, state});
  return Handle(state);
}

std::vector<Handle> Runtime::enqueue_group(std::vector<Request> requests, const std::vector<TensorView>& inputs,
                                           const std::vector<TensorView>& outputs) {
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& request = requests[i];
    request.rank = rank();
    request.dtype = inputs[i].dtype;
    request.shape = inputs[i].shape;
    validate(request, inputs[i], outputs[i], size());
    entries.push_back(TensorEntry{std::move(request), inputs[i], outputs[i], std::make_shared<HandleState>()});
  }
  std::vector<Handle> handles;
  for (const auto& entry : entries) handles.emplace_back(entry.handle);
  queue_.push_all(std::move(entries));
  return handles;
}

CoordinationStats Runtime::coordination_stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

namespace {

// The nap between two checks of a waiting background thread: 32 yields, then a tenth of
// the time waited so far (so joining late costs at most ~10% on top of the wait), capped
// at `cap_us`. The queue's condition variable ends a nap at once on a push. 0 = yield.
class IdleNaps {
 public:
  std::chrono::microseconds next(int64_t cap_us) {
    if (++polls_ <= 32) return std::chrono::microseconds(0);
    const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_);
    return std::chrono::microseconds(std::clamp<int64_t>(waited.count() / 10, 1, cap_us));
  }

 private:
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int polls_ = 0;
};

// Largest nap of a rank with nothing in flight: it only delays rounds that cannot complete
// without this rank's own submission (which wakes it at once), stall checks and shutdown.
constexpr int64_t kIdleNapCapUs = 20000;

}  // namespace

void Runtime::await_round() {
  if (!negotiator_->idle()) return;  // the last round made progress: go on at once
  Backoff timer_slack;  // sets this thread's timer slack to 1 us, so short naps stay short
  (void)timer_slack;
  IdleNaps naps;
  const auto in_flight_cap_us = static_cast<int64_t>(std::max(50.0, config_.cycle_time_ms * 1000.0));
  while (true) {
    if (queue_.has_new() || shutdown_requested_.load() || negotiator_->stall_check_due()) {
      linger_while_submitting();
      negotiator_->announce();
      return;
    }
    if (negotiator_->woken()) return;
    // A rank with tensors in flight waits for the others' submissions: it joins their round
    // within CONCORD_CYCLE_TIME at most (the bound on how long a ready tensor waits).
    const auto nap = naps.next(queue_.in_flight() > 0 ? in_flight_cap_us : kIdleNapCapUs);
    if (nap.count() == 0) std::this_thread::yield();
    else queue_.wait_for_push(nap);
  }
}

void Runtime::linger_while_submitting() {
  // One yield per check: a lone synchronous call costs one yield; a burst (a backward pass)
  // gets the CPU for its framework thread, so the round takes the whole burst instead of
  // making the other ranks wait in a round for this rank's first tensor.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double, std::milli>(config_.cycle_time_ms));
  for (size_t seen = queue_.new_count(); std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::yield();
    const size_t now_queued = queue_.new_count();
    if (now_queued == seen) return;
    seen = now_queued;
  }
}

void Runtime::background_loop() {
  std::string stop_reason = "Concord was shut down (shutdown() was called on some rank)";
  bool failed = false;
  try {
    while (true) {
      await_round();
      const ResponseList answer = negotiator_->negotiate(queue_.pop_requests(), shutdown_requested_.load());
      {  // before executing, so a completed handle sees the counters of its negotiation
        std::lock_guard<std::mutex> lock(stats_mutex_);
        stats_ = negotiator_->stats();
      }
      if (timeline_.active())
        for (const auto& response : answer.responses)
          for (const auto& name : response.names) timeline_.activity_start(name, "QUEUE");
      for (const auto& response : plan_fusion(answer.responses, config_.fusion_threshold_bytes))
        executor_->execute(response, queue_);
      timeline_.flush();
      if (answer.shutdown) {
        if (!answer.shutdown_message.empty()) {
          stop_reason = answer.shutdown_message;
          failed = true;
          CONCORD_LOG_ERROR("{}", stop_reason);
        } else if (!shutdown_requested_.load() && queue_.in_flight() > 0) {
          // A peer stopped (its shutdown() or its process's exit, e.g. after an exception)
          // while this rank still waits for collectives it will never join.
          stop_reason = detail::concat("Concord was shut down by ranks ", detail::rank_list(answer.shutdown_ranks),
                                       " (shutdown() or the end of the process there, e.g. after an "
                                       "exception) while this rank had collectives pending");
          failed = true;
          CONCORD_LOG_ERROR("{}", stop_reason);
        }
        negotiator_->finish();
        break;
      }
    }
  } catch (const std::exception& error) {
    stop_reason = std::string("Concord's background thread stopped: ") + error.what();
    failed = true;
    CONCORD_LOG_ERROR("{}", stop_reason);
  }
  if (failed) {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    failure_ = stop_reason;
  }
  queue_.close(stop_reason);
}

std::string Runtime::failure() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return failure_;
}

}  // namespace concord
