// Blocking exchanges the sparse allreduces are built from, all on the Communicator's
// isend/irecv so its traffic counters see every byte (../shared/specs/oktopk.md):
//   allgather_counts  ring allgather of one int64 per rank: P-1 messages and 8(P-1) bytes
//                     sent per rank;
//   alltoall_counts   pairwise alltoall of one int64 per destination: P-1 messages and
//                     8(P-1) bytes sent per rank;
//   allgatherv_coo    ring allgatherv of COO blocks (sparse/coo.h), c_q entries from rank
//                     q: P-1 messages per rank, rank r sends e * (sum_q c_q - c_{(r+1) mod P})
//                     bytes (e = bytes per entry: it forwards every block but its right
//                     neighbour's);
//   rotation_exchange destination rotation of Phase 2: at step s = 1..P-1 rank r sends its
//                     block for rank (r+s) mod P and receives from (r-s) mod P, steps
//                     grouped in buckets; P-1 messages per rank (zero-byte ones included).
// P = 1 sends nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/algorithm.h"
#include "transport/communicator.h"

namespace concord::sparse {

/// Every rank's `mine`, in rank order (size P). Blocking, collective. Throws CommError.
std::vector<int64_t> allgather_counts(Communicator& comm, int64_t mine);

/// Pairwise alltoall of counts: `send[q]` goes to rank q; returns what each rank sent to
/// this one, in rank order (own entry copied). `send` has P entries. Blocking, collective.
std::vector<int64_t> alltoall_counts(Communicator& comm, const std::vector<int64_t>& send);

/// Allgatherv of COO entries: rank q contributes `counts[q]` entries (every rank passes the
/// same counts); this rank's are (indices[i], values[i]) for i < counts[rank].
/// On return `all_indices`/`all_values` hold every rank's entries, blocks in rank order.
/// `scratch` holds the wire blocks (persistent, grow-only). Blocking, collective.
void allgatherv_coo(Communicator& comm, const std::vector<int64_t>& counts, const int64_t* indices,
                    const float* values, size_t index_bytes, ScratchBuffer& scratch,
                    std::vector<int64_t>& all_indices, std::vector<float>& all_values);

/// Destination rotation with buckets (spec Phase 2, steps 3-4): `send_blocks[q]` (bytes of
/// `send_offsets[q]` .. `send_offsets[q+1]` in `send`) go to rank q, `recv_bytes[q]` bytes
/// come from rank q. Steps s = 1..P-1 are grouped in buckets of `bucket_steps` steps: the
/// messages of bucket b are posted, then on_block(source, data, bytes) runs for each block
/// of bucket b-1 while they fly, in step order. The own block is not sent (the caller
/// handles step 0). `receive` is scratch for the received blocks. Blocking, collective.
void rotation_exchange(Communicator& comm, const uint8_t* send, const std::vector<size_t>& send_offsets,
                       const std::vector<size_t>& recv_bytes, int bucket_steps, ScratchBuffer& receive,
                       const std::function<void(int source, const uint8_t* data, size_t bytes)>& on_block);

}  // namespace concord::sparse
