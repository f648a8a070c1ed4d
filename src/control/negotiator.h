// One negotiation round of the background cycle (docs/algorithms.md, "Negotiation"; Romero
// et al., NSDI 2022, "response cache" and "bit-vector coordination"):
//   1. classify this rank's pending requests against the response cache: HIT (bit set),
//      INVALID (same name, new parameters), MISS. A group is a HIT only if all its members
//      are, otherwise every member goes the slow path.
//   2. one bitwise-AND allreduce of [status word | cache bits]. Status bits are stored
//      inverted (1 = "not"), so the AND answers "does any rank want to shut down / have
//      uncached requests / have invalid entries / (rank 0) want a stall check".
//   3. if some rank has INVALID entries: one bitwise-OR allreduce of their bits; every rank
//      erases those entries (in bit order), so no stale response is ever executed.
//   4. fast path: the bits still set are requested on every rank; each rank turns them
//      into responses from its own cache, in bit order. Hits not common stay pending.
//   5. slow path, only if some rank has uncached requests: gather of the uncached requests
//      to the coordinator (rank 0), which answers the tensors now ready on every rank;
//      broadcast; every rank caches the new responses in broadcast order.
//   Join: the ranks that have joined (ResponseList::joined of the last slow path, the same
//   on every rank) contribute all-ones cache bits, so their peers' cached tensors proceed;
//   every response carries the joined set it was formed with, and responses formed while
//   some rank is joined are not cached (the joined ranks have no parameters to cache).
//   6. stall check, every quarter of the stall warning time: gather of each rank's pending
//      cached requests to rank 0, whose StallInspector logs tensors that some ranks have
//      submitted and others have not, and may order a shutdown (broadcast).
//   7. when some rank asked to shut down (status bit): one bitwise-OR allreduce of a
//      P-bit rank map says which, so a peer's failed operations name them.
// Cost per cycle on the fast path: one allreduce of (1 + capacity/64) words (constant in P,
// log P latency); the coordinator's traffic grows with P only on the slow path.
//
// Idle ranks (no fixed cycle time): after a round that made progress (responses, invalidations,
// uncached requests, a stall check) every rank runs the next round at once; after one that
// made none, every rank agrees (from the same global result) that the job is idle(), and
// the next round starts only when some rank has a reason (new requests, shutdown, rank 0's
// due stall check): it announce()s the round through the WakeChannel and the others, which
// block in the runtime polling woken(), join it. A status bit tells rank 0 whether any rank
// has requests pending, so an idle job runs no stall checks either.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "common/timeline.h"
#include "concord/concord.h"
#include "control/coordinator.h"
#include "control/message.h"
#include "control/rank_names.h"
#include "control/response_cache.h"
#include "control/stall_inspector.h"
#include "control/wake_channel.h"
#include "transport/communicator.h"

namespace concord {

/// The negotiation's settings; the defaults are the configuration table's (default_config()).
struct NegotiatorOptions {
  /// CONCORD_CACHE_CAPACITY; 0 disables the cache
  uint32_t cache_capacity = static_cast<uint32_t>(default_config().cache_capacity);
  double stall_warning_seconds = default_config().stall_warning_seconds;    ///< CONCORD_STALL_WARNING_TIME
  double stall_shutdown_seconds = default_config().stall_shutdown_seconds;  ///< CONCORD_STALL_SHUTDOWN_TIME; 0 = never
  /// false (CONCORD_STALL_CHECK_DISABLE): no warning, no shutdown
  bool stall_check = !default_config().stall_check_disabled;
  RankNames names;  ///< how messages name the ranks (global ranks, process set); default: the world
};

class Negotiator {
 public:
  /// `control` is a communicator used for nothing else (so control and data messages never
  /// match each other). Every rank must pass the same cache capacity.
  Negotiator(Communicator& control, const NegotiatorOptions& options);

  /// Runs one round with this rank's requests submitted since the last call. Collective
  /// over `control`: every rank calls it once per cycle. Returns the responses to execute,
  /// identical on every rank: cached hits in bit order, then the coordinator's new ones.
  /// shutdown is set if any rank asked for it or the stall inspector ordered it (then
  /// shutdown_message says why; shutdown_ranks lists the ranks that asked). Throws CommError on transport failure.
  ResponseList negotiate(std::vector<Request> new_requests, bool shutdown);

  /// Records NEGOTIATE_<COLLECTIVE> spans (with a mark per rank as its request reaches the
  /// coordinator) in `timeline` while it is active. Rank 0 only; others ignore it.
  void set_timeline(Timeline* timeline) { timeline_ = comm_.rank() == 0 ? timeline : nullptr; }

  const CoordinationStats& stats() const { return stats_; }

  /// True when the last round made no progress on any rank (the same on every rank; true
  /// before the first round): the next round then needs an announce() by some rank.
  bool idle() const { return idle_; }
  /// Tells every other rank that the next round starts (call before negotiate() when
  /// idle() and this rank has a reason to run it). Never blocks.
  void announce() { wake_.announce(rounds_); }
  /// True when another rank has announced the next round. Never blocks.
  bool woken() { return wake_.poll(rounds_); }
  /// True on rank 0 when a stall check is due and some rank had requests pending at the
  /// last round (an idle job runs no stall checks).
  bool stall_check_due() const;
  /// Collective, after the round that returned shutdown: settles the wake messages so the
  /// control communicator has nothing pending. Call once, after the last negotiate().
  void finish() { wake_.drain(); }
  const ResponseCache& cache() const { return cache_; }

 private:
  struct Classified {
    std::vector<Request> hits;
    std::vector<uint32_t> hit_bit;  ///< the cache bit of each of `hits`
    std::vector<Request> uncached;
    std::vector<uint64_t> hit_bits;
    std::vector<uint64_t> invalid_bits;
    bool any_invalid = false;
  };
  Classified classify();
  // True while this rank has joined and some other rank has not.
  bool i_joined() const;
  // The responses of the cache bits set on every rank (`common`); removes them from
  // `mine.hits`, which keeps the hits still waiting for other ranks.
  std::vector<Response> take_common_hits(const std::vector<uint64_t>& common, Classified& mine);
  std::vector<Response> coordinate(const std::vector<Request>& uncached);
  std::optional<std::string> stall_check();
  double stall_period_seconds() const;
  void cache_new(const std::vector<Response>& responses);
  void timeline_seen(const Request& request);
  void timeline_answered(const std::vector<Response>& responses);

  Communicator& comm_;
  NegotiatorOptions options_;
  ResponseCache cache_;
  std::optional<Coordinator> coordinator_;         // rank 0 only
  std::optional<StallInspector> stall_inspector_;  // rank 0 only
  std::chrono::steady_clock::time_point last_stall_check_;
  std::vector<Request> pending_;                   // not yet answered nor sent to rank 0
  std::unordered_map<std::string, Request> sent_;  // sent to rank 0, awaiting a response
  bool eviction_warned_ = false;
  std::vector<int32_t> joined_;  // ranks joined as of the last slow path (same on every rank)
  Timeline* timeline_ = nullptr;
  std::unordered_map<std::string, bool> negotiating_;  // names with an open NEGOTIATE span
  CoordinationStats stats_;
  WakeChannel wake_;
  uint64_t rounds_ = 0;          // rounds completed (the same on every rank)
  bool idle_ = true;             // the last round made no progress anywhere
  bool anyone_pending_ = false;  // some rank had requests pending at the last round
};

}  // namespace concord
