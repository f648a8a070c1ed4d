// A rendezvous store over TCP for ranks on several hosts (torchrun's MASTER_ADDR and
// MASTER_PORT, Slurm), on ZeroMQ (libzmq: framing, reconnection and timeouts are
// its, not hand-written socket code). One process serves it (TcpStoreServer, by
// convention rank 0's); every rank is a client (TcpStore). A request is one multipart
// message [request id][op S|G|A][key][value], answered by [request id][status][value];
// the id lets a client drop a late answer to a request it gave up on.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "transport/rendezvous/store.h"

namespace concord::rendezvous {

/// Serves a store on `port` of every interface from a thread of its own until destroyed.
class TcpStoreServer {
 public:
  /// Throws CommError when the port cannot be bound (in use: another job, or torchrun's
  /// own store when CONCORD_STORE names MASTER_PORT itself). Port 0: one the system picks
  /// (port() says which).
  explicit TcpStoreServer(int port);
  /// The port it serves on.
  int port() const { return port_; }
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

 private:
  void serve();

  void* context_ = nullptr;
  void* socket_ = nullptr;
  int port_ = 0;
  std::map<std::string, Bytes> values_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// A client of a TcpStoreServer at host:port.
class TcpStore : public Store {
 public:
  /// Connects (lazily: ZeroMQ retries in the background). A request that gets no answer
  /// within `request_timeout` throws CommError saying the store is unreachable.
  TcpStore(std::string host, int port, std::chrono::milliseconds request_timeout);
  ~TcpStore() override;

  void set(const std::string& key, const Bytes& value) override;
  std::optional<Bytes> try_get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string describe() const override { return "tcp:" + host_ + ":" + std::to_string(port_); }

 private:
  // Sends one request and returns (status, value) of its answer.
  std::pair<char, Bytes> request(char op, const std::string& key, const Bytes& value);

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  void* context_ = nullptr;
  void* socket_ = nullptr;
  uint64_t next_id_ = 1;
};

}  // namespace concord::rendezvous
