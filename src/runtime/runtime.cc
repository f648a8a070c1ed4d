#include "runtime/runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "algorithms/autotune.h"
#include "algorithms/registry.h"
#include "algorithms/size_rules.h"
#include "common/backoff.h"
#include "common/enforce.h"
#include "common/logging.h"
#include "patterns/cross.h"
#include "runtime/fusion.h"
#include "runtime/validate.h"

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

// Creates the sets of InitOptions::process_sets on every rank, after checking that every
// rank passed the same ones (a bitwise OR of "mine differ from rank 0's", so all ranks
// throw together instead of some splitting communicators that others never split).
void create_initial_process_sets(Communicator& world, ProcessSetTable& sets,
                                 const std::vector<std::vector<int>>& process_sets) {
  nlohmann::json mine = process_sets;
  const std::string text = mine.dump();
  std::vector<uint8_t> bytes(text.begin(), text.end());
  world.broadcast_bytes(bytes, 0);
  std::vector<uint64_t> differs = {std::string(bytes.begin(), bytes.end()) == text ? 0u : 1u};
  world.allreduce_bits(differs, /*bitwise_and=*/false);
  CONCORD_ENFORCE(differs[0] == 0, InvalidArgument,
                  "init(process_sets=...): the ranks passed different process "
                  "sets; rank 0 passed ",
                  std::string(bytes.begin(), bytes.end()), ", rank ", world.rank(), " passed ", text);
  for (const auto& ranks : process_sets) {
    check_process_set_ranks(ranks, world.size(), "init(process_sets=...)");
    std::vector<int64_t> r(ranks.begin(), ranks.end());
    CONCORD_ENFORCE(sets.find(ranks) < 0, InvalidArgument, "init(process_sets=...): ranks ", shape_string(r),
                    " are given twice (or are the global set)");
    sets.add(ranks);
  }
}

}  // namespace

Runtime::Runtime(CommunicatorSet comms, Config config, const std::vector<std::vector<int>>& process_sets,
                 std::shared_ptr<DeviceSet> devices)
    : config_(std::move(config)), devices_(devices ? std::move(devices) : DeviceSet::from_setting(config_.device)) {
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
  cost_ = CostParams::from_env();
  adopt_rank0_settings(*control_, config_, cost_);
  check_algorithm_names(config_);
  if (!config_.timeline_path.empty()) start_timeline(config_.timeline_path);
  node_of_rank_ = std::move(comms.node_of_rank);
  const int nodes = *std::max_element(node_of_rank_.begin(), node_of_rank_.end()) + 1;
  AutotuneTable tuned = adopt_rank0_autotune_table(*control_, config_, nodes);
  sets_ = std::make_unique<ProcessSetTable>(
      *control_, *data_,
      ProcessSetContext{config_, cost_, node_of_rank_, timeline_, std::move(tuned),
                        rank() == 0 ? cost_model_cache_path() : "", devices_.get(), std::move(comms.create_group)});
  world_ = sets_->get(0);
  create_initial_process_sets(*control_, *sets_, process_sets);
  thread_ = std::thread([this] { background_loop(); });
}

Runtime::~Runtime() { shutdown(); }

void Runtime::shutdown() {
  shutdown_requested_ = true;
  world_queue().interrupt();  // an idle background thread wakes at once
  if (thread_.joinable()) thread_.join();
  timeline_.stop();
}

void Runtime::start_timeline(const std::string& path) {
  if (rank() == 0) timeline_.start(path);
}

void Runtime::stop_timeline() { timeline_.stop(); }

std::shared_ptr<ProcessSet> Runtime::member_set(int id, const std::function<std::string()>& what) const {
  auto set = sets_->get(id);
  CONCORD_ENFORCE(set->member(), InvalidArgument, what(), ": rank ", rank(), " is not in ", set->describe());
  return set;
}

