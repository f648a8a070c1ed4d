// How the ranks of a world find each other through a Store (store.h) before any message:
//   1. claim the rank: add("claim/R", 1) must return 1, else rank R was claimed twice;
//   2. publish the world size this rank was told ("size/R") and its framed address
//      ("addr/R", address_frame.h);
//   3. wait for every rank's address; check that every rank was told the same size and
//      that every record unframes;
//   4. count arrivals ("arrived"); the last to arrive sets "ready", everyone waits for it.
// Every key is prefixed "concord/<run id>/". A rank that fails sets "abort" to its reason
// first, so the others stop at once with that reason instead of waiting for the deadline;
// a rank that never arrives makes every other rank fail at the deadline with the list of
// missing ranks. Transport-independent (the UCX world passes its worker address).
#pragma once

#include <string>
#include <vector>

#include "transport/rendezvous/address_frame.h"
#include "transport/rendezvous/store.h"

namespace concord::rendezvous {

struct RendezvousOptions {
  int rank = 0;
  int size = 1;
  std::string run_id;  ///< key prefix: jobs sharing one store must differ
  Clock::time_point deadline;
};

/// "concord/<run id>/": the prefix of every key of the world `run_id` names (its
/// rendezvous, its abort key, its ranks' heartbeats: ucx/peer_heartbeat.h).
std::string key_prefix(const std::string& run_id);

/// Every rank's PeerAddress in rank order (`mine` at options.rank). Collective over the
/// `size` processes using `store`. Throws CommError on every rank, naming the rank(s) and
/// what went wrong, for a duplicate rank, a world-size disagreement, a rank missing at the
/// deadline, an unreadable record, or an unreachable store.
std::vector<PeerAddress> exchange_addresses(Store& store, const RendezvousOptions& options, const PeerAddress& mine);

}  // namespace concord::rendezvous
