// Compares the transport's traffic counters of one collective call, per rank, with the exact
// counts an algorithm's cost model predicts (Cost::max_* and total_*).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/cost_model.h"
#include "transport/communicator.h"

namespace concord::testing_util {

/// Expects max and summed messages and bytes sent over `counters` (one entry per rank) to
/// equal `cost`'s exact counts; `what` names the algorithm and problem in the messages.
inline void expect_counts(const std::string& what, const Cost& cost, const std::vector<TrafficCounters>& counters) {
  uint64_t max_messages = 0, max_bytes = 0, total_messages = 0, total_bytes = 0;
  for (const auto& c : counters) {
    max_messages = std::max(max_messages, c.messages_sent);
    max_bytes = std::max(max_bytes, c.bytes_sent);
    total_messages += c.messages_sent;
    total_bytes += c.bytes_sent;
  }
  EXPECT_EQ(max_messages, cost.max_messages_sent) << what << ": max messages sent by one rank";
  EXPECT_EQ(max_bytes, cost.max_bytes_sent) << what << ": max bytes sent by one rank";
  EXPECT_EQ(total_messages, cost.total_messages_sent) << what << ": messages sent by all ranks";
  EXPECT_EQ(total_bytes, cost.total_bytes_sent) << what << ": bytes sent by all ranks";
}

}  // namespace concord::testing_util