void Runtime::prepare(Request& request, const TensorView& input, const TensorView& output,
                      const ProcessSet& set) const {
  const int set_size = static_cast<int>(set.ranks.size());
  request.rank = set.rank_in_set(rank());
  request.dtype = input.dtype;
  request.shape = input.shape;
  if (request.type == CollectiveType::kAlltoall && request.splits.empty() && !input.shape.empty()) {
    CONCORD_ENFORCE(input.shape[0] % set_size == 0, InvalidArgument, "alltoall of tensor '", request.name, "': dim 0 (",
                    input.shape[0], ") is not divisible by ", set_size, " ranks; pass splits to send unequal parts");
    request.splits.assign(set_size, input.shape[0] / set_size);
  }
  if (request.type == CollectiveType::kBroadcast && set.id != 0) {  // roots are global ranks
    const int root = set.rank_in_set(request.root);
    CONCORD_ENFORCE(root >= 0, InvalidArgument, "broadcast of tensor '", request.name, "': root rank ", request.root,
                    " is not in ", set.describe());
    request.root = root;
  }
  validate(request, input, output, set_size, request.rank);
  request.device = validate_device(request, input, output, *devices_);
  if (input.device != kHostMemory) {  // one device per process
    int32_t expected = kHostMemory;
    if (!device_in_use_.compare_exchange_strong(expected, input.device))
      CONCORD_ENFORCE(expected == input.device, InvalidArgument, collective_name(request.type), " of tensor '",
                      request.name, "' on ", devices_->name(input.device), ": this process already uses ",
                      devices_->name(expected), " (one device per process, as one GPU per rank)");
  }
}

void Runtime::resolve_devices(TensorView& input, TensorView& output) const {
  if (input.device == kDetectDevice) input.device = devices_->locate(input.data);
  if (output.device == kDetectDevice)
    output.device = output.data == input.data ? input.device : devices_->locate(output.data);
}

Handle Runtime::enqueue(Request request, const TensorView& input, const TensorView& output, int process_set) {
  auto set = member_set(process_set, [&request] {
    return std::string(collective_name(request.type)) + " of tensor '" + request.name + "'";
  });
  TensorView in = input, out = output;
  resolve_devices(in, out);
  prepare(request, in, out, *set);
  auto state = std::make_shared<HandleState>();
  state->flush_signal = world_queue().flush_signal();
  set->queue.push(TensorEntry{std::move(request), std::move(in), std::move(out), state});
  if (set->id != 0) world_queue().interrupt();  // the background thread naps on the world's queue
  return Handle(state);
}

std::vector<Handle> Runtime::enqueue_group(std::vector<Request> requests, const std::vector<TensorView>& inputs,
                                           const std::vector<TensorView>& outputs, int process_set) {
  auto set = member_set(
      process_set, [&requests] { return "grouped collective '" + (requests.empty() ? "" : requests[0].name) + "'"; });
  std::vector<TensorEntry> entries;
  for (size_t i = 0; i < requests.size(); ++i) {
    Request& request = requests[i];
    TensorView in = inputs[i], out = outputs[i];
    resolve_devices(in, out);
    prepare(request, in, out, *set);
    entries.push_back(TensorEntry{std::move(request), std::move(in), std::move(out), std::make_shared<HandleState>()});
    entries.back().handle->flush_signal = world_queue().flush_signal();
  }
  std::vector<Handle> handles;
  for (const auto& entry : entries) handles.emplace_back(entry.handle);
  set->queue.push_all(std::move(entries));
  if (set->id != 0) world_queue().interrupt();
  return handles;
}

Handle Runtime::enqueue_barrier(int process_set) {
  auto set = member_set(process_set, [] { return std::string("barrier"); });
  Request request;
  {
    std::lock_guard<std::mutex> lock(process_set_mutex_);
    request.name = "concord.barrier." + std::to_string(set->barriers++);
  }
  request.type = CollectiveType::kBarrier;
  return enqueue(std::move(request), TensorView{}, TensorView{}, process_set);
}

