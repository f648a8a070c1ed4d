#include "transport/communicator.h"

#include <atomic>

namespace concord {

void Communicator::record(uint64_t TrafficCounters::*bytes_field, uint64_t TrafficCounters::*messages_field,
                          uint64_t bytes, uint64_t messages) {
  // Atomic: communicators split from one parent may be used from different threads (e.g.
  // the KVStore's per-communicator collectives) and all credit the parent's counters.
  auto add = [](uint64_t& field, uint64_t value) {
    std::atomic_ref<uint64_t>(field).fetch_add(value, std::memory_order_relaxed);
  };
  add((*counters_).*bytes_field, bytes);
  add((*counters_).*messages_field, messages);
  for (auto& ancestor : ancestors_) {
    add((*ancestor).*bytes_field, bytes);
    add((*ancestor).*messages_field, messages);
  }
}

void Communicator::record_sent(uint64_t bytes, uint64_t messages) {
  record(&TrafficCounters::bytes_sent, &TrafficCounters::messages_sent, bytes, messages);
}

void Communicator::record_received(uint64_t bytes, uint64_t messages) {
  record(&TrafficCounters::bytes_received, &TrafficCounters::messages_received, bytes, messages);
}

void Communicator::adopt(Communicator& child) const {
  child.ancestors_ = ancestors_;
  child.ancestors_.push_back(counters_);
  child.max_message_bytes_ = max_message_bytes_;
}

}  // namespace concord
