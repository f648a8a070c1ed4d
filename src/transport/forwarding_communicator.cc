#include "transport/forwarding_communicator.h"

namespace concord {

ForwardingCommunicator::ForwardingCommunicator(Communicator& inner) : inner_(inner) {
  set_max_message_bytes(inner.max_message_bytes());
}

ForwardingCommunicator::ForwardingCommunicator(std::unique_ptr<Communicator> inner)
    : owned_(std::move(inner)), inner_(*owned_) {
  set_max_message_bytes(inner_.max_message_bytes());
}

RequestPtr ForwardingCommunicator::isend(const void* data, size_t bytes, int peer, int tag) {
  record_sent(bytes);
  return inner_.isend(data, bytes, peer, tag);
}

RequestPtr ForwardingCommunicator::irecv(void* data, size_t bytes, int peer, int tag) {
  record_received(bytes);
  return inner_.irecv(data, bytes, peer, tag);
}

std::unique_ptr<Communicator> ForwardingCommunicator::split(int color, int key) {
  std::unique_ptr<Communicator> child = inner_.split(color, key);
  if (child == nullptr) return nullptr;
  std::unique_ptr<Communicator> wrapped = wrap(std::move(child));
  adopt(*wrapped);
  return wrapped;
}

}  // namespace concord
