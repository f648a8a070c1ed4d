#include "transport/p2p_control.h"

#include <cstring>

#include "common/enforce.h"

namespace concord {

std::vector<std::vector<uint8_t>> P2pControl::gather_bytes(const std::vector<uint8_t>& mine, int root) const {
  std::vector<std::vector<uint8_t>> result;
  RequestSet requests;
  if (p2p.rank() != root) {
    uint64_t length = mine.size();
    requests.post(p2p.isend(&length, sizeof length, root, tag));
    requests.post(p2p.isend(mine.data(), mine.size(), root, tag));
    wait(requests);
    return result;
  }
  result.resize(p2p.size());
  std::vector<uint64_t> lengths(p2p.size(), 0);
  for (int r = 0; r < p2p.size(); ++r)
    if (r != root) requests.post(p2p.irecv(&lengths[r], sizeof(uint64_t), r, tag));
  wait(requests);
  for (int r = 0; r < p2p.size(); ++r) {
    if (r == root) {
      result[r] = mine;
      continue;
    }
    result[r].resize(lengths[r]);
    requests.post(p2p.irecv(result[r].data(), lengths[r], r, tag));
  }
  wait(requests);
  return result;
}

void P2pControl::broadcast_bytes(std::vector<uint8_t>& data, int root) const {
  RequestSet requests;
  if (p2p.rank() == root) {
    uint64_t length = data.size();
    for (int r = 0; r < p2p.size(); ++r) {
      if (r == root) continue;
      requests.post(p2p.isend(&length, sizeof length, r, tag + 1));
      requests.post(p2p.isend(data.data(), data.size(), r, tag + 1));
    }
    wait(requests);
    return;
  }
  uint64_t length = 0;
  requests.post(p2p.irecv(&length, sizeof length, root, tag + 1));
  wait(requests);
  data.resize(length);
  requests.post(p2p.irecv(data.data(), length, root, tag + 1));
  wait(requests);
}

void P2pControl::allreduce_bits(std::vector<uint64_t>& words, bool bitwise_and) const {
  std::vector<uint8_t> bytes(words.size() * sizeof(uint64_t));
  std::memcpy(bytes.data(), words.data(), bytes.size());
  const auto all = gather_bytes(bytes, 0);
  if (p2p.rank() == 0) {
    for (size_t r = 0; r < all.size(); ++r) {
      CONCORD_ENFORCE(all[r].size() == bytes.size(), CommError, "allreduce_bits: rank ", r, " has a bit vector of ",
                      all[r].size(), " bytes, rank 0 one of ", bytes.size());
      for (size_t w = 0; w < words.size(); ++w) {
        uint64_t value;
        std::memcpy(&value, all[r].data() + w * sizeof(uint64_t), sizeof value);
        words[w] = bitwise_and ? (words[w] & value) : (words[w] | value);
      }
    }
    std::memcpy(bytes.data(), words.data(), bytes.size());
  }
  broadcast_bytes(bytes, 0);
  std::memcpy(words.data(), bytes.data(), bytes.size());
}

void P2pControl::barrier() const {
  std::vector<uint8_t> nothing;
  gather_bytes(nothing, 0);
  broadcast_bytes(nothing, 0);
}

}  // namespace concord
