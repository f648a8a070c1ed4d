// Dependency bookkeeping of the engine (internal): one queue of waiting operations per var
// and the rule that grants them, following the semantics of MXNet's threaded engine
// (docs/architecture.md, "Dependency engine").
//
// Each var keeps its not-yet-granted operations in push order. The head of the queue is
// granted while it may run next to what already holds the var:
//   - a read is granted when no write holds the var (reads before the next write run
//     together);
//   - a write is granted when nothing holds the var, and nothing behind it is granted until
//     it completes (writes exclusive, in push order).
// An operation becomes ready when every var it lists has granted it. All of this state is
// guarded by the engine's single mutex, and a push appends to all of its vars under that
// mutex, so the per-var orders agree with one global push order and cannot form a cycle:
// concurrent pushers never deadlock.
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <vector>

#include "engine/engine.h"

namespace concord::engine {

struct Operation;

/// One var's state. Every field is guarded by the owning engine's mutex.
class Var {
 public:
  Var(const void* owner, uint64_t id) : owner(owner), id(id) {}

  struct Waiting {
    Operation* op;
    bool write;
  };

  /// Grants waiting operations at the head of the queue as far as the rule allows (see the
  /// file comment), appending each operation whose last var this was to `ready`.
  void grant(std::vector<Operation*>& ready);

  const void* const owner;      ///< the engine that made it (mixing engines is refused)
  const uint64_t id;            ///< creation order, for messages
  std::deque<Waiting> waiting;  ///< not yet granted, in push order
  int running_reads = 0;        ///< granted reads not yet completed
  bool write_running = false;   ///< a granted write not yet completed
  uint64_t version = 0;         ///< completed writes (== writes completed so far)
  uint64_t writes_pushed = 0;   ///< writes pushed so far (wait_for_var's target)
  std::exception_ptr error;     ///< stored by a failed or skipped write; cleared by waits
  uint64_t error_sequence = 0;  ///< when `error` was stored (wait_all rethrows the first)
  bool delete_pushed = false;   ///< delete_var() was called: no further pushes
};

/// One pushed operation. Owned by the engine from push until completion.
struct Operation {
  SyncFn sync;    ///< exactly one of sync / async is set,
  AsyncFn async;  ///< except for a deletion (neither)
  std::vector<Var*> reads;
  std::vector<Var*> writes;
  PushOptions options;
  Var* deletes = nullptr;        ///< delete_var(): frees this var when done
  int ungranted = 0;             ///< vars that have not granted it yet (+1 while pushing)
  std::exception_ptr inherited;  ///< error found on its vars when it became ready: skip
};

inline void Var::grant(std::vector<Operation*>& ready) {
  while (!waiting.empty()) {
    const Waiting head = waiting.front();
    if (write_running) return;
    if (head.write) {
      if (running_reads > 0) return;
      write_running = true;
    } else {
      ++running_reads;
    }
    waiting.pop_front();
    if (--head.op->ungranted == 0) ready.push_back(head.op);
    if (head.write) return;
  }
}

}  // namespace concord::engine
