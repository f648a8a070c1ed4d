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
#include "runtime/validate.h"

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

void Runtime::prepare(Request& request, const TensorView& input, const TensorView& output) const {
  request.rank = rank();
  request.dtype = input.dtype;
  request.shape = input.shape;
  if (request.type == CollectiveType::kAlltoall && request.splits.empty() && !input.shape.empty()) {
    CONCORD_ENFORCE(input.shape[0] % size() == 0, InvalidArgument, "alltoall of tensor '", request.name,
                    "': dim 0 (", input.shape[0], ") is not divisible by ", size(),
                    " ranks; pass splits to send unequal parts");
    request.splits.assign(size(), input.shape[0] / size());
  }
  validate(request, input, output, size(), rank());
}

Handle Runtime::enqueue(Request request, const TensorView& input, const TensorView& output) {
  prepare(request, input, output);
  auto state = std::make_shared<HandleState>();
  queue_.push(TensorEntry{std::move(request), input, output, state});
  return Handle(state);
}

std::vector<Handle> Runtime::enqueue_group(std::vector<Request> requests, const std::vector<TensorView>& inputs,
                                           const std::vector<TensorView>& outputs) {
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& request = requests[i];
    prepare(request, inputs[i], outputs[i]);
    entries.push_back(TensorEntry{std::move(request), inputs[i], outputs[i], std::make_shared<HandleState>()});
  }
  std::vector<Handle> handles;
  for (const auto& entry : entries) handles.emplace_back(entry.handle);
  queue_.push_all(std::move(entries));
  return handles;
}

Handle Runtime::enqueue_barrier() {
  Request request;
  request.name = "concord.barrier." + std::to_string(barriers_++);
  request.type = CollectiveType::kBarrier;
  return enqueue(std::move(request), TensorView{}, TensorView{});
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

void Runtime::background_loop() {
  std::string stop_reason = "Concord was shut down (shutdown() was called on some rank)";
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
          CONCORD_LOG_ERROR("{}", stop_reason);
        }
        negotiator_->finish();
        break;
      }
    }
  } catch (const std::exception& error) {
    stop_reason = std::string("Concord's background thread stopped: ") + error.what();
    CONCORD_LOG_ERROR("{}", stop_reason);
  }
  queue_.close(stop_reason);
}

}  // namespace concord
