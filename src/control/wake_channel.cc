#include "control/wake_channel.h"

#include "common/backoff.h"

namespace concord {

WakeChannel::WakeChannel(Communicator& comm) : comm_(comm), inbox_(comm.size(), 0), receives_(comm.size()) {
  for (int peer = 0; peer < comm_.size(); ++peer)
    if (peer != comm_.rank()) receives_[peer] = comm_.irecv(&inbox_[peer], sizeof(uint64_t), peer, kWakeTag);
}

void WakeChannel::reap_sends() {
  for (auto it = sends_.begin(); it != sends_.end();) it = it->request->test() ? sends_.erase(it) : std::next(it);
}

void WakeChannel::announce(uint64_t round) {
  reap_sends();
  for (int peer = 0; peer < comm_.size(); ++peer) {
    if (peer == comm_.rank()) continue;
    Send& send = sends_.emplace_back(Send{round, nullptr});
    send.request = comm_.isend(&send.value, sizeof(uint64_t), peer, kWakeTag);
  }
}

bool WakeChannel::poll(uint64_t round) {
  bool woken = false;
  for (int peer = 0; peer < comm_.size(); ++peer) {
    // A peer may have several messages queued (stale ones first): take all that are here.
    while (receives_[peer] && receives_[peer]->test()) {
      woken |= inbox_[peer] >= round;
      receives_[peer] = comm_.irecv(&inbox_[peer], sizeof(uint64_t), peer, kWakeTag);
    }
  }
  return woken;
}

void WakeChannel::drain() {
  announce(kFinal);
  Backoff backoff;
  for (int peer = 0; peer < comm_.size(); ++peer) {
    while (receives_[peer]) {
      if (!receives_[peer]->test()) {
        backoff.wait();
        continue;
      }
      receives_[peer] = inbox_[peer] == kFinal ? nullptr : comm_.irecv(&inbox_[peer], sizeof(uint64_t), peer, kWakeTag);
    }
  }
  while (!sends_.empty()) {
    reap_sends();
    if (!sends_.empty()) backoff.wait();
  }
}

}  // namespace concord
