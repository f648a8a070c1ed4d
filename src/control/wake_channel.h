// How an idle rank learns that another rank starts a negotiation round (rounds run only
// when some rank has work). Negotiation rounds are collective, but a rank with nothing to do blocks
// instead of running empty rounds; so a rank that has work after a round in which no rank
// made progress tells every other rank, by a small message, that round `r` starts.
//
// Protocol (per communicator used by one Negotiator, message tag kWakeTag):
//   - every rank keeps one receive of one uint64 posted from every other rank;
//   - announce(r): an 8-byte message carrying r to every other rank (P - 1 messages);
//   - poll(r): tests the posted receives; a message carrying r (or more) means "round r
//     starts"; one carrying less is stale (several ranks announced the same round, or a
//     round that already ran), is dropped, and its receive is posted again;
//   - drain(): after the round that shut everything down, every rank sends kFinal to
//     every other rank and receives from each until its kFinal, so no receive or message is
//     left pending when the communicator is freed (MPI's non-overtaking rule orders them).
// Cost: nothing while ranks are busy (rounds follow each other without messages); P - 1
// messages of 8 bytes from each rank that wakes an idle job.
#pragma once

#include <cstdint>
#include <list>
#include <vector>

#include "transport/communicator.h"
#include "transport/tags.h"

namespace concord {

class WakeChannel {
 public:
  /// Point-to-point tag of the wake messages on the negotiator's control communicator.
  static constexpr int kWakeTag = tags::kWake;

  /// Posts one receive from every other rank of `comm` (not collective).
  explicit WakeChannel(Communicator& comm);
  WakeChannel(const WakeChannel&) = delete;
  WakeChannel& operator=(const WakeChannel&) = delete;

  /// Tells every other rank that round `round` starts. Never blocks.
  void announce(uint64_t round);
  /// True if some rank has announced `round` (or a later one); drops stale messages.
  /// Never blocks. Throws CommError on transport failure.
  bool poll(uint64_t round);
  /// Collective: sends kFinal to every other rank and receives every message still
  /// coming, so nothing is pending afterwards. Blocks (with a Backoff) until done.
  void drain();

 private:
  static constexpr uint64_t kFinal = ~uint64_t{0};
  struct Send {
    uint64_t value;
    RequestPtr request;
  };
  void reap_sends();

  Communicator& comm_;
  std::vector<uint64_t> inbox_;       // one slot per rank (own slot unused)
  std::vector<RequestPtr> receives_;  // posted receive per other rank
  std::list<Send> sends_;             // stable addresses until each completes
};

}  // namespace concord
