#include "transport/direct_communicator.h"

#include "common/backoff.h"
#include "common/enforce.h"

namespace concord {

class DirectCommunicator::SendRequest : public TransportRequest {
 public:
  SendRequest(RequestPtr descriptor, std::shared_ptr<Descriptor> payload, std::shared_ptr<std::atomic<bool>> done)
      : descriptor_(std::move(descriptor)), payload_(std::move(payload)), done_(std::move(done)) {}
  bool test() override { return reap_descriptor() && done_->load(std::memory_order_acquire); }

 private:
  bool reap_descriptor() {
    if (descriptor_ && descriptor_->test()) descriptor_.reset();
    return !descriptor_;
  }
  RequestPtr descriptor_;
  std::shared_ptr<Descriptor> payload_;  // the bytes the inner isend reads
  std::shared_ptr<std::atomic<bool>> done_;
};

class DirectCommunicator::ReceiveRequest : public TransportRequest {
 public:
  ReceiveRequest(DirectCommunicator& owner, void* data, size_t bytes, int peer, int tag)
      : owner_(owner), data_(data), bytes_(bytes), peer_(peer) {
    received_ = owner_.inner().irecv(&descriptor_, sizeof descriptor_, peer, tag);
  }
  bool test() override {
    if (done_) return true;
    if (copied_ == nullptr) {
      if (!received_->test()) return false;
      CONCORD_ENFORCE(descriptor_.bytes == bytes_, CommError, "device-direct receive from rank ", peer_, ": ",
                      descriptor_.bytes, " bytes sent, ", bytes_, " expected");
      copied_ = owner_.device_.create_event();
      owner_.stream_->copy(data_, reinterpret_cast<const void*>(descriptor_.address), bytes_,
                           CopyKind::kDeviceToDevice);
      owner_.stream_->record(*copied_);
    }
    if (!copied_->query()) return false;
    reinterpret_cast<std::atomic<bool>*>(descriptor_.flag)->store(true, std::memory_order_release);
    owner_.record_received(bytes_);
    done_ = true;
    return true;
  }

 private:
  DirectCommunicator& owner_;
  void* data_;
  size_t bytes_;
  int peer_;
  Descriptor descriptor_;
  RequestPtr received_;
  std::unique_ptr<Event> copied_;
  bool done_ = false;
};

DirectCommunicator::DirectCommunicator(Communicator& inner, Device& device)
    : ForwardingCommunicator(inner), device_(device), stream_(device.create_stream()) {}

DirectCommunicator::DirectCommunicator(std::unique_ptr<Communicator> inner, Device& device)
    : ForwardingCommunicator(std::move(inner)), device_(device), stream_(device.create_stream()) {}

DirectCommunicator::~DirectCommunicator() {
  try {
    stream_->synchronize();
  } catch (...) {
  }
  // A peer may still be copying from a send buffer and about to set its flag.
  Backoff backoff;
  for (const auto& flag : flags_) {
    for (int i = 0; i < 1000 && !flag->load(std::memory_order_acquire); ++i) backoff.wait();
  }
}

RequestPtr DirectCommunicator::isend(const void* data, size_t bytes, int peer, int tag) {
  if (bytes == 0 || !device_.is_device_pointer(data)) return ForwardingCommunicator::isend(data, bytes, peer, tag);
  while (!flags_.empty() && flags_.front()->load(std::memory_order_acquire)) flags_.pop_front();
  auto done = std::make_shared<std::atomic<bool>>(false);
  flags_.push_back(done);
  auto payload = std::make_shared<Descriptor>();
  payload->address = reinterpret_cast<uint64_t>(data);
  payload->bytes = bytes;
  payload->flag = reinterpret_cast<uint64_t>(done.get());
  record_sent(bytes);
  RequestPtr descriptor = inner().isend(payload.get(), sizeof *payload, peer, tag);
  return std::make_unique<SendRequest>(std::move(descriptor), std::move(payload), std::move(done));
}

RequestPtr DirectCommunicator::irecv(void* data, size_t bytes, int peer, int tag) {
  if (bytes == 0 || !device_.is_device_pointer(data)) return ForwardingCommunicator::irecv(data, bytes, peer, tag);
  return std::make_unique<ReceiveRequest>(*this, data, bytes, peer, tag);
}

std::unique_ptr<Communicator> DirectCommunicator::wrap(std::unique_ptr<Communicator> child) {
  return std::make_unique<DirectCommunicator>(std::move(child), device_);
}

DevicePointerSupport DirectCommunicator::device_pointer_support() const {
  return {true, "device-to-device copies between ranks of one process (" + device_.name() + ")"};
}

}  // namespace concord
