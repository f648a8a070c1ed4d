#include "kvstore/key_digest.h"

#include "algorithms/allreduce_recursive_doubling.h"
#include "transport/tags.h"

namespace concord::kvstore {

KeyDigestExchange::KeyDigestExchange(Communicator& comm, const KeyDigest& mine)
    : digest_(mine), schedule_(comm, scratch_, tags::kKeyDigest) {
  schedule_.start(reinterpret_cast<uint8_t*>(digest_.words.data()),
                  AllreduceRecursiveDoubling::steps(comm.rank(), comm.size(), KeyDigest::kWords, sizeof(int64_t)),
                  DataType::kInt64, ReduceOp::kMax);
}

Progress KeyDigestExchange::progress() { return schedule_.progress(); }

}  // namespace concord::kvstore
