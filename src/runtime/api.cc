// The public free functions of include/concord/concord.h: one process-wide Runtime,
// created by init() on communicators of the process's transport world (process_world():
// MPI or UCX, chosen by the transport layer; the Runtime itself only sees injected
// communicators) and destroyed by shutdown().
#include <cstdlib>
#include <mutex>

#include "common/enforce.h"
#include "concord/concord.h"
#include "runtime/api_devices.h"
#include "runtime/api_process_sets.h"
#include "runtime/exit_watchdog.h"
#include "runtime/runtime.h"
#include "transport/transport_world.h"

namespace concord {
namespace {

struct Process {
  std::mutex mutex;
  std::shared_ptr<Runtime> runtime;
  bool exit_hook_registered = false;
  int rank = -1;        // of the last runtime, for the exit watchdog's message
  std::string failure;  // Runtime::failure() of the last runtime shut down since init()
};

Process& process() {
  static Process* instance = new Process();  // never destroyed: usable from atexit hooks
  return *instance;
}

// A shared reference, so a concurrent shutdown() cannot destroy the runtime under a call.
std::shared_ptr<Runtime> running() {
  auto& p = process();
  std::lock_guard<std::mutex> lock(p.mutex);
  CONCORD_ENFORCE(p.runtime != nullptr, StateError,
                  "Concord is not initialized: call concord.init() (C++: concord::init()) first, "
                  "and no collective after shutdown()");
  return p.runtime;
}

// An allreduce or reduce-scatter request (Options: AllreduceOptions, ReducescatterOptions).
template <typename Options>
Request reduction_request(const std::string& name, CollectiveType type, const Options& options) {
  Request request;
  request.name = name;
  request.type = type;
  request.op = options.op;
  request.prescale_factor = options.prescale_factor;
  request.postscale_factor = options.postscale_factor;
  return request;
}

Request allreduce_request(const std::string& name, const AllreduceOptions& options) {
  return reduction_request(name, CollectiveType::kAllreduce, options);
}

Request reducescatter_request(const std::string& name, const ReducescatterOptions& options) {
  return reduction_request(name, CollectiveType::kReducescatter, options);
}

Request simple_request(const std::string& name, CollectiveType type) {
  Request request;
  request.name = name;
  request.type = type;
  return request;
}

// The name every rank's join request carries (one join in flight per rank).
constexpr const char* kJoinName = "concord.join";

void check_group(const char* what, const std::vector<std::string>& names, const std::vector<TensorView>& inputs,
                 const std::vector<TensorView>& outputs) {
  CONCORD_ENFORCE(!names.empty() && names.size() == inputs.size() && names.size() == outputs.size(), InvalidArgument,
                  what, ": got ", names.size(), " names, ", inputs.size(), " inputs and ", outputs.size(),
                  " outputs; need the same non-zero number of each");
}

// Marks `requests` as one group named after its first member.
std::vector<Request> grouped(std::vector<Request> requests) {
  for (auto& request : requests) {
    request.group = requests[0].name;
    request.group_size = static_cast<int32_t>(requests.size());
  }
  return requests;
}

}  // namespace

Device& runtime_device(int index) { return running()->devices().at(index); }

int runtime_device_count() { return running()->devices().count(); }

void init(const InitOptions& options) {
  auto& p = process();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.runtime) return;
  Config config = Config::from_env();
  if (options.cycle_time_ms >= 0) config.cycle_time_ms = options.cycle_time_ms;
  if (options.fusion_threshold_bytes >= 0) config.fusion_threshold_bytes = options.fusion_threshold_bytes;
  p.runtime = std::make_shared<Runtime>(process_world().communicator_set(), std::move(config), options.process_sets);
  p.rank = p.runtime->rank();
  p.failure.clear();
  if (!p.exit_hook_registered) {
    // Registered after the transport's own exit hook (MPI_Finalize), so it runs first.
    std::atexit(shutdown_at_exit);
    p.exit_hook_registered = true;
  }
}

void shutdown() {
  auto& p = process();
  std::shared_ptr<Runtime> runtime;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    runtime = std::move(p.runtime);
  }
  if (!runtime) return;
  runtime->shutdown();  // joins the background thread outside the lock
  std::string failure = runtime->failure();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!failure.empty()) p.failure = std::move(failure);
}

void shutdown_at_exit() {
  shutdown();
  auto& p = process();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.failure.empty()) arm_exit_watchdog(p.rank, p.failure);
}

bool is_initialized() {
  auto& p = process();
  std::lock_guard<std::mutex> lock(p.mutex);
  return p.runtime != nullptr;
}

int rank() { return running()->rank(); }
int size() { return running()->size(); }
int local_rank() { return running()->local_rank(); }
int local_size() { return running()->local_size(); }
int cross_rank() { return running()->cross_rank(); }
int cross_size() { return running()->cross_size(); }
bool mpi_threads_supported() { return running()->mpi_threads_supported(); }

Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options) {
  return running()->enqueue(allreduce_request(name, options), input, output, options.process_set);
}

