// This rank's tensor queue and in-flight table: framework threads push entries, the
// background thread pops the new requests each cycle and takes entries back by name when
// a response for them is executed. A name may be in flight only once per rank. An idle
// background thread blocks in wait_for_push() and a push wakes it at once.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "concord/types.h"
#include "control/message.h"
#include "runtime/flush_signal.h"
#include "runtime/handle_state.h"

namespace concord {

/// One submitted collective: the request sent to the coordinator, the caller's buffers
/// and the handle to complete. push() moves the request on to the new requests: an
/// entry taken back from the queue holds only its buffers and handle.
struct TensorEntry {
  Request request;
  TensorView input;
  TensorView output;
  std::shared_ptr<HandleState> handle;
};

class TensorQueue {
 public:
  /// Adds an entry. Throws InvalidArgument if its name is already in flight on this rank,
  /// StateError (with the close message) after close().
  void push(TensorEntry entry);
  /// Adds several entries atomically (a group): all are queued, or none and the first
  /// error is thrown (a duplicate among them included).
  void push_all(std::vector<TensorEntry> entries);
  /// The requests pushed since the last call, in push order.
  std::vector<Request> pop_requests();
  /// Removes and returns the in-flight entry `name`. Throws InternalError if absent.
  TensorEntry take(const std::string& name);
  /// As take(), but std::nullopt when `name` is not in flight (a joined rank).
  std::optional<TensorEntry> try_take(const std::string& name);
  /// try_take() of every name of a response under one lock (a fused response of many
  /// tensors must not contend with the framework thread's pushes once per tensor).
  std::vector<std::optional<TensorEntry>> try_take_all(const std::vector<std::string>& names);
  /// Refuses further pushes and fails every in-flight entry with StateError(message +
  /// " (tensor '<name>')"), or CommError when `transport_failed` (a peer or the transport
  /// failed: the handles say so as the transport did).
  void close(const std::string& message, bool transport_failed = false);
  /// Number of entries in flight.
  size_t in_flight() const;
  /// True when requests were pushed since the last pop_requests().
  bool has_new() const { return new_count() > 0; }
  /// Number of requests pushed since the last pop_requests(); lock-free (the background
  /// thread polls it while a burst of pushes is arriving).
  size_t new_count() const { return new_count_.load(std::memory_order_acquire); }
  /// Blocks for at most `timeout` (0: returns at once), returning early when requests are
  /// pushed or interrupt() is called. Returns has_new(). One interrupt() ends one wait
  /// (the next one if nobody is waiting).
  bool wait_for_push(std::chrono::microseconds timeout);
  /// Ends the current (or next) wait_for_push() early, e.g. for a shutdown request, and
  /// requests a flush (a lingering background thread stops too).
  void interrupt();
  /// The signal a framework thread raises when it blocks on a pending handle
  /// (HandleState::wait): the burst it was submitting is over. Handles hold it weakly.
  /// Once raised, it ends a wait_for_more() at once and stays raised until the next push
  /// or pop_requests().
  std::weak_ptr<FlushSignal> flush_signal() const { return flush_; }
  /// True when a flush was requested after the last push and pop_requests() (a wait on a
  /// handle already negotiated must not cut the next burst short).
  bool flush_requested() const { return flush_->requested(); }
  /// Blocks for `timeout`, or less if a flush is requested; returns true when new_count()
  /// then differs from `seen`. Pushes do not wake it: a burst of pushes then costs the
  /// background thread one wake-up per `timeout`, not one per push (each a futex wake).
  bool wait_for_more(size_t seen, std::chrono::microseconds timeout);

 private:
  // Under mutex_: moves the request to new_requests_ and the rest into the table.
  void insert(TensorEntry entry);

  mutable std::mutex mutex_;
  std::condition_variable pushed_;
  bool interrupted_ = false;
  bool push_waiter_ = false;  // a thread is in wait_for_push(): pushes notify only then
  std::unordered_map<std::string, TensorEntry> table_;
  std::vector<Request> new_requests_;
  std::atomic<size_t> new_count_{0};  // new_requests_.size(), written under mutex_
  std::shared_ptr<FlushSignal> flush_ = std::make_shared<FlushSignal>();
  std::string closed_message_;  // empty while open
};

}  // namespace concord
