// The runtime of one process: its communicators (injected: MPI ones from concord::init(),
// in-process ones in the unit tests), the tensor queue, and the background thread that
// runs the cycle (negotiate -> plan fusion -> execute -> complete handles). There is no
// cycle floor: rounds follow each other at once while they make progress; when one makes
// none the thread blocks until an enqueue, a shutdown, a due stall check or another
// rank's wake message (control/wake_channel.h) starts the next. Created by
// concord::init() (src/runtime/api.cc, which sets up MPI), destroyed by
// concord::shutdown().
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "common/config.h"
#include "common/timeline.h"
#include "concord/concord.h"
#include "control/negotiator.h"
#include "device/device_set.h"
#include "runtime/executor.h"
#include "runtime/process_set.h"
#include "runtime/tensor_queue.h"
#include "transport/communicator_set.h"

namespace concord {

class Runtime {
 public:
  /// Runs on `comms` (control and data communicators over the same ranks; see
  /// transport/communicator_set.h) with `config` (Config::from_env() plus the InitOptions
  /// overrides): adopts rank 0's shared settings (fusion threshold, cycle time, chunk
  /// sizes, algorithms, cost model, measured selections) so every rank plans alike, and
  /// creates the `process_sets` (InitOptions::process_sets: global ranks, ascending; every
  /// rank passes the same) and starts the background thread. Collective over
  /// comms.control. `devices` are the devices TensorView::device indexes (null: made
  /// from config.device, DeviceSet::from_setting). Throws InvalidArgument for an unknown
  /// forced algorithm name, a bad CONCORD_DEVICE or process sets that differ between ranks.
  Runtime(CommunicatorSet comms, Config config, const std::vector<std::vector<int>>& process_sets = {},
          std::shared_ptr<DeviceSet> devices = nullptr);
  /// Calls shutdown().
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Asks every rank to stop at the next cycle, joins the background thread and fails the
  /// operations still pending with StateError. Idempotent.
  void shutdown();

  int rank() const { return control_->rank(); }
  int size() const { return control_->size(); }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int cross_rank() const { return cross_rank_; }
  int cross_size() const { return cross_size_; }
  bool mpi_threads_supported() const { return mpi_threads_supported_; }
  const Config& config() const { return config_; }
  /// The devices TensorView::device indexes.
  const DeviceSet& devices() const { return *devices_; }
  /// The pointer-cache counters of those devices (kDetectDevice lookups and the device
  /// layer's own), summed.
  PointerCacheStats pointer_cache_stats() const { return devices_->pointer_cache_stats(); }

  /// Validates `request` against the buffers and queues it on process set `process_set`;
  /// see concord.h for the rules and errors.
  Handle enqueue(Request request, const TensorView& input, const TensorView& output, int process_set = 0);
  /// Queues this rank's next barrier of the set (named after a per-set counter, so the
  /// n-th barrier of every member meet).
  Handle enqueue_barrier(int process_set = 0);
  /// Validates and queues the members of one group atomically (all or none).
  std::vector<Handle> enqueue_group(std::vector<Request> requests, const std::vector<TensorView>& inputs,
                                    const std::vector<TensorView>& outputs, int process_set = 0);
  /// Queues the collective registration (ranks non-empty) or removal (ranks empty, `id`)
  /// of a process set on the world; see concord.h add_process_set.
  Handle enqueue_process_set(const std::vector<int>& ranks, int id);
  /// Queues the registration of a process set of `ranks` submitted by its members only
  /// (this rank must be one), named `name` (the same on every member); see concord.h
  /// form_process_set.
  Handle enqueue_formed_process_set(const std::vector<int>& ranks, const std::string& name);
  /// The process sets (thread-safe lookups).
  const ProcessSetTable& process_sets() const { return *sets_; }
  /// Starts writing the timeline to `path` on rank 0 (no-op elsewhere). Throws
  /// InvalidArgument if the file cannot be opened, StateError if one is being written.
  void start_timeline(const std::string& path);
  /// Stops and closes the timeline (valid JSON from then on). No-op if none is written.
  void stop_timeline();

  /// Why the background thread stopped if this rank failed (a stall shutdown, a transport
  /// or internal error, or a peer's shutdown while this rank had collectives pending);
  /// empty while running and after a plain shutdown.
  std::string failure() const;

  /// This rank's coordination counters as of the last negotiation.
  CoordinationStats coordination_stats() const;

 private:
  // Replaces kDetectDevice in `input` and `output` by the device (or kHostMemory) the
  // devices' pointer caches place their data on (an output at the input's address takes
  // the input's answer without a second lookup).
  void resolve_devices(TensorView& input, TensorView& output) const;
  // Fills the request's rank (in `set`), dtype, shape (and an alltoall's equal splits),
  // turns a broadcast's global root into the set's rank, and validates it.
  void prepare(Request& request, const TensorView& input, const TensorView& output, const ProcessSet& set) const;
  // The set `id` if this rank is a member, else InvalidArgument naming what() (built only
  // then: enqueue() is on the framework thread's per-tensor path).
  std::shared_ptr<ProcessSet> member_set(int id, const std::function<std::string()>& what) const;
  // One negotiation round of every set this rank is in; returns the world's answer.
  ResponseList negotiate_round();
  void background_loop();
  // True while some set of this rank (the world included) has collectives in flight.
  bool pending_anywhere() const;
  // Returns when the next negotiation round must start (see the file comment); announces
  // it to the other ranks when this rank is the one with a reason.
  void await_round();
  // True when a member set other than the world has new requests or a due stall check (set
  // rank 0), or, with `after_progress`, made progress in the last round: its next round
  // runs within the world's, so the world's must run.
  bool other_sets_want_round(bool after_progress) const;
  // Before every round this rank takes part in (its own, one another rank announced, or
  // the one after a round with progress): while its framework threads keep submitting,
  // waits on the world queue's flush signal until one of them blocks on a handle, no push
  // came for a tenth of CONCORD_CYCLE_TIME, or CONCORD_CYCLE_TIME has passed, so a burst
  // goes into one round.
  void linger_while_submitting();

  Config config_;
  std::shared_ptr<DeviceSet> devices_;  // declared before the executors that use it
  // The device this process's device tensors use (one device per process, as one GPU per
  // rank): kHostMemory until the first device tensor is submitted.
  mutable std::atomic<int32_t> device_in_use_{kHostMemory};
  std::unique_ptr<Communicator> control_;
  std::unique_ptr<Communicator> data_;
  int local_rank_ = 0;
  int local_size_ = 1;
  int cross_rank_ = 0;  // among the ranks with this local rank (patterns/cross.h)
  int cross_size_ = 1;
  bool mpi_threads_supported_ = false;  // MPI provides MPI_THREAD_MULTIPLE
  Timeline timeline_;                   // declared before its users (negotiators, executors)
  CostParams cost_;
  std::vector<int> node_of_rank_;
  std::unique_ptr<ProcessSetTable> sets_;  // set 0 (the world) and the others
  std::shared_ptr<ProcessSet> world_;
  TensorQueue& world_queue() const { return world_->queue; }
  Negotiator& world_negotiator() const { return *world_->negotiator; }
  std::atomic<bool> shutdown_requested_{false};
  std::mutex process_set_mutex_;  // names add/remove requests
  uint64_t process_set_calls_ = 0;
  mutable std::mutex stats_mutex_;
  CoordinationStats stats_;  // copied from the negotiator after every negotiation
  std::string failure_;      // see failure(); guarded by stats_mutex_
  std::thread thread_;
};

}  // namespace concord
