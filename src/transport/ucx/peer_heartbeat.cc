#include "transport/ucx/peer_heartbeat.h"

#include <algorithm>
#include <cstdio>
#include <exception>

namespace concord {

std::chrono::milliseconds PeerHeartbeat::interval(std::chrono::milliseconds timeout) {
  return std::clamp(timeout / 5, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
}

PeerHeartbeat::PeerHeartbeat(std::shared_ptr<rendezvous::Store> store, std::string prefix, int rank, int size,
                             std::chrono::milliseconds timeout)
    : store_(std::move(store)), prefix_(std::move(prefix)), rank_(rank), timeout_(timeout), peers_(size) {
  thread_ = std::thread([this] { run(); });
}

PeerHeartbeat::~PeerHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::string PeerHeartbeat::lost(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty()) return failure_;
  if (rank < 0 || rank >= static_cast<int>(peers_.size()) || rank == rank_) return "";
  Peer& peer = peers_[rank];
  const auto now = std::chrono::steady_clock::now();
  if (!peer.watched) {
    peer.watched = true;
    peer.changed = now;
    return "";
  }
  if (now - peer.changed <= timeout_) return "";
  const double silent = std::chrono::duration<double>(now - peer.changed).count();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", silent);
  return "world rank " + std::to_string(rank) + " sent no heartbeat for " + seconds +
         " s (CONCORD_PEER_TIMEOUT): stopped, hung, or lost with its host";
}

void PeerHeartbeat::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    lock.unlock();
    beat_and_read();
    lock.lock();
    wake_.wait_for(lock, interval(timeout_), [this] { return stop_; });
  }
}

void PeerHeartbeat::beat_and_read() {
  std::vector<int> watched;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failure_.empty()) return;
    for (int r = 0; r < static_cast<int>(peers_.size()); ++r)
      if (peers_[r].watched) watched.push_back(r);
  }
  std::string failure;
  std::vector<std::pair<int, std::string>> counts;
  try {
    store_->add(prefix_ + "heartbeat/" + std::to_string(rank_), 1);
    if (auto reason = store_->try_get(prefix_ + "abort")) {
      failure = "the world was aborted: " + rendezvous::to_string(*reason);
    }
    for (int r : watched) {
      auto value = store_->try_get(prefix_ + "heartbeat/" + std::to_string(r));
      counts.emplace_back(r, value ? rendezvous::to_string(*value) : "");
    }
  } catch (const std::exception& error) {
    failure = std::string("the rendezvous store ") + store_->describe() +
              " is unreachable (its server, rank 0's process, may have exited): " + error.what();
  }
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure.empty()) {
    failure_ = failure;
    return;
  }
  for (const auto& [r, count] : counts) {
    if (count != peers_[r].count) {
      peers_[r].count = count;
      peers_[r].changed = now;
    }
  }
}

}  // namespace concord
