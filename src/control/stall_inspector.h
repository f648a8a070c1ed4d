// The stall inspector (Horovod's common/stall_inspector; "Errors" in
// docs/architecture.md): on the coordinator, finds tensors that some ranks have
// submitted and others have not for longer than CONCORD_STALL_WARNING_TIME, says which ranks
// are missing, and asks for a shutdown once one has waited longer than
// CONCORD_STALL_SHUTDOWN_TIME (0 = never).
//
// Pure decision logic: it neither communicates nor logs. The caller (rank 0's background
// thread) feeds it submissions and removals, calls check() once per cycle, logs the
// warnings and, on shutdown, fails every pending handle with the message.
//
// Not thread-safe: used by rank 0's background thread only. All times are
// std::chrono::steady_clock time points passed in by the caller (so tests need no sleeping);
// all durations are in seconds.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "control/rank_names.h"

namespace concord {

/// What one StallInspector::check() found.
struct StallReport {
  /// One log line per stalled tensor newly past the warning time, or past another warning
  /// period since its last warning, e.g. "Tensor 'a' (allreduce) has been submitted by ranks
  /// [0, 2] but not by ranks [1, 3] for 61.2 s; ...". Ordered by first submission, then name.
  std::vector<std::string> warnings;
  /// Some tensor has been stalled longer than the shutdown time (only when that is > 0).
  bool shutdown = false;
  /// When `shutdown`: one message naming every stalled tensor (submitted by some but not
  /// all ranks) and its missing ranks, e.g. "Stall shutdown after 5 s
  /// (CONCORD_STALL_SHUTDOWN_TIME): tensor 'a' is missing on ranks [1]; tensor 'b' is
  /// missing on ranks [2, 3]". Empty otherwise.
  std::string shutdown_message;
};

class StallInspector {
 public:
  using Clock = std::chrono::steady_clock;

  /// `size` = number of ranks (>= 1); `warning_seconds` > 0; `shutdown_seconds` >= 0, where
  /// 0 disables shutdown. Throws InvalidArgument otherwise. Messages name the ranks by
  /// `names` (global ranks and the process set, on a set's negotiation).
  StallInspector(int size, double warning_seconds, double shutdown_seconds, RankNames names = {});

  /// Records that `rank` (in [0, size)) has submitted `tensor` at `now`; `collective` (e.g.
  /// "allreduce") is used in messages. Idempotent per (tensor, rank): a repeat keeps the
  /// first time and collective. Throws InvalidArgument for a rank out of range.
  void record_submitted(const std::string& tensor, const char* collective, int rank, Clock::time_point now);

  /// Forgets `tensor` (it became ready on all ranks, or was erased). Unknown names are ignored.
  void remove(const std::string& tensor);

  /// Checks every tracked tensor submitted by some but not all ranks; its stall time is `now`
  /// minus the time the FIRST rank submitted it. Warns once when the stall time passes
  /// warning_seconds, then again each time another warning_seconds has passed since the last
  /// warning (not on every call). Requests shutdown when any stall time passes
  /// shutdown_seconds (> 0). Deterministic order: by first-submission time, then name.
  StallReport check(Clock::time_point now);

  /// Number of tracked tensors (including ones submitted by all ranks but not yet removed).
  size_t tracked() const { return entries_.size(); }

 private:
  struct Entry {
    std::string collective;
    std::vector<bool> submitted;  // index = rank
    int count = 0;
    Clock::time_point first;
    bool warned = false;
    Clock::time_point last_warning;
  };

  int size_;
  RankNames names_;
  Clock::duration warning_;
  Clock::duration shutdown_;  // zero = never
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace concord
