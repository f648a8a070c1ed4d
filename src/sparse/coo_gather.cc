#include "sparse/coo_gather.h"

#include <algorithm>
#include <utility>

#include "algorithms/allgather_recursive_doubling.h"
#include "algorithms/allgather_ring.h"
#include "sparse/balance.h"
#include "sparse/coo_exchange.h"
#include "transport/request_set.h"

namespace concord::sparse {

std::vector<int64_t> CooGather::allgather_counts(int64_t mine) { return allgather_words({mine}); }

std::vector<int64_t> CooGather::allgather_words(const std::vector<int64_t>& mine) {
  const int P = comm_.size();
  const size_t w = mine.size();
  std::vector<int64_t> words(P * w, 0);
  std::copy(mine.begin(), mine.end(), words.begin() + comm_.rank() * w);
  if (P == 1 || w == 0) return words;
  AllgatherRecursiveDoubling allgather(comm_, counts_scratch_);
  allgather.start(words.data(), std::vector<size_t>(P, w * sizeof(int64_t)));
  run_to_completion(allgather);
  return words;
}

TrafficCounters CooGather::words_traffic(int ranks, int rank, size_t words) {
  TrafficCounters traffic;
  if (ranks == 1 || words == 0) return traffic;
  for (const ExchangeStep& step :
       AllgatherRecursiveDoubling::steps(rank, std::vector<size_t>(ranks, words * sizeof(int64_t))))
    if (step.send_peer >= 0) {
      ++traffic.messages_sent;
      traffic.bytes_sent += step.send_bytes;
    }
  return traffic;
}

void CooGather::allgatherv(const CooBlock& mine, const std::vector<int64_t>& counts, size_t index_bytes,
                           CooBlock& out) {
  const int P = comm_.size(), r = comm_.rank();
  std::vector<size_t> block_bytes(P);
  size_t offset = 0, total_bytes = 0;
  for (int q = 0; q < P; ++q) {
    block_bytes[q] = coo_wire_bytes(counts[q], index_bytes);
    if (q < r) offset += block_bytes[q];
    total_bytes += block_bytes[q];
  }
  wire_.resize(total_bytes);
  coo_pack(mine, 0, mine.size(), index_bytes, wire_.data() + offset);
  if (P > 1 && total_bytes > 0) {
    AllgatherRing allgather(comm_);
    allgather.start(wire_.data(), block_bytes);
    run_to_completion(allgather);
  }
  out.clear();
  offset = 0;
  for (int q = 0; q < P; ++q) {
    coo_unpack(wire_.data() + offset, counts[q], index_bytes, out);
    offset += block_bytes[q];
  }
}

void CooGather::balance(const CooBlock& mine, size_t index_bytes) {
  const int r = comm_.rank();
  const BalancePlan plan = balance_plan(trace_.counts, r);
  size_t send_bytes = 0, receive_bytes = 0;
  for (const auto& t : plan.sends) send_bytes += coo_wire_bytes(t.count, index_bytes);
  for (const auto& t : plan.receives) receive_bytes += coo_wire_bytes(t.count, index_bytes);
  uint8_t* send = send_.get(send_bytes);
  uint8_t* receive = receive_.get(receive_bytes);

  RequestSet requests;
  size_t offset = 0;
  for (const auto& t : plan.receives) {
    const size_t bytes = coo_wire_bytes(t.count, index_bytes);
    if (t.peer != r) requests.post(comm_.irecv(receive + offset, bytes, t.peer, kBalanceTag));
    offset += bytes;
  }
  offset = 0;
  const uint8_t* local = nullptr;
  for (const auto& t : plan.sends) {
    const size_t bytes = coo_wire_bytes(t.count, index_bytes);
    coo_pack(mine, t.offset, t.count, index_bytes, send + offset);
    if (t.peer != r) requests.post(comm_.isend(send + offset, bytes, t.peer, kBalanceTag));
    else local = send + offset;
    offset += bytes;
  }
  requests.wait();

  // Receives are in ascending peer order, which is ascending position in the balanced range.
  CooBlock& block = trace_.balanced_block;
  block.clear();
  offset = 0;
  for (const auto& t : plan.receives) {
    coo_unpack(t.peer == r ? local : receive + offset, t.count, index_bytes, block);
    offset += coo_wire_bytes(t.count, index_bytes);
  }
}

void CooGather::gather(const CooBlock& mine, size_t index_bytes, double balance_factor, CooBlock& out) {
  gather_counted(mine, allgather_counts(mine.size()), index_bytes, balance_factor, out);
}

void CooGather::gather_counted(const CooBlock& mine, std::vector<int64_t> counts, size_t index_bytes,
                               double balance_factor, CooBlock& out) {
  trace_.counts = std::move(counts);
  trace_.balanced = comm_.size() > 1 && should_balance(trace_.counts, balance_factor);
  if (!trace_.balanced) {
    trace_.balanced_block = mine;
    allgatherv(mine, trace_.counts, index_bytes, out);
    return;
  }
  balance(mine, index_bytes);
  int64_t total = 0;
  for (int64_t c : trace_.counts) total += c;
  allgatherv(trace_.balanced_block, balanced_counts(total, comm_.size()), index_bytes, out);
}

}  // namespace concord::sparse
