// Runs a test body on P in-process ranks (threads, src/transport/inprocess_communicator.h)
// such that a failing rank fails the test instead of hanging it: when one rank throws, the
// others stop waiting for messages that will never come. Buffers that messages may still be
// copied into must outlive run_ranks(): keep them outside the body.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "algorithms/algorithm.h"
#include "transport/inprocess_communicator.h"

namespace concord::testing_util {

/// Set once some rank of the current run has failed.
using AbortFlag = std::atomic<bool>;

/// Like run_to_completion(), but throws if another rank failed (`aborted`) or if the
/// algorithm is still in progress after `timeout` (a deadlock).
inline void drive(Algorithm& algorithm, const AbortFlag& aborted,
                  std::chrono::seconds timeout = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (algorithm.progress() == Progress::kInProgress) {
    if (aborted.load()) throw std::runtime_error("stopped: another rank failed");
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("still in progress after " + std::to_string(timeout.count()) + " s: deadlock");
    std::this_thread::yield();
  }
}

/// Runs body(comm, aborted) on P ranks. Returns "" when every rank succeeded, otherwise
/// "rank r: <message>" of the first rank that failed.
inline std::string run_ranks(int P, const std::function<void(Communicator&, const AbortFlag&)>& body) {
  AbortFlag aborted{false};
  std::mutex mutex;
  std::string first_error;
  try {
    InProcessWorld::run(P, [&](Communicator& comm) {
      try {
        body(comm, aborted);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!aborted.exchange(true)) first_error = "rank " + std::to_string(comm.rank()) + ": " + e.what();
        throw;
      }
    });
  } catch (const std::exception& e) {
    if (first_error.empty()) first_error = e.what();
  }
  return first_error;
}

}  // namespace concord::testing_util