Handle Runtime::enqueue_process_set(const std::vector<int>& ranks, int id) {
  const char* what = ranks.empty() ? "remove_process_set" : "add_process_set";
  CONCORD_ENFORCE(config_.dynamic_process_sets, InvalidArgument, what,
                  ": process sets can only be added or removed after init() with "
                  "CONCORD_DYNAMIC_PROCESS_SETS=1 (Horovod: HOROVOD_DYNAMIC_PROCESS_SETS); otherwise pass them "
                  "to init(process_sets=...)");
  Request request;
  request.type = CollectiveType::kProcessSet;
  if (ranks.empty()) {
    CONCORD_ENFORCE(id != 0, InvalidArgument, what, ": the global process set (id 0) cannot be removed");
    sets_->get(id);  // InvalidArgument for an unknown id
    request.root = id;
  } else {
    check_process_set_ranks(ranks, size(), what);
    request.splits.assign(ranks.begin(), ranks.end());
  }
  {
    std::lock_guard<std::mutex> lock(process_set_mutex_);
    request.name = "concord.process_set." + std::to_string(process_set_calls_++);
  }
  return enqueue(std::move(request), TensorView{}, TensorView{}, 0);
}

Handle Runtime::enqueue_formed_process_set(const std::vector<int>& ranks, const std::string& name) {
  CONCORD_ENFORCE(config_.dynamic_process_sets, InvalidArgument, "form_process_set '", name,
                  "': process sets can only be added after init() with CONCORD_DYNAMIC_PROCESS_SETS=1");
  check_process_set_ranks(ranks, size(), "form_process_set '" + name + "'");
  std::vector<int64_t> listed(ranks.begin(), ranks.end());
  CONCORD_ENFORCE(std::binary_search(ranks.begin(), ranks.end(), rank()), InvalidArgument, "form_process_set '", name,
                  "': rank ", rank(), " is not in ", shape_string(listed), " (only the members form a set)");
  Request request;
  request.type = CollectiveType::kProcessSet;
  request.splits.assign(ranks.begin(), ranks.end());
  request.root = kFormedByMembers;
  request.name = "concord.process_set.formed." + name;
  return enqueue(std::move(request), TensorView{}, TensorView{}, 0);
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
    const auto waited =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_);
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

bool Runtime::other_sets_want_round(bool after_progress) const {
  for (const auto& set : sets_->all()) {
    if (set->id == 0 || !set->member() || set->removed) continue;
    if (set->queue.has_new() || set->negotiator->stall_check_due()) return true;
    if (after_progress && !set->negotiator->idle()) return true;
  }
  return false;
}

void Runtime::await_round() {
  if (!world_negotiator().idle()) {  // the last round made progress: go on at once, with
    linger_while_submitting();       // the rest of a burst this rank has started
    return;
  }
  if (other_sets_want_round(/*after_progress=*/true)) {
    world_negotiator().announce();
    return;
  }
  Backoff timer_slack;  // sets this thread's timer slack to 1 us, so short naps stay short
  (void)timer_slack;
  IdleNaps naps;
  const auto in_flight_cap_us = static_cast<int64_t>(std::max(50.0, config_.cycle_time_ms * 1000.0));
  while (true) {
    if (world_queue().has_new() || other_sets_want_round(/*after_progress=*/false) || shutdown_requested_.load() ||
        world_negotiator().stall_check_due()) {
      linger_while_submitting();
      world_negotiator().announce();
      return;
    }
    if (world_negotiator().woken()) {
      linger_while_submitting();  // this rank's own burst joins the round another rank started
      return;
    }
    // A rank with tensors in flight waits for the others' submissions: it joins their round
    // within CONCORD_CYCLE_TIME at most (the bound on how long a ready tensor waits).
    const auto nap = naps.next(world_queue().in_flight() > 0 ? in_flight_cap_us : kIdleNapCapUs);
    if (nap.count() == 0) std::this_thread::yield();
    else world_queue().wait_for_push(nap);
  }
}

