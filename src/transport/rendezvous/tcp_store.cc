#include "transport/rendezvous/tcp_store.h"

#include <zmq.h>

#include <cstring>
#include <vector>

#include "common/enforce.h"

namespace concord::rendezvous {
namespace {

using Frames = std::vector<Bytes>;

// Sends `frames` as one multipart message; false when ZeroMQ refused (e.g. timed out).
bool send_frames(void* socket, const Frames& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const int flags = i + 1 < frames.size() ? ZMQ_SNDMORE : 0;
    if (zmq_send(socket, frames[i].data(), frames[i].size(), flags) < 0) return false;
  }
  return true;
}

// Receives one multipart message; nothing when none arrived within the socket's timeout.
std::optional<Frames> receive_frames(void* socket) {
  Frames frames;
  for (;;) {
    zmq_msg_t message;
    zmq_msg_init(&message);
    if (zmq_msg_recv(&message, socket, 0) < 0) {
      zmq_msg_close(&message);
      return std::nullopt;
    }
    const auto* data = static_cast<const uint8_t*>(zmq_msg_data(&message));
    frames.emplace_back(data, data + zmq_msg_size(&message));
    const bool more = zmq_msg_more(&message);
    zmq_msg_close(&message);
    if (!more) return frames;
  }
}

void set_option(void* socket, int option, int value) { zmq_setsockopt(socket, option, &value, sizeof value); }

}  // namespace

TcpStoreServer::TcpStoreServer(int port) : context_(zmq_ctx_new()) {
  socket_ = zmq_socket(context_, ZMQ_ROUTER);
  set_option(socket_, ZMQ_LINGER, 0);
  set_option(socket_, ZMQ_RCVTIMEO, 100);  // the serving loop checks stop_ this often
  const std::string endpoint = "tcp://*:" + (port > 0 ? std::to_string(port) : std::string("*"));
  if (zmq_bind(socket_, endpoint.c_str()) != 0) {
    const std::string why = zmq_strerror(zmq_errno());
    zmq_close(socket_);
    zmq_ctx_term(context_);
    CONCORD_THROW(CommError, "rendezvous: cannot serve the TCP store on port ", port, ": ", why,
                  " (set CONCORD_STORE=tcp:HOST:PORT to a free port)");
  }
  char bound[256] = {};
  size_t length = sizeof bound;
  zmq_getsockopt(socket_, ZMQ_LAST_ENDPOINT, bound, &length);  // "tcp://0.0.0.0:PORT"
  const std::string text(bound);
  port_ = std::stoi(text.substr(text.rfind(':') + 1));
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() {
  stop_ = true;
  thread_.join();
  zmq_close(socket_);
  zmq_ctx_term(context_);
}

void TcpStoreServer::serve() {
  while (!stop_) {
    auto frames = receive_frames(socket_);
    // [client identity][request id][op][key][value]
    if (!frames || frames->size() != 5 || (*frames)[2].size() != 1) continue;
    const char op = static_cast<char>((*frames)[2][0]);
    const std::string key = to_string((*frames)[3]);
    Bytes& argument = (*frames)[4];
    char status = 'Y';
    Bytes answer;
    if (op == 'S') {
      values_[key] = std::move(argument);
    } else if (op == 'G') {
      const auto it = values_.find(key);
      if (it == values_.end()) status = 'N';
      else answer = it->second;
    } else if (op == 'A') {
      const auto it = values_.find(key);
      const int64_t value =
          (it == values_.end() ? 0 : std::stoll(to_string(it->second))) + std::stoll(to_string(argument));
      answer = to_bytes(std::to_string(value));
      values_[key] = answer;
    } else {
      status = 'E';
    }
    send_frames(socket_, {(*frames)[0], (*frames)[1], Bytes{static_cast<uint8_t>(status)}, answer});
  }
}

TcpStore::TcpStore(std::string host, int port, std::chrono::milliseconds request_timeout)
    : host_(std::move(host)), port_(port), timeout_(request_timeout), context_(zmq_ctx_new()) {
  socket_ = zmq_socket(context_, ZMQ_DEALER);
  set_option(socket_, ZMQ_LINGER, 0);
  set_option(socket_, ZMQ_RCVTIMEO, static_cast<int>(timeout_.count()));
  set_option(socket_, ZMQ_SNDTIMEO, static_cast<int>(timeout_.count()));
  set_option(socket_, ZMQ_RECONNECT_IVL, 20);
  set_option(socket_, ZMQ_RECONNECT_IVL_MAX, 500);
  const std::string endpoint = "tcp://" + host_ + ":" + std::to_string(port_);
  CONCORD_ENFORCE(zmq_connect(socket_, endpoint.c_str()) == 0, CommError, "rendezvous: bad store address ", endpoint,
                  ": ", zmq_strerror(zmq_errno()));
}

TcpStore::~TcpStore() {
  zmq_close(socket_);
  zmq_ctx_term(context_);
}

std::pair<char, Bytes> TcpStore::request(char op, const std::string& key, const Bytes& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = next_id_++;
  Bytes id_frame(sizeof id);
  std::memcpy(id_frame.data(), &id, sizeof id);
  CONCORD_ENFORCE(send_frames(socket_, {id_frame, Bytes{static_cast<uint8_t>(op)}, to_bytes(key), value}), CommError,
                  "rendezvous: cannot send to the store at ", describe(), ": ", zmq_strerror(zmq_errno()));
  for (;;) {
    auto frames = receive_frames(socket_);
    CONCORD_ENFORCE(frames.has_value(), CommError, "rendezvous: the store at ", describe(), " did not answer within ",
                    timeout_.count(),
                    " ms (is rank 0 running, and are MASTER_ADDR/MASTER_PORT or CONCORD_STORE right?)");
    if (frames->size() == 3 && (*frames)[0] == id_frame && (*frames)[1].size() == 1)
      return {static_cast<char>((*frames)[1][0]), std::move((*frames)[2])};
    // an answer to an earlier request this client gave up on: dropped
  }
}

void TcpStore::set(const std::string& key, const Bytes& value) { request('S', key, value); }

std::optional<Bytes> TcpStore::try_get(const std::string& key) {
  auto [status, value] = request('G', key, {});
  if (status == 'N') return std::nullopt;
  return std::move(value);
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  return std::stoll(to_string(request('A', key, to_bytes(std::to_string(delta))).second));
}

}  // namespace concord::rendezvous
