// The transport interfaces, three separate capabilities (Horovod's
// Controller, gloo's transport):
//   PointToPoint        nonblocking isend/irecv between ranks of one group: all that
//                       Concord's algorithms use;
//   ControlCollectives  the few small blocking collectives of the control plane
//                       (negotiation, settings adoption);
//   NativeCollectives   the transport's own collectives (MPI_Allreduce), the `mpi`
//                       algorithm and the baseline; only a transport that has them offers
//                       them (Communicator::native() is null otherwise), so no interface
//                       carries a default that throws "not supported";
//   AnySourceReceive    a receive that matches whichever rank sends first (MPI_ANY_SOURCE,
//                       UCX's masked tag), offered the same way (Communicator::any_source()):
//                       torch.distributed's recv from any source needs it.
// A Communicator is a group with point-to-point, control collectives, split() and traffic
// counters. Implementations: MpiCommunicator (src/transport/mpi_communicator.h, also
// NativeCollectives), UcxCommunicator (src/transport/ucx/) and InProcessCommunicator
// (threads as ranks, for unit tests); all but the last come from the process's
// TransportWorld (src/transport/transport_world.h).
// Tags: src/transport/tags.h; posting and reaping requests: src/transport/request_set.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "concord/types.h"

namespace concord {

/// An outstanding isend or irecv. test() returns true once the buffer may be reused (send)
/// or holds the data (receive); it never blocks.
class TransportRequest {
 public:
  virtual ~TransportRequest() = default;
  virtual bool test() = 0;
};
using RequestPtr = std::unique_ptr<TransportRequest>;

/// Bytes and messages this rank has sent and received through one communicator.
struct TrafficCounters {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
};

/// Nonblocking point-to-point messages between the ranks of one group.
class PointToPoint {
 public:
  virtual ~PointToPoint() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Starts sending `bytes` bytes to `peer` with `tag` (src/transport/tags.h). Messages
  /// between one pair with one tag are received in the order they were sent (MPI's
  /// non-overtaking rule).
  virtual RequestPtr isend(const void* data, size_t bytes, int peer, int tag) = 0;
  /// Starts receiving exactly `bytes` bytes from `peer` with `tag`.
  virtual RequestPtr irecv(void* data, size_t bytes, int peer, int tag) = 0;
};

/// The control plane's small blocking collectives. Collective: every rank of the group
/// calls each of them in the same order.
class ControlCollectives {
 public:
  virtual ~ControlCollectives() = default;

  /// Blocking gather of variable-length byte strings to `root`: on root the result has
  /// size() entries in rank order, elsewhere it is empty.
  virtual std::vector<std::vector<uint8_t>> gather_bytes(const std::vector<uint8_t>& mine, int root) = 0;
  /// Blocking broadcast of a variable-length byte string from `root` (resized elsewhere).
  virtual void broadcast_bytes(std::vector<uint8_t>& data, int root) = 0;
  /// Blocking barrier over the group.
  virtual void barrier() = 0;
  /// Blocking in-place bitwise allreduce of `words` (same length on every rank): AND when
  /// `bitwise_and`, else OR. The response cache's bit-vector coordination runs on it.
  virtual void allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) = 0;
};

/// The transport's own collectives (MPI's), offered only by transports that have them.
class NativeCollectives {
 public:
  virtual ~NativeCollectives() = default;

  /// True when native_allreduce() can run `dtype` with `op`.
  virtual bool native_allreduce_supported(DataType dtype, ReduceOp op) const = 0;
  /// Blocking allreduce of `count` elements from `input` into `output` by the transport's
  /// own implementation (MPI_Allreduce; in place, MPI_IN_PLACE, when input == output), the
  /// baseline Concord's algorithms are measured against. kAverage reduces as kSum.
  /// Throws InvalidArgument when !native_allreduce_supported(dtype, op).
  virtual void native_allreduce(const void* input, void* output, size_t count, DataType dtype, ReduceOp op) = 0;
};