void Runtime::linger_while_submitting() {
  // While this rank's framework threads keep submitting (a burst: a backward pass, a list of
  // tensors), the round waits for the rest of the burst, so it goes into one round instead
  // of several that each make the other ranks wait. It ends when a framework thread blocks
  // on a handle (the burst is over), when no tensor came for a tenth of CONCORD_CYCLE_TIME
  // (100 us by default), or after CONCORD_CYCLE_TIME.
  TensorQueue& queue = world_queue();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double, std::milli>(config_.cycle_time_ms));
  const auto quiet = std::chrono::microseconds(static_cast<int64_t>(config_.cycle_time_ms * 100.0));
  for (size_t seen = queue.new_count(); seen > 0 && !queue.flush_requested();) {
    const auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !queue.wait_for_more(seen, std::min(quiet, left))) return;
    seen = queue.new_count();
  }
}

bool Runtime::pending_anywhere() const {
  for (const auto& set : sets_->all())
    if (set->member() && set->queue.in_flight() > 0) return true;
  return false;
}

void Runtime::background_loop() {
  std::string stop_reason = "Concord was shut down (shutdown() was called on some rank)";
  bool transport_failed = false;  // a CommError stopped the thread: pending handles fail with CommError
  bool failed = false;
  try {
    while (true) {
      await_round();
      const ResponseList answer = negotiate_round();
      timeline_.flush();
      if (answer.shutdown) {
        if (!answer.shutdown_message.empty()) {
          stop_reason = answer.shutdown_message;
          failed = true;
          CONCORD_LOG_ERROR("{}", stop_reason);
        } else if (!shutdown_requested_.load() && pending_anywhere()) {
          // A peer stopped (its shutdown() or its process's exit, e.g. after an exception)
          // while this rank still waits for collectives it will never join.
          stop_reason = detail::concat("Concord was shut down by ranks ", detail::rank_list(answer.shutdown_ranks),
                                       " (shutdown() or the end of the process there, e.g. after an "
                                       "exception) while this rank had collectives pending");
          failed = true;
          CONCORD_LOG_ERROR("{}", stop_reason);
        }
        for (const auto& set : sets_->all())
          if (set->member() && !set->removed) set->negotiator->finish();
        break;
      }
    }
  } catch (const std::exception& error) {
    stop_reason = std::string("Concord's background thread stopped: ") + error.what();
    failed = true;
    transport_failed = dynamic_cast<const CommError*>(&error) != nullptr;
    CONCORD_LOG_ERROR("{}", stop_reason);
  }
  if (failed) {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    failure_ = stop_reason;
  }
  for (const auto& set : sets_->all()) set->queue.close(stop_reason, transport_failed);
}

ResponseList Runtime::negotiate_round() {
  ResponseList world_answer;
  // Every rank goes through its sets in ascending id order: the negotiations are
  // collectives of different communicators and cannot deadlock each other.
  for (const auto& set : sets_->all()) {
    if (!set->member() || set->removed) continue;
    const bool world = set->id == 0;
    ResponseList answer = set->negotiator->negotiate(set->queue.pop_requests(), world && shutdown_requested_.load());
    if (world) {  // before executing, so a completed handle sees the counters of its negotiation
      std::lock_guard<std::mutex> lock(stats_mutex_);
      stats_ = set->negotiator->stats();
    }
    if (timeline_.active())
      for (const auto& response : answer.responses)
        for (const auto& name : response.names) timeline_.activity_start(name, "QUEUE");
    for (const auto& response :
         plan_fusion(answer.responses, config_.fusion_threshold_bytes, config_.fusion_max_tensor_bytes)) {
      if (response.type == ResponseType::kProcessSet || formed_by_members(response)) {
        if (timeline_.active()) timeline_.activity_end(response.names[0]);
        sets_->apply(response, set->queue);  // world only: collective over every rank
      } else {
        set->executor->execute(response, set->queue);
      }
    }
    if (world) world_answer = std::move(answer);
  }
  return world_answer;
}

std::string Runtime::failure() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return failure_;
}

}  // namespace concord
