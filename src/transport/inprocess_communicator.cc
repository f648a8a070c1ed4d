#include "transport/inprocess_communicator.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <numeric>
#include <thread>

#include "common/enforce.h"
#include "transport/message_split.h"
#include "transport/p2p_control.h"
#include "transport/request_set.h"
#include "transport/tags.h"

namespace concord {
namespace {

// Tags at and above this value are reserved for the control collectives below.
constexpr int kControlTag = tags::kInProcessControl;

// A posted receive: done when a send matched it. Throws CommError once a rank of the run
// has failed and the message has not arrived (it may never).
class FlagRequest : public TransportRequest {
 public:
  FlagRequest(std::shared_ptr<bool> done, std::mutex& mutex, std::shared_ptr<std::atomic<bool>> failed, int source,
              int tag)
      : done_(std::move(done)), mutex_(mutex), failed_(std::move(failed)), source_(source), tag_(tag) {}
  bool test() override {
    std::lock_guard<std::mutex> lock(mutex_);
    CONCORD_ENFORCE(*done_ || !*failed_, CommError, "in-process receive from rank ", source_, " (tag ", tag_,
                    ") abandoned: a rank of this in-process world failed");
    return *done_;
  }

 private:
  std::shared_ptr<bool> done_;
  std::mutex& mutex_;
  std::shared_ptr<std::atomic<bool>> failed_;
  int source_;
  int tag_;
};

void deliver(void* destination, size_t expected, const void* payload, size_t bytes, int source, int tag) {
  CONCORD_ENFORCE(expected == bytes, CommError, "in-process receive of ", expected, " bytes matched a message of ",
                  bytes, " bytes from rank ", source, " tag ", tag);
  if (bytes > 0) std::memcpy(destination, payload, bytes);
}

// A receive matched to a waiting send when it was posted: the payload is copied when the
// receiver first tests it (as MPI's shared memory copies a rendezvous message when the
// receiver makes progress), and the send completes then.
class MatchedReceive : public TransportRequest {
 public:
  MatchedReceive(uint8_t* data, size_t bytes, std::shared_ptr<InProcessWaitingSend> send, std::mutex& mutex,
                 std::shared_ptr<void> world, int source, int tag)
      : data_(data),
        bytes_(bytes),
        send_(std::move(send)),
        mutex_(mutex),
        world_(std::move(world)),
        source_(source),
        tag_(tag) {}
  bool test() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!send_->sent) {
      deliver(data_, bytes_, send_->payload, send_->bytes, source_, tag_);
      send_->sent = true;
    }
    return true;
  }

 private:
  uint8_t* data_;
  size_t bytes_;
  std::shared_ptr<InProcessWaitingSend> send_;
  std::mutex& mutex_;
  std::shared_ptr<void> world_;  // keeps mutex_ alive
  int source_;
  int tag_;
};

// The request of a send that waits for its receive: done once a receive has copied it.
// Dropped unfinished, it leaves a copy of the payload behind (InProcessWaitingSend).
class WaitingSendRequest : public TransportRequest {
 public:
  WaitingSendRequest(std::shared_ptr<InProcessWaitingSend> send, std::mutex& mutex,
                     std::shared_ptr<std::atomic<bool>> failed, std::shared_ptr<void> world, int peer, int tag)
      : send_(std::move(send)),
        mutex_(mutex),
        failed_(std::move(failed)),
        world_(std::move(world)),
        peer_(peer),
        tag_(tag) {}
  ~WaitingSendRequest() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (send_->sent || send_->payload == send_->copy.data()) return;
    send_->copy.assign(send_->payload, send_->payload + send_->bytes);
    send_->payload = send_->copy.data();
  }
  bool test() override {
    std::lock_guard<std::mutex> lock(mutex_);
    CONCORD_ENFORCE(send_->sent || !*failed_, CommError, "in-process send to rank ", peer_, " (tag ", tag_,
                    ") abandoned: a rank of this in-process world failed");
    return send_->sent;
  }

 private:
  std::shared_ptr<InProcessWaitingSend> send_;
  std::mutex& mutex_;
  std::shared_ptr<std::atomic<bool>> failed_;
  std::shared_ptr<void> world_;  // keeps mutex_ alive
  int peer_;
  int tag_;
};

class DoneRequest : public TransportRequest {
 public:
  bool test() override { return true; }
};

}  // namespace

InProcessWorld::InProcessWorld(int size, std::shared_ptr<std::atomic<bool>> failed)
    : mailboxes_(size), failed_(failed ? std::move(failed) : std::make_shared<std::atomic<bool>>(false)) {}

void InProcessWorld::run(int size, const std::function<void(Communicator&)>& body) {
  auto world = std::make_shared<InProcessWorld>(size);
  std::mutex errors_mutex;
  std::vector<std::exception_ptr> errors;  // in the order they were thrown
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        InProcessCommunicator comm(world, r);
        body(comm);
      } catch (...) {
        std::lock_guard<std::mutex> lock(errors_mutex);
        errors.push_back(std::current_exception());
        *world->failed_ = true;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  if (!errors.empty()) std::rethrow_exception(errors.front());
}

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<InProcessWorld> world, int rank)
    : world_(std::move(world)), rank_(rank) {}

int InProcessCommunicator::size() const { return world_->size(); }

