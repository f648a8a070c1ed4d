// Builders of ExchangeStep lists (algorithms/exchange_schedule.h) for the recursive halving /
// doubling family, from the pure pattern (patterns/recursive_doubling.h): the halving
// rounds of a reduce-scatter, the doubling rounds of an allgather, and single send or
// receive steps for the non-power-of-two fold. Each algorithm maps virtual blocks to bytes
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

/// A step that only sends `bytes` of the buffer to `peer`.
ExchangeStep send_step(int peer, patterns::Segment bytes);
/// A step that sends `out` to `peer` and receives `in` from it (a sendrecv).
ExchangeStep exchange_step(int peer, patterns::Segment out, patterns::Segment in, Combine combine);
/// A step that only receives `bytes` of the buffer from `peer` and combines them.
ExchangeStep recv_step(int peer, patterns::Segment bytes, Combine combine);

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
