#include "sparse/sparse_exchange.h"

#include <algorithm>
#include <cstring>

#include "algorithms/allgather_ring.h"
#include "algorithms/alltoall_pairwise.h"
#include "common/enforce.h"
#include "patterns/ring.h"
#include "sparse/coo.h"

namespace concord::sparse {
namespace {
constexpr int kRotationTag = 61;
}

std::vector<int64_t> allgather_counts(Communicator& comm, int64_t mine) {
  const int P = comm.size();
  std::vector<int64_t> counts(P, 0);
  counts[comm.rank()] = mine;
  AllgatherRing ring(comm);
  ring.start(counts.data(), std::vector<size_t>(P, sizeof(int64_t)));
  run_to_completion(ring);
  return counts;
}

std::vector<int64_t> alltoall_counts(Communicator& comm, const std::vector<int64_t>& send) {
  const int P = comm.size();
  CONCORD_ENFORCE(static_cast<int>(send.size()) == P, InternalError, "alltoall_counts got ", send.size(),
                  " counts for ", P, " ranks");
  std::vector<int64_t> received(P, 0);
  AlltoallPairwise alltoall(comm);
  alltoall.start(send.data(), received.data(), sizeof(int64_t));
  run_to_completion(alltoall);
  return received;
}

void allgatherv_coo(Communicator& comm, const std::vector<int64_t>& counts, const int64_t* indices,
                    const float* values, size_t index_bytes, ScratchBuffer& scratch,
                    std::vector<int64_t>& all_indices, std::vector<float>& all_values) {
  const int P = comm.size();
  std::vector<size_t> block_bytes(P);
  std::vector<size_t> offsets(P + 1, 0);
  for (int q = 0; q < P; ++q) {
    block_bytes[q] = coo_block_bytes(static_cast<size_t>(counts[q]), index_bytes);
    offsets[q + 1] = offsets[q] + block_bytes[q];
  }
  uint8_t* wire = scratch.get(offsets[P]);
  const int me = comm.rank();
  coo_pack(indices, values, static_cast<size_t>(counts[me]), index_bytes, wire + offsets[me]);
  AllgatherRing ring(comm);
  ring.start(wire, block_bytes);
  run_to_completion(ring);
  size_t total = 0;
  for (int q = 0; q < P; ++q) total += static_cast<size_t>(counts[q]);
  all_indices.resize(total);
  all_values.resize(total);
  size_t at = 0;
  for (int q = 0; q < P; ++q) {
    const auto m = static_cast<size_t>(counts[q]);
    coo_unpack(wire + offsets[q], m, index_bytes, all_indices.data() + at, all_values.data() + at);
    at += m;
  }
}

void rotation_exchange(Communicator& comm, const uint8_t* send, const std::vector<size_t>& send_offsets,
                       const std::vector<size_t>& recv_bytes, int bucket_steps, ScratchBuffer& receive,
                       const std::function<void(int source, const uint8_t* data, size_t bytes)>& on_block) {
  const int P = comm.size();
  const int r = comm.rank();
  const int bucket = std::max(1, std::min(bucket_steps, P));
  // Receive offsets by step.
  std::vector<size_t> recv_offset(P, 0);
  size_t total = 0;
  for (int s = 1; s < P; ++s) {
    recv_offset[s] = total;
    total += recv_bytes[patterns::mod(r - s, P)];
  }
  uint8_t* inbox = receive.get(total);
  std::vector<RequestPtr> flying;
  int done_first = 1;  // first step whose block has not been handed to on_block
  for (int first = 1; first < P; first += bucket) {
    const int last = std::min(P, first + bucket);
    for (int s = first; s < last; ++s) {
      const int source = patterns::mod(r - s, P);
      flying.push_back(comm.irecv(inbox + recv_offset[s], recv_bytes[source], source, kRotationTag));
      const int dest = patterns::mod(r + s, P);
      flying.push_back(comm.isend(send + send_offsets[dest], send_offsets[dest + 1] - send_offsets[dest], dest,
                                  kRotationTag));
    }
    for (; done_first < first; ++done_first) {
      const int source = patterns::mod(r - done_first, P);
      on_block(source, inbox + recv_offset[done_first], recv_bytes[source]);
    }
    wait_all(flying);
  }
  for (; done_first < P; ++done_first) {
    const int source = patterns::mod(r - done_first, P);
    on_block(source, inbox + recv_offset[done_first], recv_bytes[source]);
  }
}

}  // namespace concord::sparse
