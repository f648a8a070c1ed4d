// ForwardingCommunicator: the base of transport decorators (gloo's and UCC's layered
// transports do the same): every Communicator method goes to the wrapped communicator
// unchanged, so a decorator overrides only what it changes -- the device-pointer
// transports (transport/staging_communicator.h, transport/direct_communicator.h) override
// isend and irecv. split() splits the wrapped communicator and wraps the child the same
// way (wrap()), so a decorated group splits like any other.
// Traffic counters: a message is counted here (and in this communicator's ancestors) by
// whichever of isend/irecv posts it; the wrapped communicator counts it again in its own.
#pragma once

#include <memory>
#include <vector>

#include "transport/communicator.h"

namespace concord {

class ForwardingCommunicator : public Communicator {
 public:
  /// Forwards to `inner`, which must outlive this object; takes its max_message_bytes().
  explicit ForwardingCommunicator(Communicator& inner);
  /// Forwards to `inner` and owns it (a wrapped split() child).
  explicit ForwardingCommunicator(std::unique_ptr<Communicator> inner);

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  /// The inner isend, counted here too.
  RequestPtr isend(const void* data, size_t bytes, int peer, int tag) override;
  /// The inner irecv, counted here too.
  RequestPtr irecv(void* data, size_t bytes, int peer, int tag) override;
  std::vector<std::vector<uint8_t>> gather_bytes(const std::vector<uint8_t>& mine, int root) override {
    return inner_.gather_bytes(mine, root);
  }
  void broadcast_bytes(std::vector<uint8_t>& data, int root) override { inner_.broadcast_bytes(data, root); }
  void barrier() override { inner_.barrier(); }
  void allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) override {
    inner_.allreduce_bits(words, bitwise_and);
  }
  /// The inner communicator's native collectives (a decorator whose buffers they cannot
  /// take overrides this to return nullptr).
  NativeCollectives* native() override { return inner_.native(); }
  /// Collective, as Communicator::split: the inner communicator's split, passed through
  /// wrap() and credited to this communicator's counters; nullptr for a negative color.
  std::unique_ptr<Communicator> split(int color, int key) override;

 protected:
  Communicator& inner() const { return inner_; }
  /// This decorator around `child` (a communicator split from inner()), owning it.
  virtual std::unique_ptr<Communicator> wrap(std::unique_ptr<Communicator> child) = 0;

 private:
  std::unique_ptr<Communicator> owned_;
  Communicator& inner_;
};

}  // namespace concord
