// A Communicator that forwards every call to another and records, in order, what one rank
// does through it: each isend posted and each test() of a send or a receive with its
// outcome, and each control collective with the bytes it carried. Tests of a mechanism
// (which message an algorithm sends when, what it polls between two sends, how many bytes
// the negotiation puts through the control transport) read the log instead of timing
// anything. A hook run
// before every test() lets a single-threaded driver make the other ranks progress "while"
// this rank polls (tests/unit/test_overlapped_tree_turnaround.cc); without one the log is
// a plain trace (tests/mpi/mechanisms_test.cc). Several ranks may share one log when
// they run on one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "transport/communicator.h"

namespace concord::testing_util {

/// One point-to-point event of one rank.
struct TransportEvent {
  enum Kind { kSendPosted, kSendTested, kReceiveTested, kGather, kBroadcast, kAllreduceBits, kBarrier };
  int rank = 0;
  Kind kind = kSendPosted;
  int peer = 0;  ///< point-to-point: the other rank; gather and broadcast: the root
  int tag = 0;
  /// Byte offset of the message buffer in the rank's data buffer; -1 when the buffer lies
  /// outside it (a receive into scratch) or for a collective.
  int64_t offset = -1;
  /// For kSendTested / kReceiveTested: what test() returned.
  bool complete = false;
  /// Bytes this rank handed to the transport: the message (kSendPosted), its part of a
  /// gather, the broadcast payload at the root, the bit vector of an allreduce.
  uint64_t bytes_in = 0;
  /// Bytes the transport handed back: every rank's part at a gather's root, the broadcast
  /// payload elsewhere, the allreduced bit vector.
  uint64_t bytes_out = 0;
};

/// Forwards to `inner`; logs to `log` as rank inner.rank(). `data` and `bytes` locate the
/// rank's data buffer (offsets in the log are relative to it). `before_test`, when set, runs
/// before each test() of a request of this communicator is forwarded.
class TransportLog : public Communicator {
 public:
  TransportLog(Communicator& inner, std::vector<TransportEvent>& log, const void* data, size_t bytes,
               std::function<void()> before_test = nullptr)
      : inner_(inner),
        log_(log),
        data_(static_cast<const uint8_t*>(data)),
        bytes_(bytes),
        before_test_(std::move(before_test)) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  RequestPtr isend(const void* data, size_t bytes, int peer, int tag) override {
    const int64_t offset = offset_of(data);
    log_.push_back({rank(), TransportEvent::kSendPosted, peer, tag, offset, false, bytes, 0});
    return std::make_unique<Logged>(*this, inner_.isend(data, bytes, peer, tag), TransportEvent::kSendTested, peer, tag,
                                    offset);
  }
  RequestPtr irecv(void* data, size_t bytes, int peer, int tag) override {
    return std::make_unique<Logged>(*this, inner_.irecv(data, bytes, peer, tag), TransportEvent::kReceiveTested, peer,
                                    tag, offset_of(data));
  }
  std::vector<std::vector<uint8_t>> gather_bytes(const std::vector<uint8_t>& mine, int root) override {
    auto all = inner_.gather_bytes(mine, root);
    uint64_t gathered = 0;
    for (const auto& part : all) gathered += part.size();
    log_.push_back({rank(), TransportEvent::kGather, root, 0, -1, true, mine.size(), gathered});
    return all;
  }
  void broadcast_bytes(std::vector<uint8_t>& data, int root) override {
    const uint64_t in = rank() == root ? data.size() : 0;
    inner_.broadcast_bytes(data, root);
    log_.push_back({rank(), TransportEvent::kBroadcast, root, 0, -1, true, in, rank() == root ? 0 : data.size()});
  }
  void barrier() override {
    inner_.barrier();
    log_.push_back({rank(), TransportEvent::kBarrier, 0, 0, -1, true, 0, 0});
  }
  void allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) override {
    inner_.allreduce_bits(words, bitwise_and);
    const uint64_t bytes = words.size() * sizeof(uint64_t);
    log_.push_back({rank(), TransportEvent::kAllreduceBits, 0, 0, -1, true, bytes, bytes});
  }
  std::unique_ptr<Communicator> split(int color, int key) override { return inner_.split(color, key); }

 private:
  class Logged : public TransportRequest {
   public:
    Logged(TransportLog& owner, RequestPtr inner, TransportEvent::Kind kind, int peer, int tag, int64_t offset)
        : owner_(owner), inner_(std::move(inner)), event_{owner.rank(), kind, peer, tag, offset, false, 0, 0} {}
    bool test() override {
      if (owner_.before_test_) owner_.before_test_();
      event_.complete = inner_->test();
      owner_.log_.push_back(event_);
      return event_.complete;
    }

   private:
    TransportLog& owner_;
    RequestPtr inner_;
    TransportEvent event_;
  };

  int64_t offset_of(const void* p) const {
    const auto* byte = static_cast<const uint8_t*>(p);
    return byte >= data_ && byte < data_ + bytes_ ? byte - data_ : -1;
  }

  Communicator& inner_;
  std::vector<TransportEvent>& log_;
  const uint8_t* data_;
  size_t bytes_;
  std::function<void()> before_test_;
};

}  // namespace concord::testing_util
