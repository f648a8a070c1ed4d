// One UCX context and worker per process (UCP tag matching with wakeup), its endpoints to
// every world rank and the lock that serialises every call into them: all UcxCommunicators
// of a world share it, as MPI communicators share one MPI library. Progress is driven by
// the callers' test() calls; a blocking wait sleeps on the worker's event file descriptor
// (ucp_worker_get_efd, ucp_worker_arm, poll) with a finite timeout, so a waiting rank
// neither spins nor misses UCX's keepalive, which runs only inside progress calls.
#pragma once

#include <ucp/api/ucp.h>

#include "transport/ucx/peer_heartbeat.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace concord {

class UcxWorker {
 public:
  /// ucp_init (tag matching, wakeup) and a worker in serialised thread mode. `local_size`:
  /// processes of the job on this host as the launcher says (0: unknown). When it is 1,
  /// every peer is on another host, reached over the network, and unless the user set
  /// UCX_RNDV_THRESH messages up to kRemoteEagerLimit bytes go eagerly (UCP's
  /// RNDV_THRESH; docs/tuning.md, "Transports: MPI or UCX"). Throws CommError naming the
  /// UCX call and its status.
  explicit UcxWorker(int local_size = 0);
  /// The largest message sent eagerly when every peer is on another host: 1 MiB, as
  /// concord-run lets Open MPI's TCP transport send eagerly (run.py's TCP_SETTINGS). UCX
  /// 1.13 has one rendezvous threshold for every peer, so it is not set with peers on the
  /// same host, whose shared memory would then copy every such message through its FIFO.
  static constexpr const char* kRemoteEagerLimit = "1M";
  /// True when the constructor raised UCX's rendezvous threshold (above).
  bool remote_eager() const { return remote_eager_; }
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  /// This worker's address (ucp_worker_get_address), for the rendezvous.
  std::vector<uint8_t> address() const;
  /// Creates an endpoint to each worker in `addresses` (index = world rank, this rank's
  /// own included): the world's ranks in order. Throws CommError naming the rank.
  void connect(const std::vector<std::vector<uint8_t>>& addresses);
  /// The endpoint to world rank `rank` (connect() first).
  ucp_ep_h endpoint(int rank) const { return endpoints_.at(rank); }
  ucp_worker_h handle() const { return worker_; }

  /// Held around every call into the worker and its endpoints and requests.
  std::mutex& mutex() { return mutex_; }
  /// Blocks until the worker has an event to progress or `timeout` passes (arm, then
  /// poll(2) on the event fd); returns at once when events are pending. Progresses first.
  void wait_for_event(std::chrono::milliseconds timeout);

  /// A communicator id that no communicator of this process has used (at least
  /// `at_least`), reserved with every id below it. Ids fit in kCommunicatorIdBits bits;
  /// throws CommError when they run out.
  uint32_t reserve_communicator_id(uint32_t at_least);
  /// The lowest id not reserved yet (what this rank proposes when a split agrees on one).
  uint32_t next_communicator_id() const { return next_id_; }

  /// Remembers where every world rank runs (host name and process id, from the
  /// rendezvous), so peer_gone() can tell a dead peer on this host.
  void set_peers(std::vector<std::string> hosts, std::vector<int64_t> pids);
  /// A message naming world rank `rank` when its process on this host has exited, or the
  /// heartbeat (set_heartbeat) finds it lost, else "". UCX's fast endpoints (shared
  /// memory, CMA) report no peer failure, so a receive from a dead peer would wait forever;
  /// the requests ask this at most every kLivenessInterval while they wait.
  std::string peer_gone(int rank) const;
  /// Makes peer_gone() return `reason` for every rank from now on, so every transfer
  /// waiting or started on this worker fails with CommError(reason) within
  /// kLivenessInterval: a world abandoned as a whole (elastic training's reset after a
  /// worker on another host was declared lost, which no process check here can see).
  /// The first reason wins. Thread-safe; does not take mutex().
  void abort(const std::string& reason);
  /// From now on peer_gone() also reports peers that `heartbeat` finds lost (ranks on
  /// other hosts, stopped processes) and the world's abort key. Call before any transfer.
  void set_heartbeat(std::unique_ptr<PeerHeartbeat> heartbeat) { heartbeat_ = std::move(heartbeat); }

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
  bool remote_eager_ = false;
  std::vector<ucp_ep_h> endpoints_;
  std::vector<std::string> hosts_;
  std::vector<int64_t> pids_;
  std::string my_host_;
  mutable std::mutex abort_mutex_;
  std::string abort_reason_;                  // empty until abort()
  std::unique_ptr<PeerHeartbeat> heartbeat_;  // null: no store (a world of one, PMIx)
  std::mutex mutex_;
  uint32_t next_id_ = 1;  // 0 is the world communicator's
};

/// How often a waiting UCX request checks that its peer's process still exists.
inline constexpr std::chrono::milliseconds kLivenessInterval{200};

/// Bits of the UCX tag that hold the communicator id (see ucx_communicator.h).
inline constexpr int kCommunicatorIdBits = 12;

/// Throws CommError("<what> failed: <UCX status string>") unless `status` is UCS_OK.
void check_ucs(ucs_status_t status, const char* what);

}  // namespace concord
