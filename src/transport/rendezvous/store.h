// The key-value store ranks rendezvous through before they can send each other a message
// (gloo's rendezvous::Store, torch's c10d::Store): each rank publishes what a peer needs to
// reach it (a UCX worker address) under a key and waits for the others' keys. Four
// operations: set, get (waiting), wait (for several keys) and add (an atomic counter, for
// claiming a rank and counting arrivals). Implementations: FileStore (one host, a shared
// directory; file_store.h), TcpStore (ZeroMQ, one rank serves; tcp_store.h); a C++ caller
// may pass its own (make_ucx_world in ucx/ucx_world.h). Every wait has a deadline: a rank
// that never arrives is an error naming the missing keys, never a hang.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace concord::rendezvous {

using Bytes = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

class Store {
 public:
  virtual ~Store() = default;

  /// Stores `value` under `key`, replacing any earlier value. Throws CommError when the
  /// store cannot be reached.
  virtual void set(const std::string& key, const Bytes& value) = 0;
  /// The value under `key`, or nothing when it is not set yet; never waits for the key.
  virtual std::optional<Bytes> try_get(const std::string& key) = 0;
  /// Adds `delta` to the integer under `key` (0 when unset) atomically across all clients;
  /// returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// Where the store is ("file:/tmp/x", "tcp:host:port"), for messages.
  virtual std::string describe() const = 0;

  /// The value under `key`, waiting until it is set. Throws CommError naming the key and
  /// the store when it is not set before `deadline`, or what `abort` returns as soon as it
  /// returns something (a peer's reported failure).
  Bytes get(const std::string& key, Clock::time_point deadline,
            const std::function<std::optional<std::string>()>& abort = {});
  /// Waits until every key of `keys` is set. Throws CommError listing the keys still
  /// missing at `deadline` (as `describe_missing(missing keys)` words them when given), or
  /// what `abort` returns.
  void wait(const std::vector<std::string>& keys, Clock::time_point deadline,
            const std::function<std::optional<std::string>()>& abort = {},
            const std::function<std::string(const std::vector<std::string>&)>& describe_missing = {});
};

/// Integer <-> store value (decimal text, as torch's store keeps counters).
Bytes to_bytes(const std::string& text);
std::string to_string(const Bytes& value);

}  // namespace concord::rendezvous
