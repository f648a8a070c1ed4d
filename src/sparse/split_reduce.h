// SplitReduce: the split-and-reduce phase shared by Ok-Topk (Phase 2) and TopkDSA
// (docs/algorithms.md; Li & Hoefler, PPoPP 2022, sec. 3.2; Renggli et al.,
// "SparCML", SC 2019): every rank splits its selected COO entries by the P regions,
// exchanges counts, sends each block to the region's owner by the destination rotation
// (sparse/coo_exchange.h) and the owner sums what it receives.
//
// Steps for P ranks, selected entries S (ascending) and regions R_0..R_{P-1}:
//   1. s[q] = entries of S in region q.
//   2. exchange_counts: P-1 messages of 16 bytes per rank ({count, n}; checks n).
//   3. RotatedExchange: the non-empty blocks for other regions, one message each
//      (coo_wire_bytes(|S| - s[r]) bytes in all), in buckets of min(bucket_steps, P) steps.
//   4. Scatter-add into a dense zeroed buffer of the own region, own block first, then the
//      received blocks in step order (sources r-1, r-2, ...): a fixed order, so the sums
//      are deterministic. The reduced region is the buffer's nonzeros, ascending.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sparse/coo.h"
#include "sparse/coo_exchange.h"
#include "sparse/partition.h"
#include "transport/communicator.h"

namespace concord::sparse {

class SplitReduce {
 public:
  /// Binds to `comm` (which must outlive this object); keeps its buffers across calls.
  explicit SplitReduce(Communicator& comm) : comm_(comm), exchange_(comm) {}

  /// Steps 1-4 of the header comment: `selected` ascending (indices in [0, n)), `regions`
  /// the same on every rank; `reduced` (replaced) gets the nonzero sums of this rank's
  /// region, ascending. `n` goes into the count exchange; `algorithm` names the caller in
  /// its errors. Blocking, collective. Throws InvalidArgument for n < 0 and MismatchError
  /// for differing n (every rank alike, from exchange_counts), CommError on transport
  /// failure.
  void run(const CooBlock& selected, const Regions& regions, int64_t n, size_t index_bytes, int bucket_steps,
           const std::string& algorithm, CooBlock& reduced);

 private:
  Communicator& comm_;
  RotatedExchange exchange_;
  std::vector<int64_t> positions_;
  std::vector<uint8_t> send_wire_;
  std::vector<float> region_;  // dense reduce buffer, all zeros between calls
};

}  // namespace concord::sparse
