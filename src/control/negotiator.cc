#include "control/negotiator.h"

namespace concord {

Negotiator::Negotiator(Communicator& control) : comm_(control) {
  if (comm_.rank() == 0) coordinator_.emplace(comm_.size());
}

ResponseList Negotiator::negotiate(const RequestList& mine) {
  const auto gathered = comm_.gather_bytes(encode(mine), 0);
  ResponseList answer;
  std::vector<uint8_t> bytes;
  if (coordinator_) {
    for (const auto& encoded : gathered) {
      const RequestList list = decode_request_list(encoded);
      answer.shutdown |= list.shutdown;
      for (const auto& request : list.requests) coordinator_->add(request);
    }
    answer.responses = coordinator_->take_ready();
    bytes = encode(answer);
  }
  comm_.broadcast_bytes(bytes, 0);
  if (coordinator_) return answer;
  return decode_response_list(bytes);
}

}  // namespace concord
