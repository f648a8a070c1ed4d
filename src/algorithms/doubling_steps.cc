#include "algorithms/doubling_steps.h"

namespace concord {

ExchangeStep send_step(int peer, patterns::Segment bytes) {
  ExchangeStep step;
  step.send_peer = peer;
  step.send_offset = bytes.offset;
  step.send_bytes = bytes.count;
  return step;
}

ExchangeStep recv_step(int peer, patterns::Segment bytes, Combine combine) {
  ExchangeStep step;
  step.recv_peer = peer;
  step.recv_offset = bytes.offset;
  step.recv_bytes = bytes.count;
  step.combine = combine;
  return step;
}

ExchangeStep exchange_step(int peer, patterns::Segment out, patterns::Segment in, Combine combine) {
  ExchangeStep step = send_step(peer, out);
  step.recv_peer = peer;
  step.recv_offset = in.offset;
  step.recv_bytes = in.count;
  step.combine = combine;
  return step;
}

void append_halving_steps(std::vector<ExchangeStep>& steps, const patterns::RecursiveDoubling& pattern,
                          const BlockSpan& span) {
  for (int k = 0; k < pattern.rounds(); ++k)
    steps.push_back(exchange_step(pattern.halving_partner(k), span(pattern.halving_send(k)),
                             span(pattern.halving_keep(k)), Combine::kReduce));
}

void append_doubling_steps(std::vector<ExchangeStep>& steps, const patterns::RecursiveDoubling& pattern,
                           const BlockSpan& span) {
  for (int k = 0; k < pattern.rounds(); ++k)
    steps.push_back(exchange_step(pattern.doubling_partner(k), span(pattern.doubling_send(k)),
                             span(pattern.doubling_recv(k)), Combine::kCopy));
}

}  // namespace concord
