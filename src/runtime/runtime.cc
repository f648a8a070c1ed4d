#include "runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "common/backoff.h"
#include "common/enforce.h"
#include "common/logging.h"
#include "algorithms/registry.h"
#include "patterns/cross.h"
#include "runtime/fusion.h"

namespace concord {
namespace {

// The settings every rank must share, as rank 0 has them: fusion and pipelining sizes (ring
// chunk bytes, tree chunks), the forced algorithms and the cost model, so that every rank
// selects the same algorithm and cuts it into the same chunks.
void adopt_rank0_settings(Communicator& comm, Config& config, CostParams& cost) {
  auto encode = [&] {
    return nlohmann::json{{"cycle_time_ms", config.cycle_time_ms},
                          {"fusion_threshold_bytes", config.fusion_threshold_bytes},
                          {"ring_chunk_bytes", config.ring_chunk_bytes},
                          {"tree_chunks", config.tree_chunks},
                          {"cache_capacity", config.cache_capacity},
                          {"allreduce_algorithm", config.allreduce_algorithm},
                          {"allgather_algorithm", config.allgather_algorithm},
                          {"broadcast_algorithm", config.broadcast_algorithm},
                          {"cost", {cost.alpha, cost.beta, cost.gamma, cost.inter_alpha, cost.inter_beta, cost.mpi_alpha,
                                    cost.mpi_beta}}}
        .dump();
  };
  const std::string mine = encode();
  std::vector<uint8_t> bytes(mine.begin(), mine.end());
  comm.broadcast_bytes(bytes, 0);
  if (std::string(bytes.begin(), bytes.end()) == mine) return;
  CONCORD_LOG_WARN("using rank 0's cycle time, fusion threshold, chunk size, cache capacity, "
                   "algorithms and cost model; this rank's CONCORD_* settings differ");
  const auto root = nlohmann::json::parse(bytes.begin(), bytes.end());
  config.cycle_time_ms = root.at("cycle_time_ms");
  config.fusion_threshold_bytes = root.at("fusion_threshold_bytes");
  config.ring_chunk_bytes = root.at("ring_chunk_bytes");
  config.tree_chunks = root.at("tree_chunks");
  config.cache_capacity = root.at("cache_capacity");
  config.allreduce_algorithm = root.at("allreduce_algorithm");
  config.allgather_algorithm = root.at("allgather_algorithm");
  config.broadcast_algorithm = root.at("broadcast_algorithm");
  const auto& c = root.at("cost");
  cost = CostParams{c.at(0), c.at(1), c.at(2), c.at(3), c.at(4), c.at(5), c.at(6)};
}

// Fails init() with InvalidArgument listing the known names when a forced algorithm does
// not exist (rather than failing every later collective).
void check_algorithm_names(const Config& config) {
  auto check = [](const auto& entries, const std::string& name, const char* variable) {
    if (name.empty() || name == "auto") return;
    try {
      find_algorithm(entries, name);
    } catch (const InvalidArgument& e) {
      CONCORD_THROW(InvalidArgument, variable, "=", name, ": ", e.what());
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

Runtime::Runtime(const InitOptions& options) : config_(Config::from_env()) {
  if (options.cycle_time_ms >= 0) config_.cycle_time_ms = options.cycle_time_ms;
  if (options.fusion_threshold_bytes >= 0) config_.fusion_threshold_bytes = options.fusion_threshold_bytes;
  ensure_mpi_initialized();
  int thread_level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&thread_level);
  mpi_threads_supported_ = thread_level >= MPI_THREAD_MULTIPLE;
  control_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
  data_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(control_->comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_rank(local, &local_rank_);
  MPI_Comm_size(local, &local_size_);
  std::vector<int> node_of_rank = node_of_every_rank(control_->comm(), local);
  MPI_Comm_free(&local);
  const patterns::CrossPosition cross = patterns::cross_position(node_of_rank, control_->rank());
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
  executor_ = std::make_unique<Executor>(*data_, config_, cost, std::move(node_of_rank), timeline_);
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