Handle allgather_async(const std::string& name, const TensorView& input, const AllgatherOptions& options) {
  return running()->enqueue(simple_request(name, CollectiveType::kAllgather), input, input, options.process_set);
}

Handle broadcast_async(const std::string& name, const TensorView& tensor, const BroadcastOptions& options) {
  Request request;
  request.name = name;
  request.type = CollectiveType::kBroadcast;
  request.root = options.root;
  return running()->enqueue(std::move(request), tensor, tensor, options.process_set);
}

std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs,
                                            const std::vector<TensorView>& outputs, const AllreduceOptions& options) {
  check_group("grouped_allreduce", names, inputs, outputs);
  std::vector<Request> requests;
  for (const auto& name : names) requests.push_back(allreduce_request(name, options));
  return running()->enqueue_group(grouped(std::move(requests)), inputs, outputs, options.process_set);
}

int64_t reducescatter_rows(int64_t rows, int ranks, int rank) {
  CONCORD_ENFORCE(ranks > 0 && rank >= 0 && rank < ranks && rows >= 0, InvalidArgument, "reducescatter_rows(", rows,
                  ", ", ranks, ", ", rank, "): need rows >= 0 and 0 <= rank < ranks");
  return rows / ranks + (rank < rows % ranks ? 1 : 0);
}

Handle reducescatter_async(const std::string& name, const TensorView& input, const TensorView& output,
                           const ReducescatterOptions& options) {
  return running()->enqueue(reducescatter_request(name, options), input, output, options.process_set);
}

std::vector<Handle> grouped_reducescatter_async(const std::vector<std::string>& names,
                                                const std::vector<TensorView>& inputs,
                                                const std::vector<TensorView>& outputs,
                                                const ReducescatterOptions& options) {
  check_group("grouped_reducescatter", names, inputs, outputs);
  std::vector<Request> requests;
  for (const auto& name : names) requests.push_back(reducescatter_request(name, options));
  return running()->enqueue_group(grouped(std::move(requests)), inputs, outputs, options.process_set);
}

std::vector<Handle> grouped_allgather_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs, const AllgatherOptions& options) {
  check_group("grouped_allgather", names, inputs, inputs);
  std::vector<Request> requests;
  for (const auto& name : names) requests.push_back(simple_request(name, CollectiveType::kAllgather));
  return running()->enqueue_group(grouped(std::move(requests)), inputs, inputs, options.process_set);
}

Handle alltoall_async(const std::string& name, const TensorView& input, const AlltoallOptions& options) {
  Request request = simple_request(name, CollectiveType::kAlltoall);
  request.splits = options.splits;
  return running()->enqueue(std::move(request), input, input, options.process_set);
}

Handle barrier_async(int process_set) { return running()->enqueue_barrier(process_set); }

void barrier(int process_set) { barrier_async(process_set).wait(); }

int add_process_set(const std::vector<int>& ranks) {
  CONCORD_ENFORCE(!ranks.empty(), InvalidArgument, "add_process_set: a process set needs at least one rank");
  const Handle handle = running()->enqueue_process_set(ranks, 0);
  handle.wait();
  return static_cast<int>(handle.received_splits().at(0));
}

int form_process_set(const std::vector<int>& ranks, const std::string& name) {
  const Handle handle = running()->enqueue_formed_process_set(ranks, name);
  handle.wait();
  return static_cast<int>(handle.received_splits().at(0));
}

std::shared_ptr<Communicator> process_set_p2p(int id) {
  const auto set = running()->process_sets().get(id);
  CONCORD_ENFORCE(set->p2p != nullptr, InvalidArgument, set->describe(),
                  " has no point-to-point communicator on this rank: it was not formed by its members "
                  "(form_process_set), or this rank is not one of them");
  return set->p2p;
}

void remove_process_set(int id) { running()->enqueue_process_set({}, id).wait(); }

std::vector<int> process_set_ids() {
  std::vector<int> ids;
  for (const auto& set : running()->process_sets().all()) ids.push_back(set->id);
  return ids;
}

std::vector<int> process_set_ranks(int id) { return running()->process_sets().get(id)->ranks; }

int process_set_rank(int id) {
  auto runtime = running();
  return runtime->process_sets().get(id)->rank_in_set(runtime->rank());
}

Handle join_async() {
  const TensorView none;
  return running()->enqueue(simple_request(kJoinName, CollectiveType::kJoin), none, none);
}

int join() {
  const Handle handle = join_async();
  handle.wait();
  return static_cast<int>(handle.received_splits().at(0));
}

CoordinationStats coordination_stats() { return running()->coordination_stats(); }

PointerCacheStats pointer_cache_stats() { return running()->pointer_cache_stats(); }

void start_timeline(const std::string& path) { running()->start_timeline(path); }

void stop_timeline() { running()->stop_timeline(); }

}  // namespace concord
