// The discrete-event engine of the simulator: runs a Schedule on a Topology and returns the
// time the last operation completes.
//
// Model (docs/simulator.md): an event queue ordered by time (ties by insertion). Each link
// direction is a resource with a calendar of busy intervals. When a message becomes ready
// (all its dependencies complete at its sender) it occupies the sender-side link (`up`, see
// Topology::route) for alpha + bytes * beta from the first free slot at or after that moment,
// and the receiver-side link (`down`) for as long from the first free slot at or after it
// left: a cut-through switch with output queueing (a message to a busy receiver waits in the
// switch without holding its sender's link). It arrives when it has passed the receiver's
// link. Links are reserved in the order messages become ready; a later message may fill an
// idle gap before an earlier reservation. So one message takes alpha + n beta, and k messages
// into one receiver take k times as long. On arrival the receiver reduces `reduce_bytes` at
// gamma seconds per byte, one reduction at a time per rank; the message is then complete.
// Joins complete when their dependencies do. Two events per message: O(M log M) for M
// messages. A link with a token bucket (LinkParams::bucket_bytes, the testbed's tbf) sends
// at line rate while its sender's bucket holds tokens and at the shaped rate beyond; the
// bucket refills at the shaped rate. Because the bucket carries over from one call to the
// next, a steady state of back-to-back calls (as concord-bench -T times them) needs several
// calls: `max_calls` runs the schedule up to that many times, each call starting when the
// previous one has completed, links and buckets carried over, and stops after the second
// call that starts with the same tokens in every bucket as the call before it (at once
// without buckets; a call that drains a bucket by a fraction of its depth may need tens).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/schedule.h"
#include "sim/topology.h"

namespace concord::sim {

struct SimResult {
  double seconds = 0;                ///< completion time of the last operation (of the last call)
  uint64_t events = 0;               ///< events processed (2 per message), over all calls
  int calls = 1;                     ///< back-to-back calls simulated
  bool steady = true;                ///< false: max_calls ran out before the buckets settled
  Traffic traffic;                   ///< messages and bytes sent
  std::vector<double> completed_at;  ///< per operation (by OpId), its completion time in seconds
                                     ///< (in the last call, from that call's start)
};

/// Simulates back-to-back runs of `schedule` on `topology` with reduction cost `gamma`
/// (seconds per byte) until the buckets' steady state, at most `max_calls` (>= 1); the
/// result describes the last run. Throws InvalidArgument when the schedule's rank count
/// differs from the topology's or max_calls < 1, and InternalError when some operation
/// never becomes ready (a dependency cycle).
SimResult simulate(const Schedule& schedule, const Topology& topology, double gamma, int max_calls = 1);

}  // namespace concord::sim
