#include "control/response_cache.h"

#include "common/enforce.h"

namespace concord {

ResponseCache::ResponseCache(uint32_t capacity) : capacity_(capacity), by_bit_(capacity) {
  for (uint32_t bit = 0; bit < capacity; ++bit) free_bits_.insert(free_bits_.end(), bit);
}

ResponseCache::Lookup ResponseCache::lookup(const Request& request) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return {};
  const Entry& found = *it->second;
  return {found.parameters.same_parameters(request) ? State::kHit : State::kInvalid, found.bit};
}

bool ResponseCache::cacheable(const Response& response) {
  return response.names.size() == 1 &&
         (response.type == ResponseType::kAllreduce || response.type == ResponseType::kAllgather);
}

std::optional<std::string> ResponseCache::put(const Response& response, const Request& parameters) {
  if (capacity_ == 0) return std::nullopt;
  CONCORD_ENFORCE(cacheable(response), InternalError,
                  "caching a response that is not a single allreduce "
                  "or allgather");
  if (auto it = by_name_.find(response.names[0]); it != by_name_.end()) erase(it->second->bit);
  std::optional<std::string> evicted;
  if (free_bits_.empty()) {
    evicted = lru_.back().response.names[0];
    erase(lru_.back().bit);
  }
  const uint32_t bit = *free_bits_.begin();
  free_bits_.erase(free_bits_.begin());
  lru_.push_front(Entry{response, parameters, bit});
  by_name_[response.names[0]] = lru_.begin();
  by_bit_[bit] = lru_.begin();
  return evicted;
}

ResponseCache::Iterator ResponseCache::entry(uint32_t bit) const {
  CONCORD_ENFORCE(bit < capacity_ && by_bit_[bit].has_value(), InternalError, "response cache bit ", bit,
                  " is not in use");
  return *by_bit_[bit];
}

const Response& ResponseCache::response(uint32_t bit) const { return entry(bit)->response; }

const Request& ResponseCache::parameters(uint32_t bit) const { return entry(bit)->parameters; }

void ResponseCache::touch(uint32_t bit) { lru_.splice(lru_.begin(), lru_, entry(bit)); }

void ResponseCache::erase(uint32_t bit) {
  if (bit >= capacity_ || !by_bit_[bit]) return;
  Iterator it = *by_bit_[bit];
  by_name_.erase(it->response.names[0]);
  lru_.erase(it);
  by_bit_[bit].reset();
  free_bits_.insert(bit);
}

}  // namespace concord