RequestPtr InProcessCommunicator::isend(const void* data, size_t bytes, int peer, int tag) {
  CONCORD_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "send to rank ", peer, " outside [0, ", size(), ")");
  record_sent(bytes);
  const auto* p = static_cast<const uint8_t*>(data);
  return post_in_pieces(bytes, max_message_bytes(),
                        [&](size_t offset, size_t n) { return send_piece(p + offset, n, peer, tag); });
}

RequestPtr InProcessCommunicator::irecv(void* data, size_t bytes, int peer, int tag) {
  CONCORD_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "receive from rank ", peer, " outside [0, ", size(),
                  ")");
  record_received(bytes);
  auto* p = static_cast<uint8_t*>(data);
  return post_in_pieces(bytes, max_message_bytes(),
                        [&](size_t offset, size_t n) { return receive_piece(p + offset, n, peer, tag); });
}

RequestPtr InProcessCommunicator::send_piece(const uint8_t* data, size_t bytes, int peer, int tag) {
  std::lock_guard<std::mutex> lock(world_->mutex_);
  auto& box = world_->mailboxes_[peer];
  for (auto it = box.posted.begin(); it != box.posted.end(); ++it) {
    if (it->source == rank_ && it->tag == tag) {
      deliver(it->data, it->bytes, data, bytes, rank_, tag);
      *it->done = true;
      box.posted.erase(it);
      return std::make_unique<DoneRequest>();
    }
  }
  auto send = std::make_shared<InProcessWaitingSend>();
  send->payload = data;
  send->bytes = bytes;
  box.unexpected.push_back({rank_, tag, send});
  return std::make_unique<WaitingSendRequest>(send, world_->mutex_, world_->failed_, world_, peer, tag);
}

RequestPtr InProcessCommunicator::receive_piece(uint8_t* data, size_t bytes, int peer, int tag) {
  auto done = std::make_shared<bool>(false);
  std::lock_guard<std::mutex> lock(world_->mutex_);
  auto& box = world_->mailboxes_[rank_];
  for (auto it = box.unexpected.begin(); it != box.unexpected.end(); ++it) {
    if (it->source == peer && it->tag == tag) {
      auto matched = std::make_unique<MatchedReceive>(data, bytes, it->send, world_->mutex_, world_, peer, tag);
      box.unexpected.erase(it);
      return matched;
    }
  }
  box.posted.push_back({peer, tag, data, bytes, done});
  return std::make_unique<FlagRequest>(done, world_->mutex_, world_->failed_, peer, tag);
}

std::vector<std::vector<uint8_t>> InProcessCommunicator::gather_bytes(const std::vector<uint8_t>& mine, int root) {
  return control().gather_bytes(mine, root);
}

void InProcessCommunicator::broadcast_bytes(std::vector<uint8_t>& data, int root) {
  control().broadcast_bytes(data, root);
}

void InProcessCommunicator::allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) {
  control().allreduce_bits(words, bitwise_and);
}

void InProcessCommunicator::barrier() { control().barrier(); }

P2pControl InProcessCommunicator::control() {
  return P2pControl{*this, kControlTag, [](RequestSet& requests) { requests.wait(); }};
}

std::pair<std::shared_ptr<InProcessWorld>, int> InProcessWorld::split(int rank, int color, int key) {
  std::unique_lock<std::mutex> lock(split_mutex_);
  if (!split_round_) {
    split_round_ = std::make_shared<SplitRound>();
    split_round_->colors.assign(size(), -1);
    split_round_->keys.assign(size(), 0);
  }
  std::shared_ptr<SplitRound> round = split_round_;
  round->colors[rank] = color;
  round->keys[rank] = key;
  if (++round->arrived == size()) {
    // Last to arrive: form the groups, ordered by (key, rank), and open the next round.
    std::vector<int> order(size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return round->keys[a] < round->keys[b]; });
    round->worlds.assign(size(), nullptr);
    round->new_ranks.assign(size(), -1);
    std::vector<bool> placed(size(), false);
    for (int first : order) {
      if (placed[first] || round->colors[first] < 0) continue;
      std::vector<int> members;
      for (int r : order)
        if (round->colors[r] == round->colors[first]) members.push_back(r);
      auto world = std::make_shared<InProcessWorld>(static_cast<int>(members.size()), failed_);
      for (size_t i = 0; i < members.size(); ++i) {
        round->worlds[members[i]] = world;
        round->new_ranks[members[i]] = static_cast<int>(i);
        placed[members[i]] = true;
      }
    }
    round->complete = true;
    split_round_.reset();
    split_done_.notify_all();
  } else {
    const auto deadline = std::chrono::steady_clock::now() + kSplitTimeout;
    while (!round->complete && !*failed_ && std::chrono::steady_clock::now() < deadline)
      split_done_.wait_for(lock, std::chrono::milliseconds(20));  // also notices a failed rank
    CONCORD_ENFORCE(round->complete, CommError, "in-process split: rank ", rank, " gave up with only ", round->arrived,
                    " of ", size(), " ranks arrived (",
                    *failed_ ? "a rank failed" : "waited " + std::to_string(kSplitTimeout.count()) + " s", ")");
  }
  return {round->worlds[rank], round->new_ranks[rank]};
}

std::unique_ptr<Communicator> InProcessCommunicator::split(int color, int key) {
  auto [world, rank] = world_->split(rank_, color, key);
  if (!world) return nullptr;
  auto result = std::make_unique<InProcessCommunicator>(std::move(world), rank);
  adopt(*result);
  return result;
}

}  // namespace concord