/// A receive from whichever rank of the group sends first, offered only by transports that
/// can match a message without naming its source.
class AnySourceReceive {
 public:
  virtual ~AnySourceReceive() = default;

  /// Starts receiving exactly `bytes` bytes with `tag` from any rank of the group (MPI's
  /// MPI_ANY_SOURCE semantics: the oldest matching message of whichever sender the
  /// transport matches first; one sender's messages stay in order). Once the request's
  /// test() returned true, `*source` holds the sender's rank in the group; `source` must
  /// stay valid until then. Throws InvalidArgument when `bytes` exceeds the transport's
  /// max_message_bytes() (a message in pieces cannot be matched without its source);
  /// test() throws CommError naming the sender, the tag and both sizes when the message
  /// has another length.
  virtual RequestPtr irecv_any_source(void* data, size_t bytes, int tag, int* source) = 0;
};

class Communicator : public PointToPoint, public ControlCollectives {
 public:
  ~Communicator() override = default;

  /// The transport's native collectives over this group, or nullptr when it has none
  /// (the in-process transport). Owned by this communicator.
  virtual NativeCollectives* native() { return nullptr; }
  /// The any-source receive of this group, or nullptr when the transport has none (the
  /// in-process transport and the device-pointer decorators). Owned by this communicator.
  virtual AnySourceReceive* any_source() { return nullptr; }

  /// Blocking, collective over this communicator: a new communicator of the ranks that
  /// passed the same `color`, ordered by (`key`, rank in this communicator), as
  /// MPI_Comm_split. A negative `color` (MPI_UNDEFINED) joins no group and gets nullptr.
  /// The new communicator's counters start at zero; its traffic is also added to this
  /// communicator's counters (and its ancestors'), so counters() of a communicator covers
  /// everything sent through it and the communicators split from it. It must not outlive
  /// the ranks' use of this one. Throws CommError on transport failure.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  /// Traffic of this rank through this communicator and those split from it. Updated
  /// atomically (sibling communicators may be used from different threads); read it once
  /// the operations of interest are complete.
  const TrafficCounters& counters() const { return *counters_; }
  /// Zeroes this communicator's counters (not its ancestors').
  void reset_counters() { *counters_ = {}; }

  /// Largest message the transport sends in one piece: isend/irecv of more bytes go as
  /// several consecutive pieces (src/transport/message_split.h). MpiCommunicator: 1 GiB
  /// (MPI counts are ints); InProcessCommunicator: unlimited. Each counts as one message
  /// in counters(). Communicators split from this one inherit it.
  size_t max_message_bytes() const { return max_message_bytes_; }
  /// Sets max_message_bytes() (>= 1; clamped). Every rank of the group must set the same
  /// value before any message is posted: a receive cut differently from its send fails.
  /// Tests set it small to exercise the splitting with small buffers.
  void set_max_message_bytes(size_t bytes) { max_message_bytes_ = bytes == 0 ? 1 : bytes; }

 protected:
  /// Records `messages` messages of `bytes` bytes in total sent, here and in every ancestor.
  void record_sent(uint64_t bytes, uint64_t messages = 1);
  /// Records `messages` messages of `bytes` bytes in total received, here and in ancestors.
  void record_received(uint64_t bytes, uint64_t messages = 1);
  /// Makes `child` (a communicator split from this one) credit its traffic to this
  /// communicator and its ancestors as well, and take this one's max_message_bytes().
  void adopt(Communicator& child) const;

 private:
  // Adds to one bytes field and one messages field here and in every ancestor.
  void record(uint64_t TrafficCounters::*bytes_field, uint64_t TrafficCounters::*messages_field, uint64_t bytes,
              uint64_t messages);

  std::shared_ptr<TrafficCounters> counters_ = std::make_shared<TrafficCounters>();
  std::vector<std::shared_ptr<TrafficCounters>> ancestors_;
  size_t max_message_bytes_ = SIZE_MAX;
};

}  // namespace concord
