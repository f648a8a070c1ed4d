// Liveness of a UCX world's ranks beside UCX, through the world's rendezvous store: UCX's
// fast endpoints (shared memory, CMA, and TCP in the error mode Concord uses) report no
// peer failure, and a process check only sees peers on the same host. Every rank's thread
// adds 1 to "<prefix>heartbeat/<rank>" every interval; a rank that a transfer waits on is
// "watched", and its counter read every interval; a watched rank whose counter has not
// moved for CONCORD_PEER_TIMEOUT seconds is lost (killed with its host, SIGSTOPped, hung).
// The same thread reads the world's abort key ("<prefix>abort": a launcher's or a peer's
// reason to abandon the world, world_rendezvous.h). The store's traffic is one request per
// rank per interval plus one per watched peer: a ring watches two neighbours.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/rendezvous/store.h"

namespace concord {

class PeerHeartbeat {
 public:
  /// Starts the thread. `prefix` is the world's rendezvous key prefix ("concord/<run id>/").
  PeerHeartbeat(std::shared_ptr<rendezvous::Store> store, std::string prefix, int rank, int size,
                std::chrono::milliseconds timeout);
  /// Stops the thread (at most one store request later).
  ~PeerHeartbeat();
  PeerHeartbeat(const PeerHeartbeat&) = delete;
  PeerHeartbeat& operator=(const PeerHeartbeat&) = delete;

  /// Why world rank `rank` is lost (its heartbeat stopped, the world's abort key, the store
  /// unreachable), or "" while it looks alive. Starts watching `rank`: its full timeout
  /// runs from the first call. Never waits for the store; thread-safe.
  std::string lost(int rank);

  /// Seconds between two heartbeats for a timeout: a fifth of it, at most one second.
  static std::chrono::milliseconds interval(std::chrono::milliseconds timeout);

 private:
  struct Peer {
    bool watched = false;
    std::string count;  // the last counter value read
    std::chrono::steady_clock::time_point changed;
  };
  void run();
  void beat_and_read();

  std::shared_ptr<rendezvous::Store> store_;
  std::string prefix_;
  int rank_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::vector<Peer> peers_;
  std::string failure_;  // the abort key's reason or the store's failure, once known
  std::thread thread_;
};

}  // namespace concord
