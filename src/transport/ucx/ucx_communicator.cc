#include "transport/ucx/ucx_communicator.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <thread>

#include "common/enforce.h"
#include "transport/request_set.h"
#include "transport/tags.h"

namespace concord {
namespace {

constexpr uint64_t kFullMask = ~uint64_t{0};
constexpr uint64_t kSourceBits = uint64_t{0xFFFFF} << 32;  // see ucx_tag()
// How long one blocking wait sleeps on the event fd before progressing again: UCX's
// keepalive runs only inside progress calls.
constexpr std::chrono::milliseconds kEventWait{100};
// How long a blocking wait polls (each poll progressing the worker, then yielding the core)
// before it arms the event fd and sleeps: a control-plane answer usually comes within
// microseconds, and arming plus a wakeup through poll(2) costs more than that (a 4-byte
// hvd.allreduce at 2 ranks took 40 us sleeping at once, 29 us polling); a rank that waits
// longer than this sleeps, so an idle job does not hold a core.
constexpr std::chrono::milliseconds kPollBeforeSleeping{1};

// An isend or irecv in flight (null `request_` once complete or when UCX completed it at once).
class UcxRequest : public TransportRequest {
 public:
  // A receive from any source has peer -1 and reports the sender through `source`.
  UcxRequest(std::shared_ptr<UcxWorker> worker, void* request, bool receive, size_t bytes, int peer, int world_peer,
             int tag, int* source = nullptr)
      : worker_(std::move(worker)),
        request_(request),
        receive_(receive),
        bytes_(bytes),
        peer_(peer),
        world_peer_(world_peer),
        tag_(tag),
        source_(source),
        next_liveness_check_(std::chrono::steady_clock::now() + kLivenessInterval) {}

  ~UcxRequest() override {
    if (!request_) return;
    std::lock_guard<std::mutex> lock(worker_->mutex());
    // Abandoned (an exception unwound its owner): a receive must not write into a buffer
    // that is about to be freed; UCX releases the request once it completes.
    if (receive_) ucp_request_cancel(worker_->handle(), request_);
    ucp_request_free(request_);
  }

  bool test() override {
    if (!request_) return true;
    ucs_status_t status;
    ucp_tag_recv_info_t info{};
    {
      std::lock_guard<std::mutex> lock(worker_->mutex());
      ucp_worker_progress(worker_->handle());
      if (receive_) status = ucp_tag_recv_request_test(request_, &info);
      else status = ucp_request_check_status(request_);
      if (status == UCS_INPROGRESS) {
        check_peer_alive();
        return false;
      }
      ucp_request_free(request_);
      request_ = nullptr;
    }
    finish(status, info);
    return true;
  }

 private:
  // Checks a completed operation (its status, and a receive's length) and reports the sender.
  void finish(ucs_status_t status, const ucp_tag_recv_info_t& info) {
    const int sender = source_ ? static_cast<int>((info.sender_tag & kSourceBits) >> 32) : peer_;
    const std::string from = sender >= 0 ? "rank " + std::to_string(sender) : std::string("any rank");
    CONCORD_ENFORCE(!receive_ || status != UCS_ERR_MESSAGE_TRUNCATED, CommError, "UCX receive of ", bytes_,
                    " bytes from ", from, " (tag ", tag_, ") matched a longer message");
    CONCORD_ENFORCE(status == UCS_OK, CommError, "UCX ", receive_ ? "receive from " : "send to ", from, " (tag ", tag_,
                    ", ", bytes_, " bytes) failed: ", ucs_status_string(status));
    CONCORD_ENFORCE(!receive_ || info.length == bytes_, CommError, "UCX receive of ", bytes_, " bytes from ", from,
                    " (tag ", tag_, ") matched a message of ", info.length, " bytes");
    if (source_) *source_ = sender;
  }

  // Throws CommError naming the peer when its process on this host has exited or the
  // world was aborted (checked at most every kLivenessInterval; UcxWorker::peer_gone).
  // Called with the worker locked.
  void check_peer_alive() {
    const auto now = std::chrono::steady_clock::now();
    if (now < next_liveness_check_) return;
    next_liveness_check_ = now + kLivenessInterval;
    const std::string gone = worker_->peer_gone(world_peer_);
    if (gone.empty()) return;
    if (receive_) ucp_request_cancel(worker_->handle(), request_);
    ucp_request_free(request_);  // UCX releases it once cancelled or completed
    request_ = nullptr;
    CONCORD_THROW(CommError, "UCX ", receive_ ? "receive from" : "send to", " rank ", peer_, " (tag ", tag_, ", ",
                  bytes_, " bytes) cannot complete: ", gone);
  }

