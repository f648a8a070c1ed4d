#include "transport/ucx/ucx_worker.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "common/enforce.h"

namespace concord {

void check_ucs(ucs_status_t status, const char* what) {
  CONCORD_ENFORCE(status == UCS_OK, CommError, what, " failed: ", ucs_status_string(status));
}

UcxWorker::UcxWorker(int local_size) {
  ucp_config_t* config = nullptr;
  check_ucs(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  // Over TCP UCX sends a message above ~19 KB with a rendezvous; where a rank sends and
  // receives large messages on the same links at once, the rendezvous replies queue behind
  // the other direction's data: a 4 MiB ring allreduce over 4 emulated hosts at 1 Gbit/s
  // took 69-74 ms against 53-56 ms for Open MPI's TCP transport, 53-56 ms with messages up
  // to 1 MiB sent eagerly (docs/tuning.md).
  if (local_size == 1 && std::getenv("UCX_RNDV_THRESH") == nullptr) {
    const ucs_status_t status = ucp_config_modify(config, "RNDV_THRESH", kRemoteEagerLimit);
    if (status != UCS_OK) ucp_config_release(config);
    check_ucs(status, "ucp_config_modify(RNDV_THRESH)");
    remote_eager_ = true;
  }
  // UCX's CMA (the single-copy rendezvous between processes of one host) copies in 512 KiB
  // segments by default, one per progress call: at 2 ranks a 4 MiB recursive-doubling
  // allreduce took 1161 us instead of 531 with whole-message copies (MPI: 500), a 2 MiB
  // ping-pong 284-291 us instead of 164-177 (MPI: 168-173). The transports read their
  // settings from the environment (ucp_config_modify reaches only UCP's own), so it is set
  // there, unless the user set it, before ucp_init reads it.
  ::setenv("UCX_CMA_SEG_SIZE", "64M", /*overwrite=*/0);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  const ucs_status_t init = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  check_ucs(init, "ucp_init");
  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_EVENTS;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  worker_params.events = UCP_WAKEUP_TAG_SEND | UCP_WAKEUP_TAG_RECV;
  if (const ucs_status_t status = ucp_worker_create(context_, &worker_params, &worker_); status != UCS_OK) {
    ucp_cleanup(context_);
    check_ucs(status, "ucp_worker_create");
  }
  if (const ucs_status_t status = ucp_worker_get_efd(worker_, &event_fd_); status != UCS_OK) {
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    check_ucs(status, "ucp_worker_get_efd");
  }
}

UcxWorker::~UcxWorker() {
  for (ucp_ep_h endpoint : endpoints_) {
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags = UCP_EP_CLOSE_FLAG_FORCE;  // peers may be gone already at exit
    void* request = ucp_ep_close_nbx(endpoint, &param);
    if (UCS_PTR_IS_PTR(request)) {
      while (ucp_request_check_status(request) == UCS_INPROGRESS) ucp_worker_progress(worker_);
      ucp_request_free(request);
    }
  }
  ucp_worker_destroy(worker_);
  ucp_cleanup(context_);
}

std::vector<uint8_t> UcxWorker::address() const {
  ucp_address_t* address = nullptr;
  size_t length = 0;
  check_ucs(ucp_worker_get_address(worker_, &address, &length), "ucp_worker_get_address");
  const auto* bytes = reinterpret_cast<const uint8_t*>(address);
  std::vector<uint8_t> result(bytes, bytes + length);
  ucp_worker_release_address(worker_, address);
  return result;
}

void UcxWorker::connect(const std::vector<std::vector<uint8_t>>& addresses) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t rank = 0; rank < addresses.size(); ++rank) {
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.address = reinterpret_cast<const ucp_address_t*>(addresses[rank].data());
    // The fast mode: UCX 1.13's peer-failure mode would restrict endpoints to TCP (no
    // shared memory, no CMA); a dead peer is detected beside UCX (docs/architecture.md).
    params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucp_ep_h endpoint = nullptr;
    const ucs_status_t status = ucp_ep_create(worker_, &params, &endpoint);
    CONCORD_ENFORCE(status == UCS_OK, CommError, "ucp_ep_create to rank ", rank,
                    " failed: ", ucs_status_string(status));
    endpoints_.push_back(endpoint);
  }
}

void UcxWorker::wait_for_event(std::chrono::milliseconds timeout) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ucp_worker_progress(worker_) != 0) return;
    const ucs_status_t armed = ucp_worker_arm(worker_);
    if (armed == UCS_ERR_BUSY) return;  // events arrived meanwhile: progress them first
    check_ucs(armed, "ucp_worker_arm");
  }
  pollfd descriptor{event_fd_, POLLIN, 0};
  ::poll(&descriptor, 1, static_cast<int>(timeout.count()));
}

uint32_t UcxWorker::reserve_communicator_id(uint32_t at_least) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint32_t id = std::max(at_least, next_id_);
  CONCORD_ENFORCE(id < (1u << kCommunicatorIdBits), CommError, "UCX transport: communicator ids are exhausted (",
                  1u << kCommunicatorIdBits, " communicators per process; too many splits or process sets)");
  next_id_ = id + 1;
  return id;
}

void UcxWorker::set_peers(std::vector<std::string> hosts, std::vector<int64_t> pids) {
  hosts_ = std::move(hosts);
  pids_ = std::move(pids);
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  my_host_ = name;
}

void UcxWorker::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(abort_mutex_);
  if (abort_reason_.empty()) abort_reason_ = reason.empty() ? "the world was aborted" : reason;
}

std::string UcxWorker::peer_gone(int rank) const {
  {
    std::lock_guard<std::mutex> lock(abort_mutex_);
    if (!abort_reason_.empty()) return abort_reason_;
  }
  if (rank < 0 || rank >= static_cast<int>(pids_.size())) return heartbeat_ ? heartbeat_->lost(rank) : "";
  const std::string where = " (process " + std::to_string(pids_[rank]) + " on " + hosts_[rank] + ")";
  const bool here = hosts_[rank] == my_host_ && pids_[rank] > 0;
  if (here && ::kill(static_cast<pid_t>(pids_[rank]), 0) != 0 && errno == ESRCH)
    return "world rank " + std::to_string(rank) + where + " has exited";
  if (!heartbeat_) return "";
  std::string lost = heartbeat_->lost(rank);
  if (!lost.empty() && lost.rfind("world rank ", 0) == 0) lost.insert(lost.find(" sent"), where);
  return lost;
}

}  // namespace concord
