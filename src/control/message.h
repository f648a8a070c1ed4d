// Control-plane messages: what a rank asks for (Request), what the coordinator decides
// (Response), and their byte encoding for the gather/broadcast of each cycle
// (the negotiation's slow path, docs/algorithms.md, "Negotiation"). The encoding is little-endian
// fixed-width fields with length-prefixed strings and vectors; decode() throws InternalError
// on truncated or malformed input.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "concord/types.h"

namespace concord {

/// One rank's request to run a collective on a named tensor.
/// Request::root of a process-set registration that only the set's members submit: the
/// coordinator answers it once every member has, and every rank applies it.
inline constexpr int32_t kFormedByMembers = -1;

struct Response;
/// True for the response (or the error) of a process set formed by its members.
bool formed_by_members(const Response& response);

struct Request {
  int32_t rank = 0;
  std::string name;
  CollectiveType type = CollectiveType::kAllreduce;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;  ///< allreduce only
  /// Broadcast: the root. Process-set removal: the set's id; registration: 0, or
  /// kFormedByMembers when only the set's members submit it (form_process_set).
  int32_t root = 0;
  double prescale_factor = 1.0;  ///< allreduce only
  double postscale_factor = 1.0;
  std::vector<int64_t> shape;
  /// Alltoall: rows of dim 0 sent to each rank (size() entries, summing to shape[0]).
  /// Process-set registration: the member ranks (global ranks, ascending).
  std::vector<int64_t> splits;
  /// Grouped allreduce: the name of the group's first member ("" when not grouped) and the
  /// number of members. No member is ready until every member is ready on every rank.
  std::string group;
  int32_t group_size = 0;
  /// Where this rank's tensor lives: "" for host memory, else the device's name
  /// (DeviceSet::name, e.g. "cuda:0"). Every rank must agree on host vs device (the
  /// coordinator's device check); device names may differ between ranks.
  std::string device;

  bool operator==(const Request&) const = default;
  /// True if both describe the same collective on the same tensor (every field but rank):
  /// what the response cache compares to tell a HIT from an INVALID entry.
  bool same_parameters(const Request& other) const;
};

/// The requests a rank sends to the coordinator in one cycle.
struct RequestList {
  std::vector<Request> requests;
  bool shutdown = false;  ///< this rank called shutdown()

  bool operator==(const RequestList&) const = default;
};

enum class ResponseType : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kError = 3,
  kReducescatter = 4,
  kAlltoall = 5,
  kBarrier = 6,
  kJoin = 7,
  kProcessSet = 8,
};

/// The response type that executes a request of `type`.
ResponseType response_type(CollectiveType type);

/// What every rank executes, in the same order on every rank. A response may name several
/// tensors (a fused allreduce).
struct Response {
  ResponseType type = ResponseType::kAllreduce;
  std::vector<std::string> names;
  std::string error;  ///< kError only: the message every rank raises for names[0]
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int32_t root = 0;
  double prescale_factor = 1.0;
  double postscale_factor = 1.0;
  /// kAllreduce/kBroadcast/kReducescatter: element count of each tensor (one entry per name).
  /// kAllgather: dim 0 of each rank's input (size() entries per name, names back to back).
  /// kAlltoall: the rows rank i sends to rank j at i * size() + j (size()^2 entries).
  /// kJoin: the last rank to join. kProcessSet: the member ranks (empty = removal).
  std::vector<int64_t> sizes;
  /// Elements of one dim-0 row of each tensor (one entry per name): allgather, alltoall and
  /// reducescatter, so a rank without the tensor (joined) can still take part.
  std::vector<int64_t> row_elements;
  /// kReducescatter: dim 0 of each tensor (one entry per name).
  std::vector<int64_t> rows;
  /// Ranks that had called join() when the response was formed (they contribute nothing).
  std::vector<int32_t> joined;
  /// Group of the tensors ("" when not grouped); informational once answered (a group's
  /// members are answered in one cycle and fused like any other ready response).
  std::string group;
  /// The tensors live in device memory on every rank (Request::device non-empty): run by
  /// the device data path (runtime/device_path.h), fused only with other device responses.
  bool device = false;

  bool operator==(const Response&) const = default;
};

/// The coordinator's answer to one cycle, broadcast to every rank.
struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;  ///< some rank asked to shut down: every rank stops
  /// The ranks that have joined (join()) after this answer, ascending: in the next cycles
  /// they contribute every cache bit (their peers' cached tensors proceed without them).
  std::vector<int32_t> joined;
  /// Why the runtime stops when it is not a plain shutdown() (e.g. the stall inspector's
  /// verdict); pending operations fail with it. Not part of the wire format.
  std::string shutdown_message;
  /// The ranks that asked to shut down (ascending; filled by the negotiator when `shutdown`
  /// is set, so that the error of a peer's pending operation names them). Not on the wire.
  std::vector<int> shutdown_ranks;

  bool operator==(const ResponseList&) const = default;
};

std::vector<uint8_t> encode(const RequestList& list);
std::vector<uint8_t> encode(const ResponseList& list);
RequestList decode_request_list(const std::vector<uint8_t>& bytes);
ResponseList decode_response_list(const std::vector<uint8_t>& bytes);

}  // namespace concord
