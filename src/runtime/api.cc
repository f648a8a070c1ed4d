// The public free functions of include/concord/concord.h: one process-wide Runtime,
// created by init() on MPI_COMM_WORLD's communicators (the MPI set-up lives here and in
// the transport layer; the Runtime itself only sees injected communicators) and
// destroyed by shutdown().
#include <cstdlib>
#include <mutex>

#include "common/enforce.h"
#include "concord/concord.h"
#include "runtime/exit_watchdog.h"
#include "runtime/runtime.h"
#include "transport/mpi_communicator.h"

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

Request allreduce_request(const std::string& name, const AllreduceOptions& options) {
  Request request;
  request.name = name;
  request.type = CollectiveType::kAllreduce;
  request.op = options.op;
  request.prescale_factor = options.prescale_factor;
  request.postscale_factor = options.postscale_factor;
  return request;
}

}  // namespace

void init(const InitOptions& options) {
  auto& p = process();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.runtime) return;
  Config config = Config::from_env();
  if (options.cycle_time_ms >= 0) config.cycle_time_ms = options.cycle_time_ms;
  if (options.fusion_threshold_bytes >= 0) config.fusion_threshold_bytes = options.fusion_threshold_bytes;
  p.runtime = std::make_shared<Runtime>(mpi_communicator_set(), std::move(config));
  p.rank = p.runtime->rank();
  p.failure.clear();
  if (!p.exit_hook_registered) {
    // Registered after MPI's own exit hook, so it runs before MPI_Finalize.
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
  return running()->enqueue(allreduce_request(name, options), input, output);
}

Handle allgather_async(const std::string& name, const TensorView& input) {
  Request request;
  request.name = name;
  request.type = CollectiveType::kAllgather;
  return running()->enqueue(std::move(request), input, input);
}

Handle broadcast_async(const std::string& name, const TensorView& tensor, const BroadcastOptions& options) {
  Request request;
  request.name = name;
  request.type = CollectiveType::kBroadcast;
  request.root = options.root;
  return running()->enqueue(std::move(request), tensor, tensor);
}

std::vector<Handle> grouped_allreduce_async(const std::vector<std::string>& names,
                                            const std::vector<TensorView>& inputs,
                                            const std::vector<TensorView>& outputs,
                                            const AllreduceOptions& options) {
  CONCORD_ENFORCE(!names.empty() && names.size() == inputs.size() && names.size() == outputs.size(),
                  InvalidArgument, "grouped_allreduce: got ", names.size(), " names, ", inputs.size(),
                  " inputs and ", outputs.size(), " outputs; need the same non-zero number of each");
  std::vector<Request> requests;
  for (const auto& name : names) {
    Request request = allreduce_request(name, options);
    request.group = names[0];
    request.group_size = static_cast<int32_t>(names.size());
    requests.push_back(std::move(request));
  }
  return running()->enqueue_group(std::move(requests), inputs, outputs);
}

CoordinationStats coordination_stats() { return running()->coordination_stats(); }

void start_timeline(const std::string& path) { running()->start_timeline(path); }

void stop_timeline() { running()->stop_timeline(); }

}  // namespace concord
