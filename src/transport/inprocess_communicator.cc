#include "transport/inprocess_communicator.h"

#include <cstring>
#include <exception>
#include <thread>

#include "common/enforce.h"

namespace concord {
namespace {

// Tags at and above this value are reserved for the control collectives below.
constexpr int kControlTag = 1 << 29;

class FlagRequest : public TransportRequest {
 public:
  FlagRequest(std::shared_ptr<bool> done, std::mutex& mutex) : done_(std::move(done)), mutex_(mutex) {}
  bool test() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return *done_;
  }

 private:
  std::shared_ptr<bool> done_;
  std::mutex& mutex_;
};

class DoneRequest : public TransportRequest {
 public:
  bool test() override { return true; }
};

void deliver(void* destination, size_t expected, const void* payload, size_t bytes, int source,
             int tag) {
  CONCORD_ENFORCE(expected == bytes, CommError, "in-process receive of ", expected,
                  " bytes matched a message of ", bytes, " bytes from rank ", source, " tag ", tag);
  if (bytes > 0) std::memcpy(destination, payload, bytes);
}

}  // namespace

InProcessWorld::InProcessWorld(int size) : mailboxes_(size) {}

void InProcessWorld::run(int size, const std::function<void(Communicator&)>& body) {
  auto world = std::make_shared<InProcessWorld>(size);
  std::vector<std::exception_ptr> errors(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        InProcessCommunicator comm(world, r);
        body(comm);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (auto& error : errors)
    if (error) std::rethrow_exception(error);
}

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<InProcessWorld> world, int rank)
    : world_(std::move(world)), rank_(rank) {}

int InProcessCommunicator::size() const { return world_->size(); }

RequestPtr InProcessCommunicator::isend(const void* data, size_t bytes, int peer, int tag) {
  CONCORD_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "send to rank ", peer,
                  " outside [0, ", size(), ")");
  counters_.bytes_sent += bytes;
  counters_.messages_sent += 1;
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
  const auto* p = static_cast<const uint8_t*>(data);
  box.unexpected.push_back({rank_, tag, std::vector<uint8_t>(p, p + bytes)});
  return std::make_unique<DoneRequest>();
}

RequestPtr InProcessCommunicator::irecv(void* data, size_t bytes, int peer, int tag) {
  CONCORD_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "receive from rank ", peer,
                  " outside [0, ", size(), ")");
  counters_.bytes_received += bytes;
  counters_.messages_received += 1;
  auto done = std::make_shared<bool>(false);
  std::lock_guard<std::mutex> lock(world_->mutex_);
  auto& box = world_->mailboxes_[rank_];
  for (auto it = box.unexpected.begin(); it != box.unexpected.end(); ++it) {
    if (it->source == peer && it->tag == tag) {
      deliver(data, bytes, it->payload.data(), it->payload.size(), peer, tag);
      box.unexpected.erase(it);
      return std::make_unique<DoneRequest>();
    }
  }
  box.posted.push_back({peer, tag, data, bytes, done});
  return std::make_unique<FlagRequest>(done, world_->mutex_);
}

std::vector<std::vector<uint8_t>> InProcessCommunicator::gather_bytes(
    const std::vector<uint8_t>& mine, int root) {
  std::vector<std::vector<uint8_t>> result;
  if (rank_ != root) {
    uint64_t length = mine.size();
    std::vector<RequestPtr> requests;
    requests.push_back(isend(&length, sizeof length, root, kControlTag));
    requests.push_back(isend(mine.data(), mine.size(), root, kControlTag));
    wait_all(requests);
    return result;
  }
  result.resize(size());
  for (int r = 0; r < size(); ++r) {
    if (r == root) {
      result[r] = mine;
      continue;
    }
    uint64_t length = 0;
    std::vector<RequestPtr> requests;
    requests.push_back(irecv(&length, sizeof length, r, kControlTag));
    wait_all(requests);
    result[r].resize(length);
    requests.push_back(irecv(result[r].data(), length, r, kControlTag));
    wait_all(requests);
  }
  return result;
}

void InProcessCommunicator::broadcast_bytes(std::vector<uint8_t>& data, int root) {
  std::vector<RequestPtr> requests;
  if (rank_ == root) {
    uint64_t length = data.size();
    for (int r = 0; r < size(); ++r) {
      if (r == root) continue;
      requests.push_back(isend(&length, sizeof length, r, kControlTag + 1));
      requests.push_back(isend(data.data(), data.size(), r, kControlTag + 1));
    }
    wait_all(requests);
    return;
  }
  uint64_t length = 0;
  requests.push_back(irecv(&length, sizeof length, root, kControlTag + 1));
  wait_all(requests);
  data.resize(length);
  requests.push_back(irecv(data.data(), length, root, kControlTag + 1));
  wait_all(requests);
}

void InProcessCommunicator::allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) {
  std::vector<uint8_t> bytes(words.size() * sizeof(uint64_t));
  std::memcpy(bytes.data(), words.data(), bytes.size());
  const auto all = gather_bytes(bytes, 0);
  if (rank_ == 0) {
    for (const auto& other : all) {
      CONCORD_ENFORCE(other.size() == bytes.size(), CommError, "bit vectors of ", other.size(), " and ",
                      bytes.size(), " bytes");
      for (size_t w = 0; w < words.size(); ++w) {
        uint64_t value;
        std::memcpy(&value, other.data() + w * sizeof(uint64_t), sizeof value);
        words[w] = bitwise_and ? (words[w] & value) : (words[w] | value);
      }
    }
    std::memcpy(bytes.data(), words.data(), bytes.size());
  }
  broadcast_bytes(bytes, 0);
  std::memcpy(words.data(), bytes.data(), bytes.size());
}

void InProcessCommunicator::barrier() {
  std::vector<uint8_t> nothing;
  gather_bytes(nothing, 0);
  broadcast_bytes(nothing, 0);
}

}  // namespace concord
