// A multi-rank transport inside one process: each rank is a thread holding an
// InProcessCommunicator of a shared InProcessWorld. Sends are rendezvous, as MPI's above
// its eager limit: a send to a receive not posted yet completes only once that receive has
// been posted and tested, and the payload is copied from the sender's buffer at that test
// (as MPI's shared memory copies when the receiver makes progress), so an algorithm that
// writes a buffer while its send is in flight gets wrong results here too. Receives match
// in MPI order (source, tag, post order). Stricter than MPI in one way: a waiting send
// completes only when its own matched receive is tested, not on any progress call. Used by the unit tests
// to run every algorithm at 1..16 ranks without mpirun. Messages above
// max_message_bytes() (unlimited unless a test sets it) travel in pieces, as over MPI.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "transport/communicator.h"
#include "transport/p2p_control.h"

namespace concord {

class InProcessWorld;

/// A send that no receive has matched yet (shared by the send's request, the receiver's
/// unexpected queue and the receive that matches it): the sender's buffer, read when the
/// matched receive is first tested; if the send's request is dropped unfinished (e.g. an
/// exception unwinds the sender), a copy made then, so the buffer may be freed.
struct InProcessWaitingSend {
  const uint8_t* payload = nullptr;
  size_t bytes = 0;
  std::vector<uint8_t> copy;
  bool sent = false;  ///< a receive has copied it
};

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessWorld> world, int rank);

  int rank() const override { return rank_; }
  int size() const override;
  RequestPtr isend(const void* data, size_t bytes, int peer, int tag) override;
  RequestPtr irecv(void* data, size_t bytes, int peer, int tag) override;
  std::vector<std::vector<uint8_t>> gather_bytes(const std::vector<uint8_t>& mine, int root) override;
  void broadcast_bytes(std::vector<uint8_t>& data, int root) override;
  void barrier() override;
  void allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) override;
  /// A rendezvous of all ranks' threads (no messages, so no counters move) that gives each
  /// color a fresh InProcessWorld; see Communicator::split. Throws CommError when not
  /// every rank arrives within InProcessWorld::kSplitTimeout (a rank failed or never
  /// called split).
  std::unique_ptr<Communicator> split(int color, int key) override;

 private:
  // One piece of a message (transport/message_split.h): delivered to a matching posted
  // receive or queued as unexpected; received from the unexpected queue or posted.
  RequestPtr send_piece(const uint8_t* data, size_t bytes, int peer, int tag);
  RequestPtr receive_piece(uint8_t* data, size_t bytes, int peer, int tag);
  // The control collectives on this communicator's point-to-point (transport/p2p_control.h).
  P2pControl control();

  std::shared_ptr<InProcessWorld> world_;
  int rank_;
};

/// The shared state of `size` in-process ranks: one mailbox per rank.
class InProcessWorld {
 public:
  /// `size` empty mailboxes. `failed` is shared with the worlds split from this one: set
  /// once a rank's thread has thrown (a fresh flag when null).
  explicit InProcessWorld(int size, std::shared_ptr<std::atomic<bool>> failed = nullptr);
  int size() const { return static_cast<int>(mailboxes_.size()); }

  /// Runs body(communicator) on `size` threads, one per rank, and joins them. Once a rank
  /// throws, the receives the others are waiting on fail with CommError (a dead rank never
  /// sends; as MPI ends the job, the other ranks do not hang); the exception thrown first
  /// is rethrown after all threads have finished.
  static void run(int size, const std::function<void(Communicator&)>& body);

  /// How long split() waits for the other ranks before giving up.
  static constexpr std::chrono::seconds kSplitTimeout{60};

 private:
  friend class InProcessCommunicator;
  // One split() call of every rank: what each passed, and, once all have arrived, the
  // world and rank each gets.
  struct SplitRound {
    std::vector<int> colors, keys;
    int arrived = 0;
    bool complete = false;
    std::vector<std::shared_ptr<InProcessWorld>> worlds;  // by rank; null for no color
    std::vector<int> new_ranks;
  };
  // Joins the current round as `rank`; returns the world and rank of its new group.
  std::pair<std::shared_ptr<InProcessWorld>, int> split(int rank, int color, int key);
  // A send no receive matched yet.
  struct Message {
    int source;
    int tag;
    std::shared_ptr<InProcessWaitingSend> send;
  };
  struct PostedReceive {
    int source;
    int tag;
    void* data;
    size_t bytes;
    std::shared_ptr<bool> done;
  };
  struct Mailbox {
    std::deque<Message> unexpected;
    std::deque<PostedReceive> posted;
  };
  std::mutex mutex_;
  std::vector<Mailbox> mailboxes_;
  std::shared_ptr<std::atomic<bool>> failed_;
  std::mutex split_mutex_;
  std::condition_variable split_done_;
  std::shared_ptr<SplitRound> split_round_;
};

}  // namespace concord
