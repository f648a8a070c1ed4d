// Builders of ExchangeStep lists (algorithms/exchange_schedule.h) for the recursive halving /
// doubling family, from the pure pattern (patterns/recursive_doubling.h): the halving
// rounds of a reduce-scatter, the doubling rounds of an allgather, and the steps of the
// non-power-of-two fold. Each algorithm maps virtual blocks to bytes
// of its buffer with its own BlockSpan (even_blocks or rank_blocks, times the element size,
// or prefix sums of variable block sizes).
#pragma once

#include <functional>
#include <vector>

#include "algorithms/exchange_schedule.h"
#include "patterns/recursive_doubling.h"

namespace concord {

/// Byte span [offset, offset + count) of a range of virtual blocks in the buffer.
using BlockSpan = std::function<patterns::Segment(patterns::BlockRange)>;

/// The non-power-of-two fold: a rank that folds out sends `sent` to its partner, then
/// receives `returned` back in place, and its list is complete (returns true); a rank that
/// folds in receives its partner's `sent` and combines it with `combine` (returns false;
/// end its list with append_unfold); any other rank gets no step (returns false).
/// `sent` and `returned` are the byte spans as the rank that folds out sees them.
bool append_fold(std::vector<ExchangeStep>& steps, const patterns::RecursiveDoubling& pattern, patterns::Segment sent,
                 patterns::Segment returned, Combine combine);
/// For a rank that folds in: sends `returned` back to its partner (nothing for others).
void append_unfold(std::vector<ExchangeStep>& steps, const patterns::RecursiveDoubling& pattern,
                   patterns::Segment returned);

/// log2(pof2) recursive-halving rounds for a participant (virtual rank >= 0): round k sends
/// halving_send(k) to halving_partner(k) and reduces the partner's copy of halving_keep(k)
/// into the buffer. Afterwards virtual block virtual_rank() holds the reduction over all
/// participants.
void append_halving_steps(std::vector<ExchangeStep>& steps, const patterns::RecursiveDoubling& pattern,
                          const BlockSpan& span);

/// log2(pof2) recursive-doubling allgather rounds for a participant: round k sends
/// doubling_send(k) to doubling_partner(k) and receives doubling_recv(k) in place.
/// Afterwards every virtual block is in place.
void append_doubling_steps(std::vector<ExchangeStep>& steps, const patterns::RecursiveDoubling& pattern,
                           const BlockSpan& span);

}  // namespace concord
