// Point-to-point COO exchanges of the split-and-reduce phase of Ok-Topk and TopkDSA
// (Phase 2; Li & Hoefler, PPoPP 2022, sec. 3.2; Renggli et
// al., "SparCML", SC 2019): every rank holds one block of COO entries per destination rank
// and receives the blocks addressed to it.
//
// 1. Count exchange (exchange_counts): an alltoall of one int64 per destination, sent as
//    16-byte messages {count, n} so the dense length is checked on the way: P-1 messages,
//    16(P-1) bytes per rank.
// 2. Destination rotation (RotatedExchange): at step s = 0..P-1 rank r sends its block for
//    rank (r+s) mod P and receives the block of rank (r-s) mod P (step 0 is local), so no
//    destination is hit by every rank at once. Steps are grouped in buckets of
//    min(bucket_steps, P) steps: the messages of bucket b are posted, the blocks of bucket
//    b-1 are consumed (scatter-added) while they fly, then bucket b is waited for. Empty
//    blocks are not sent (both sides know the counts). A rank sends at most P-1 messages
//    carrying coo_wire_bytes(its entries for other ranks) bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "sparse/coo.h"
#include "transport/communicator.h"
#include "transport/tags.h"

namespace concord::sparse {

/// Message tags of the sparse allreduces (distinct from the dense algorithms' small tags).
inline constexpr int kCountExchangeTag = tags::kSparseCountExchange;
inline constexpr int kRotationTag = tags::kSparseRotation;
inline constexpr int kBalanceTag = tags::kSparseBalance;

/// Blocking alltoall of `send_counts` (P entries: the count this rank sends to each rank);
/// returns the count each rank sends to this one. Also exchanges the dense length `n` of
/// every rank: throws InvalidArgument when some rank passed n < 0 and MismatchError when
/// ranks passed different n (the message names `algorithm`, the ranks and their n's), on
/// every rank alike, after all messages have completed (never a hang). CommError on
/// transport failure.
std::vector<int64_t> exchange_counts(Communicator& comm, const std::vector<int64_t>& send_counts, int64_t n,
                                     const std::string& algorithm);

/// The n-consistency rule every sparse allreduce applies once it has every rank's dense
/// length (`lengths[q]` = rank q's n; this rank passed `n`): throws InvalidArgument when
/// some rank passed n < 0, MismatchError when they differ, both naming `algorithm` and
/// every rank's n ("rank 0: n=100, rank 1: n=120"). Given the same `lengths` every rank
/// decides alike, so all throw or none does.
void check_lengths(const std::vector<int64_t>& lengths, int64_t n, const std::string& algorithm);

/// Consumer of one received block: (source rank, entries in wire format, entry count).
using BlockConsumer = std::function<void(int source, const uint8_t* wire, int64_t count)>;

/// The destination-rotated, bucketed exchange of COO blocks (header comment, step 2).
/// Keeps its receive buffer across calls (grow-only).
class RotatedExchange {
 public:
  explicit RotatedExchange(Communicator& comm) : comm_(comm) {}

  /// Blocking. `send` holds the P blocks in wire format back to back in destination order,
  /// block q having send_counts[q] entries; recv_counts[q] is what rank q sends here (from
  /// exchange_counts). consume() is called once per non-empty block addressed to this
  /// rank (its own block included, at step 0), in step order s = 0..P-1, i.e. from sources
  /// r, r-1, ..., r-P+1 (mod P): a fixed order, so reductions are deterministic.
  /// `bucket_steps` >= 1 (min(bucket_steps, P) is used). CommError on transport failure.
  void run(const uint8_t* send, const std::vector<int64_t>& send_counts, const std::vector<int64_t>& recv_counts,
           size_t index_bytes, int bucket_steps, const BlockConsumer& consume);

 private:
  Communicator& comm_;
  ScratchBuffer receive_;
};

}  // namespace concord::sparse
