// The response cache (Romero et al., "Accelerating
// Collective Communication in Data Parallel Training across Deep Learning Frameworks",
// NSDI 2022): every rank keeps the responses of the tensors it has already negotiated, each
// under a bit position. Every rank performs the same put/touch/erase calls in the same
// order (the responses are executed in one global order), so the caches, and with them the
// bit positions, stay identical on every rank without any extra message.
//
// A request is a HIT when the cache holds its name with the same parameters, INVALID when
// it holds the name with other parameters (shape, dtype, op, ... changed), a MISS otherwise.
// Bits: a new entry takes the lowest free bit; when the cache is full the least recently
// used entry is evicted and its bit reused. Not thread-safe (background thread only).
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "control/message.h"

namespace concord {

class ResponseCache {
 public:
  enum class State { kMiss, kHit, kInvalid };
  struct Lookup {
    State state = State::kMiss;
    uint32_t bit = 0;  ///< valid for kHit and kInvalid
  };

  /// capacity = maximum number of entries (= bits); 0 disables the cache.
  explicit ResponseCache(uint32_t capacity);
  // The index maps hold iterators into lru_: a copy would point into the original.
  ResponseCache(const ResponseCache&) = delete;
  ResponseCache& operator=(const ResponseCache&) = delete;

  uint32_t capacity() const { return capacity_; }
  size_t size() const { return lru_.size(); }

  /// Classifies `request` by its name and parameters (Request::same_parameters).
  Lookup lookup(const Request& request) const;

  /// True for the responses the cache keeps: single-tensor allreduce and allgather.
  static bool cacheable(const Response& response);

  /// Adds `response` (cacheable) negotiated for `parameters` (this rank's request) as the
  /// most recently used entry; an entry of the same name is replaced. Returns the name of
  /// the entry evicted to make room, if any. No-op when the capacity is 0.
  std::optional<std::string> put(const Response& response, const Request& parameters);

  /// The entry under `bit`. Throws InternalError if the bit is unused.
  const Response& response(uint32_t bit) const;
  const Request& parameters(uint32_t bit) const;

  /// Marks `bit` most recently used.
  void touch(uint32_t bit);
  /// Removes the entry under `bit` (no-op if unused).
  void erase(uint32_t bit);

 private:
  struct Entry {
    Response response;
    Request parameters;
    uint32_t bit;
  };
  using Iterator = std::list<Entry>::iterator;
  Iterator entry(uint32_t bit) const;

  uint32_t capacity_;
  std::list<Entry> lru_;  // front = most recently used
  std::unordered_map<std::string, Iterator> by_name_;
  std::vector<std::optional<Iterator>> by_bit_;
  std::set<uint32_t> free_bits_;
};

}  // namespace concord
