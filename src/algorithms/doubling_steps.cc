#include "algorithms/doubling_steps.h"

namespace concord {

bool append_fold(std::vector<ExchangeStep>& steps, const patterns::RecursiveDoubling& pattern, patterns::Segment sent,
                 patterns::Segment returned, Combine combine) {
  if (pattern.folds_out()) {
    steps.push_back(send_step(pattern.fold_partner(), sent));
    steps.push_back(recv_step(pattern.fold_partner(), returned, Combine::kCopy));
    return true;
  }
  if (pattern.folds_in()) steps.push_back(recv_step(pattern.fold_partner(), sent, combine));
  return false;
}

void append_unfold(std::vector<ExchangeStep>& steps, const patterns::RecursiveDoubling& pattern,
                   patterns::Segment returned) {
  if (pattern.folds_in()) steps.push_back(send_step(pattern.fold_partner(), returned));
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