  std::shared_ptr<UcxWorker> worker_;
  void* request_;
  bool receive_;
  size_t bytes_;
  int peer_;
  int world_peer_;
  int tag_;
  int* source_;
  std::chrono::steady_clock::time_point next_liveness_check_;
};

// The groups of a split, encoded by rank 0: [id, then per rank: color, key].
std::vector<int64_t> decode(const std::vector<uint8_t>& bytes) {
  std::vector<int64_t> values(bytes.size() / sizeof(int64_t));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(int64_t));
  return values;
}

std::vector<uint8_t> encode(const std::vector<int64_t>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

}  // namespace

uint64_t ucx_tag(uint32_t id, int source, int tag) {
  return (static_cast<uint64_t>(id) << 52) | (static_cast<uint64_t>(static_cast<uint32_t>(source) & 0xFFFFF) << 32) |
         static_cast<uint32_t>(tag);
}

UcxCommunicator::UcxCommunicator(std::shared_ptr<UcxWorker> worker, uint32_t id, std::vector<int> members, int rank)
    : worker_(std::move(worker)), id_(id), members_(std::move(members)), rank_(rank) {
  CONCORD_ENFORCE(members_.size() <= (1u << 20), InvalidArgument, "UCX transport: ", members_.size(),
                  " ranks exceed the 2^20 the tag layout holds");
}

RequestPtr UcxCommunicator::isend(const void* data, size_t bytes, int peer, int tag) {
  CONCORD_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "UCX isend to rank ", peer, " of ", size());
  ucp_request_param_t param{};
  void* request;
  {
    std::lock_guard<std::mutex> lock(worker_->mutex());
    request = ucp_tag_send_nbx(worker_->endpoint(members_[peer]), data, bytes, ucx_tag(id_, rank_, tag), &param);
  }
  CONCORD_ENFORCE(!UCS_PTR_IS_ERR(request), CommError, "UCX send to rank ", peer, " (tag ", tag, ", ", bytes,
                  " bytes) failed: ", ucs_status_string(UCS_PTR_STATUS(request)));
  record_sent(bytes);
  return std::make_unique<UcxRequest>(worker_, request, false, bytes, peer, members_[peer], tag);
}

RequestPtr UcxCommunicator::irecv(void* data, size_t bytes, int peer, int tag) {
  CONCORD_ENFORCE(peer >= 0 && peer < size(), InvalidArgument, "UCX irecv from rank ", peer, " of ", size());
  return post_receive(data, bytes, peer, tag, nullptr);
}

RequestPtr UcxCommunicator::irecv_any_source(void* data, size_t bytes, int tag, int* source) {
  return post_receive(data, bytes, -1, tag, source);
}

RequestPtr UcxCommunicator::post_receive(void* data, size_t bytes, int peer, int tag, int* source) {
  ucp_request_param_t param{};
  // A request even when the message is already here: its test() reads the sender and
  // checks the length (UCX 1.13 leaves the immediate-completion info of a tag receive
  // unfilled: an any-source receive reported no sender).
  param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  const uint64_t mask = peer < 0 ? kFullMask & ~kSourceBits : kFullMask;
  void* request;
  {
    std::lock_guard<std::mutex> lock(worker_->mutex());
    request = ucp_tag_recv_nbx(worker_->handle(), data, bytes, ucx_tag(id_, peer < 0 ? 0 : peer, tag), mask, &param);
  }
  const std::string from = peer >= 0 ? "rank " + std::to_string(peer) : std::string("any rank");
  CONCORD_ENFORCE(UCS_PTR_STATUS(request) != UCS_ERR_MESSAGE_TRUNCATED, CommError, "UCX receive of ", bytes,
                  " bytes from ", from, " (tag ", tag, ") matched a longer message");
  CONCORD_ENFORCE(!UCS_PTR_IS_ERR(request), CommError, "UCX receive from ", from, " (tag ", tag, ", ", bytes,
                  " bytes) failed: ", ucs_status_string(UCS_PTR_STATUS(request)));
  record_received(bytes);
  return std::make_unique<UcxRequest>(worker_, request, true, bytes, peer, peer < 0 ? -1 : members_[peer], tag, source);
}

P2pControl UcxCommunicator::control() {
  return P2pControl{*this, tags::kInProcessControl, [worker = worker_.get()](RequestSet& requests) {
                      const auto sleep_after = std::chrono::steady_clock::now() + kPollBeforeSleeping;
                      while (!requests.reap()) {
                        if (std::chrono::steady_clock::now() < sleep_after) std::this_thread::yield();
                        else worker->wait_for_event(kEventWait);
                      }
                    }};
}

std::vector<std::vector<uint8_t>> UcxCommunicator::gather_bytes(const std::vector<uint8_t>& mine, int root) {
  return control().gather_bytes(mine, root);
}

void UcxCommunicator::broadcast_bytes(std::vector<uint8_t>& data, int root) { control().broadcast_bytes(data, root); }

void UcxCommunicator::barrier() { control().barrier(); }

void UcxCommunicator::allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) {
  control().allreduce_bits(words, bitwise_and);
}

std::unique_ptr<Communicator> UcxCommunicator::split(int color, int key) {
  const std::vector<int64_t> mine = {color, key, worker_->next_communicator_id()};
  const auto all = gather_bytes(encode(mine), 0);
  std::vector<uint8_t> plan;
  if (rank_ == 0) {
    int64_t id = 0;
    std::vector<int64_t> groups = {0};
    for (const auto& entry : all) {
      const auto values = decode(entry);
      id = std::max(id, values.at(2));
      groups.push_back(values.at(0));
      groups.push_back(values.at(1));
    }
    groups[0] = id;
    plan = encode(groups);
  }
  broadcast_bytes(plan, 0);
  const auto groups = decode(plan);
  const auto id = worker_->reserve_communicator_id(static_cast<uint32_t>(groups.at(0)));
  if (color < 0) return nullptr;
  std::vector<int> order;  // ranks of this communicator in my group, by (key, rank)
  for (int r = 0; r < size(); ++r)
    if (groups.at(1 + 2 * r) == color) order.push_back(r);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return groups.at(2 + 2 * a) < groups.at(2 + 2 * b); });
  std::vector<int> members;
  for (int r : order) members.push_back(members_[r]);
  const int new_rank = static_cast<int>(std::find(order.begin(), order.end(), rank_) - order.begin());
  auto child = std::make_unique<UcxCommunicator>(worker_, id, std::move(members), new_rank);
  adopt(*child);
  return child;
}

}  // namespace concord
