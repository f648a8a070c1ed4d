// The KVStore's fast key check: before a push, every rank contributes a 5-word digest of
// its KeyHeader to a recursive-doubling max-allreduce (no coordinator); when every rank
// pushes the same key with the same reduce op and none has a local problem, the push goes
// straight to its allreduce. Otherwise every rank, seeing the same reduced digest, runs the
// full KeyCheck (kvstore/key_check.h) through rank 0, which formats the exact error (key,
// ranks, dtypes and shapes) on every rank. So a common push costs no round through rank 0.
//
// Why (key, op, problem) is enough: a push with no local problem has exactly the dtype and
// shape its key was initialised with (KVStore::make_request checks that locally), and
// init's KeyCheck verified that dtype and shape across ranks. So the KVStore's table of
// initialised keys is the cache (like the response cache, Romero et al., NSDI 2022: a
// request already verified across ranks needs no coordinator round again), and two ranks
// without a problem push identical headers iff they push the same key with the same op.
// The comparison is exact (no hash): max(x) == ~max(~x) iff every rank's x is equal.
//
// Why not zero messages: a rank whose gradient op failed, or that pushes a different key in
// the same slot, must tell the others before they enter an allreduce it will not join (or
// joins with another size): no rank can know that from local state, so some exchange is
// needed before every push. This one is decentralised and the smallest possible:
// Words on the wire (pof2 = largest power of two <= P, L = log2 pof2): every rank sends L
// messages of kWords * 8 = 40 bytes (a fold pair's odd rank one more, its even rank one
// instead of L), rank 0 no more than any other; L rounds of latency (+2 when P != pof2),
// versus the KeyCheck's 2 rounds with P-1 headers (224 B) and P-1 verdicts (520 B) through
// rank 0. The tag is tags::kKeyDigest, used by nothing else.
#pragma once

#include <array>
#include <cstdint>

#include "algorithms/algorithm.h"
#include "algorithms/exchange_schedule.h"
#include "kvstore/key_check.h"
#include "transport/communicator.h"

namespace concord::kvstore {

/// One rank's digest of a KeyHeader, and the max-reduction of every rank's.
struct KeyDigest {
  static constexpr int kWords = 5;
  /// {key, ~key, request, ~request, flag}: request packs operation and reduce op; flag is 1
  /// when this rank cannot take the fast path (`eligible` false or a local problem).
  std::array<int64_t, kWords> words{};

  /// The digest of `header`. `eligible`: the caller's key is verified (initialised) and the
  /// operation is a push; false forces every rank to the full KeyCheck.
  static KeyDigest of(const KeyHeader& header, bool eligible) {
    KeyDigest digest;
    const int64_t request = (static_cast<int64_t>(header.operation) << 32) | static_cast<uint32_t>(header.op);
    const bool flag = !eligible || header.problem != static_cast<int32_t>(KeyProblem::kNone);
    digest.words = {header.key, ~header.key, request, ~request, flag ? 1 : 0};
    return digest;
  }
  /// For a digest reduced with max over every rank: true iff every rank had the same key
  /// and request and none raised the flag. Total on any bit pattern (fuzzed).
  bool all_agree() const { return words[0] == ~words[1] && words[2] == ~words[3] && words[4] == 0; }
};

/// The max-allreduce of one KeyDigest over `comm` (recursive doubling with MPICH's fold,
/// AllreduceRecursiveDoubling::steps, tag tags::kKeyDigest), as a resumable operation.
class KeyDigestExchange : public Algorithm {
 public:
  /// Starts the exchange of `mine`; `comm` must outlive the operation.
  KeyDigestExchange(Communicator& comm, const KeyDigest& mine);
  /// Advances; never blocks. kDone once reduced() is valid. Throws CommError.
  Progress progress() override;
  /// The digest reduced over every rank, identical on every rank after kDone.
  const KeyDigest& reduced() const { return digest_; }

 private:
  KeyDigest digest_;
  ScratchBuffer scratch_;
  ExchangeSchedule schedule_;
};

}  // namespace concord::kvstore
