// Cross-rank validation of one KVStore collective, without hangs: before every init
// broadcast and every push allreduce, each rank describes what it is about to do in a
// fixed-size KeyHeader (key, operation, dtype, shape, reduce op, and a local problem such
// as "key never initialised"). Rank 0 gathers the headers, picks the first rank that
// differs from its own or reports a problem, and sends every rank a Verdict holding its
// own header and that rank's. Every rank then formats the same message from the verdict
// and throws (MismatchError for a cross-rank difference, InvalidArgument for a local
// misuse), or, when all agree, goes on to the collective. Since every rank always takes
// part in the exchange, a misuse on one rank becomes an error on all of them instead of a
// collective that never completes.
//
// Steps and bytes on the wire (P ranks, H = sizeof(KeyHeader), V = sizeof(Verdict)):
//   1. every rank r > 0 sends its header to rank 0 (P-1 messages of H bytes, tag kHeaderTag);
//   2. rank 0 sends the verdict to every rank r > 0 (P-1 messages of V bytes, kVerdictTag).
// Two message rounds; rank 0 is the busiest (P-1 sends). The idea of exchanging a small
// descriptor before each collective is the coordinator pattern of Horovod (Sergeev & Del
// Balso 2018), applied per collective as the KVStore needs no name negotiation
// (docs/architecture.md, "KVStore").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "concord/types.h"
#include "transport/communicator.h"
#include "transport/request_set.h"
#include "transport/tags.h"

namespace concord::kvstore {

/// The operation a KeyHeader describes.
enum class KeyOperation : int32_t { kInit = 0, kPush = 1 };

/// A problem a rank found locally before the collective (reported on every rank).
enum class KeyProblem : int32_t {
  kNone = 0,
  kUnknownKey = 1,          ///< push of a key this rank never initialised
  kAlreadyInitialized = 2,  ///< init of a key this rank already holds
  kValueMismatch = 3,       ///< pushed tensor's dtype/shape differ from the stored value's
  kInputFailed = 4,         ///< the operation that computes the pushed tensor failed
};

/// What one rank is about to do with one key. Plain bytes on the wire (same build on every
/// rank). Shapes are compared on ndim, element count and the first kMaxDims dimensions.
struct KeyHeader {
  static constexpr int kMaxDims = 8;
  static constexpr int kDetailBytes = 120;
  int64_t key = 0;
  int32_t operation = 0;  ///< KeyOperation
  int32_t problem = 0;    ///< KeyProblem
  int32_t dtype = 0;      ///< DataType code
  int32_t ndim = 0;
  int32_t op = 0;  ///< ReduceOp code (push), 0 for init
  int32_t reserved = 0;
  int64_t num_elements = 0;
  int64_t dims[kMaxDims] = {};
  char detail[kDetailBytes] = {};  ///< NUL-terminated text of the local problem

  /// Header of `operation` on `key` for a tensor of `dtype` and `shape`.
  static KeyHeader describe(int64_t key, KeyOperation operation, DataType dtype, const std::vector<int64_t>& shape,
                            ReduceOp op);
  /// Records a local problem with its explanation (truncated to kDetailBytes - 1 bytes).
  void set_problem(KeyProblem code, const std::string& text);
  /// True when `other` describes the same operation (problem and detail ignored).
  bool same_request(const KeyHeader& other) const;
};

/// Rank 0's answer: bad_rank is -1 when every rank agrees; otherwise the first rank that
/// differs from rank 0 or reported a problem, and its header; num_bad counts all such ranks
/// and `listed` names the first kMaxListed of them (ascending), so that an error seen on
/// several ranks at once (e.g. a gradient op failing on two ranks) is reported with all.
struct Verdict {
  static constexpr int kMaxListed = 16;
  int32_t bad_rank = -1;
  int32_t num_bad = 0;
  int32_t listed[kMaxListed] = {};
  KeyHeader root;
  KeyHeader bad;
};

/// The message every rank throws for a bad verdict, identical on every rank: names the
/// key(s), the first bad rank and what differed, and every listed bad rank when several. Empty when verdict.bad_rank < 0.
std::string describe_verdict(const Verdict& verdict);
/// Throws InvalidArgument (a rank reported a local problem) or MismatchError (ranks
/// differ) with describe_verdict(); returns when every rank agrees.
void throw_if_bad(const Verdict& verdict);

/// The exchange above as a resumable operation on `comm` (never blocks in progress()).
/// Tags kHeaderTag and kVerdictTag are used by no algorithm, so the exchange may follow or
/// precede a collective on the same communicator.
class KeyCheck : public Algorithm {
 public:
  static constexpr int kHeaderTag = tags::kKeyCheckHeader;
  static constexpr int kVerdictTag = tags::kKeyCheckVerdict;

  /// Starts the exchange of `mine`; `comm` must outlive the operation.
  KeyCheck(Communicator& comm, const KeyHeader& mine);
  /// Advances the exchange; kDone once verdict() is valid. Throws CommError.
  Progress progress() override;
  /// The verdict, identical on every rank, once progress() returned kDone.
  const Verdict& verdict() const { return verdict_; }

 private:
  void decide();

  Communicator& comm_;
  KeyHeader mine_;
  Verdict verdict_;
  std::vector<KeyHeader> headers_;  // rank 0: one per rank
  RequestSet receives_;
  RequestSet sends_;
  bool decided_ = false;
};

}  // namespace concord::kvstore
