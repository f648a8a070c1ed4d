// Communicator over UCX's tagged messages (UCP): one UcxWorker per process, shared by all
// communicators of a world. UCX receives match on a 64-bit tag and have no source, so the
// tag carries what MPI matches on:
//   bits 52..63  communicator id (kCommunicatorIdBits = 12), unique per process among the
//                communicators it belongs to, agreed by the members at split()
//   bits 32..51  the sender's rank in this communicator (up to 2^20 ranks)
//   bits  0..31  Concord's tag (src/transport/tags.h)
// and a receive matches all 64 bits (irecv_any_source masks bits 32..51 and reads the
// sender from the matched tag).
// UCX keeps messages of one sender and tag in order, as MPI's non-overtaking rule.
// The control collectives run on point-to-point (transport/p2p_control.h) with an
// event-driven wait. No native collectives: native() is null, so the `mpi` algorithm
// declines on this transport.
#pragma once

#include <memory>
#include <vector>

#include "transport/communicator.h"
#include "transport/p2p_control.h"
#include "transport/ucx/ucx_worker.h"

namespace concord {

/// The 64-bit UCX tag of a message of communicator `id` from `source` with `tag`.
uint64_t ucx_tag(uint32_t id, int source, int tag);

class UcxCommunicator : public Communicator, public AnySourceReceive {
 public:
  /// The communicator with id `id` over the world ranks `members` (its rank r is world
  /// rank members[r]); this process is members[rank].
  UcxCommunicator(std::shared_ptr<UcxWorker> worker, uint32_t id, std::vector<int> members, int rank);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  /// ucp_tag_send_nbx to `peer`'s endpoint. Throws CommError when UCX refuses at once;
  /// the request's test() throws CommError when the send fails later.
  RequestPtr isend(const void* data, size_t bytes, int peer, int tag) override;
  /// ucp_tag_recv_nbx of exactly `bytes` bytes from `peer` with `tag`; test() throws
  /// CommError naming the peer, tag and both sizes when the message has another length.
  RequestPtr irecv(void* data, size_t bytes, int peer, int tag) override;
  /// A receive of exactly `bytes` bytes with `tag` from whichever rank sends first (UCX
  /// matches the tag with the source bits masked); once test() returns true, `*source`
  /// holds the sender's rank in this communicator. CommError as irecv.
  RequestPtr irecv_any_source(void* data, size_t bytes, int tag, int* source) override;
  AnySourceReceive* any_source() override { return this; }
  std::vector<std::vector<uint8_t>> gather_bytes(const std::vector<uint8_t>& mine, int root) override;
  void broadcast_bytes(std::vector<uint8_t>& data, int root) override;
  void barrier() override;
  void allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) override;
  /// Collective: rank 0 gathers every rank's (color, key, lowest free communicator id),
  /// forms the groups as MPI_Comm_split and gives all of them one id above every member's
  /// used ids (so no two communicators sharing a rank ever share an id).
  std::unique_ptr<Communicator> split(int color, int key) override;

  uint32_t id() const { return id_; }
  /// The world rank of this communicator's rank `rank`.
  int world_rank(int rank) const { return members_.at(rank); }

 private:
  P2pControl control();
  // ucp_tag_recv_nbx from `peer` (-1: any source, the sender reported through `source`).
  RequestPtr post_receive(void* data, size_t bytes, int peer, int tag, int* source);

  std::shared_ptr<UcxWorker> worker_;
  uint32_t id_;
  std::vector<int> members_;
  int rank_;
};

}  // namespace concord
