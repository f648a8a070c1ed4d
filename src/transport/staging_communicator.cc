#include "transport/staging_communicator.h"

#include <bit>

namespace concord {

struct StagingCommunicator::PendingSend {
  const void* source = nullptr;  // host memory to send (a bounce buffer or the caller's)
  void* bounce = nullptr;        // pinned buffer to release once sent, or null
  size_t bytes = 0;
  int peer = 0;
  int tag = 0;
  std::unique_ptr<Event> copied;  // the d2h copy into `bounce` (null: nothing to wait for)
  RequestPtr posted;              // the inner isend, once posted
  bool done = false;
};

class StagingCommunicator::SendRequest : public TransportRequest {
 public:
  SendRequest(StagingCommunicator& owner, std::shared_ptr<PendingSend> send) : owner_(owner), send_(std::move(send)) {}
  bool test() override {
    if (send_->done) return true;
    owner_.pump();
    if (!send_->posted || !send_->posted->test()) return false;
    send_->done = true;
    owner_.release(send_->bounce);
    return true;
  }

 private:
  StagingCommunicator& owner_;
  std::shared_ptr<PendingSend> send_;
};

class StagingCommunicator::ReceiveRequest : public TransportRequest {
 public:
  ReceiveRequest(StagingCommunicator& owner, void* data, size_t bytes, int peer, int tag)
      : owner_(owner), data_(data), bytes_(bytes), bounce_(owner.acquire(bytes)) {
    received_ = owner_.inner().irecv(bounce_, bytes, peer, tag);
  }
  bool test() override {
    owner_.pump();  // a rank that only waits for receives still sends what it owes
    if (copied_ == nullptr) {
      if (!received_->test()) return false;
      copied_ = owner_.device_.create_event();
      owner_.up_->copy(data_, bounce_, bytes_, CopyKind::kHostToDevice);
      owner_.up_->record(*copied_);
    }
    if (done_) return true;
    if (!copied_->query()) return false;
    done_ = true;
    owner_.release(bounce_);
    owner_.record_received(bytes_);
    return true;
  }

 private:
  StagingCommunicator& owner_;
  void* data_;
  size_t bytes_;
  void* bounce_;
  RequestPtr received_;
  std::unique_ptr<Event> copied_;
  bool done_ = false;
};

StagingCommunicator::StagingCommunicator(Communicator& inner, Device& device)
    : ForwardingCommunicator(inner), device_(device), down_(device.create_stream()), up_(device.create_stream()) {}

StagingCommunicator::StagingCommunicator(std::unique_ptr<Communicator> inner, Device& device)
    : ForwardingCommunicator(std::move(inner)),
      device_(device),
      down_(device.create_stream()),
      up_(device.create_stream()) {}

StagingCommunicator::~StagingCommunicator() {
  try {
    down_->synchronize();
    up_->synchronize();
  } catch (...) {
  }
  for (const auto& [data, bytes] : sizes_) device_.free_host(data);
}

RequestPtr StagingCommunicator::isend(const void* data, size_t bytes, int peer, int tag) {
  auto send = std::make_shared<PendingSend>();
  send->bytes = bytes;
  send->peer = peer;
  send->tag = tag;
  send->source = data;
  if (bytes > 0 && device_.is_device_pointer(data)) {
    send->bounce = acquire(bytes);
    send->source = send->bounce;
    send->copied = device_.create_event();
    down_->copy(send->bounce, data, bytes, CopyKind::kDeviceToHost);
    down_->record(*send->copied);
  }
  queue_.push_back(send);
  pump();
  return std::make_unique<SendRequest>(*this, std::move(send));
}

RequestPtr StagingCommunicator::irecv(void* data, size_t bytes, int peer, int tag) {
  pump();
  if (bytes == 0 || !device_.is_device_pointer(data)) return ForwardingCommunicator::irecv(data, bytes, peer, tag);
  return std::make_unique<ReceiveRequest>(*this, data, bytes, peer, tag);
}

void StagingCommunicator::pump() {
  while (!queue_.empty()) {
    PendingSend& head = *queue_.front();
    if (head.copied != nullptr && !head.copied->query()) return;
    head.posted = inner().isend(head.source, head.bytes, head.peer, head.tag);
    record_sent(head.bytes);
    queue_.pop_front();
  }
}

std::unique_ptr<Communicator> StagingCommunicator::wrap(std::unique_ptr<Communicator> child) {
  return std::make_unique<StagingCommunicator>(std::move(child), device_);
}

DevicePointerSupport StagingCommunicator::device_pointer_support() const {
  return {true, "staged through pinned host memory by Concord (" + device_.name() + ")"};
}

void* StagingCommunicator::acquire(size_t bytes) {
  const size_t size = std::bit_ceil(std::max<size_t>(bytes, 64));
  const auto it = free_.find(size);
  if (it != free_.end()) {
    void* data = it->second;
    free_.erase(it);
    return data;
  }
  void* data = device_.allocate_host(size);
  sizes_.emplace(data, size);
  return data;
}

void StagingCommunicator::release(void* data) {
  if (data == nullptr) return;
  free_.emplace(sizes_.at(data), data);
}

}  // namespace concord
