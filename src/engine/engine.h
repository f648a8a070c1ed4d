// Concord's dependency engine: tasks with read and write sets over vars, run by a CPU
// worker pool and a communication thread as soon as their dependencies are met
// (docs/architecture.md, "Dependency engine"; Mamidala, "Efficient Embedding of MPI Collectives in
// MXNET DAGs for scaling Deep Learning", and the semantics of MXNet's threaded engine).
//
// Contract: per var, operations take effect in push order; writes are exclusive; the reads
// between two writes may run concurrently; operations sharing no var are unordered. An
// error (exception from a synchronous fn, or passed to on_complete) is stored on the
// operation's written vars; later operations reading or writing a failed var are skipped
// and inherit it; wait_for_var()/wait_all() rethrow it once and clear it. An operation that
// must act even when skipped (a collective whose peers wait for it) sets
// PushOptions::on_skip: it then runs that callback with the inherited error instead.
//
// Threads: `cpu_threads` workers and `comm_threads` communication threads, each pool with a
// ready queue ordered by priority; idle threads sleep on condition variables. The rule and
// bookkeeping are in var.h, the pools in thread_pool.h; docs/architecture.md ("Dependency
// engine") has the whole picture.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace concord::engine {

/// A tag for one piece of data. Created by Engine::new_var(), owned by the engine; the
/// pointer stays valid until delete_var()'s deferred deletion has run.
class Var;

/// Which pool runs an operation.
enum class FnKind {
  kCpu,   ///< the CPU worker pool
  kComm,  ///< the communication thread (collectives; issued in dependency order)
};

/// Callback an asynchronous operation calls exactly once, from any thread: nullptr on
/// success, else the error. A second call throws StateError.
using OnComplete = std::function<void(std::exception_ptr error)>;
using SyncFn = std::function<void()>;
using AsyncFn = std::function<void(OnComplete on_complete)>;
/// Runs instead of an operation that would be skipped: `inherited` is the error found on
/// its vars (the earliest stored on a var it lists). It completes like an AsyncFn.
using SkipFn = std::function<void(std::exception_ptr inherited, OnComplete on_complete)>;

/// Options of one push.
struct PushOptions {
  FnKind kind = FnKind::kCpu;
  int priority = 0;  ///< higher runs first among ready operations of one pool
  std::string name;  ///< for error messages and debugging
  /// Empty (default): an operation whose vars hold an error is skipped, and the error is
  /// stored on its writes. Set: the engine calls on_skip(inherited, on_complete) on the
  /// operation's pool thread instead, with the operation's vars held as usual; what it
  /// passes to on_complete is stored on the writes like any operation's error (nullptr:
  /// nothing is added, so later operations on the writes run). The inherited error stays
  /// where it was stored (wait_for_var on that var still rethrows it). A throw from
  /// on_skip before it completes is the operation's error. Use it where peers depend on
  /// the operation taking place (a collective), so that it can report the failure to them
  /// instead of vanishing.
  SkipFn on_skip = nullptr;
};

class Engine {
 public:
  /// Starts `cpu_threads` CPU workers (>= 1) and `comm_threads` communication threads
  /// (>= 1). Throws InvalidArgument for counts below 1.
  explicit Engine(int cpu_threads = 2, int comm_threads = 1);
  /// shutdown().
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  /// A new var with version 0. Throws StateError after shutdown().
  Var* new_var();
  /// Deletes `var` after every operation pushed on it so far (a deferred write that always
  /// runs, even on a failed var; an error left on it is kept for wait_all()). Using `var`
  /// afterwards (push, wait_for_var, a second delete_var) throws InvalidArgument until the
  /// deletion has run, and is undefined after it.
  void delete_var(Var* var);

  /// Queues `fn` to run once every earlier operation on `writes` and the earlier writes on
  /// `reads` are done. Throws InvalidArgument (naming options.name) when a var appears twice
  /// or in both lists, is null, deleted or from another engine; StateError after shutdown().
  /// An exception thrown by `fn` is stored on `writes` (see the file comment).
  void push_sync(SyncFn fn, const std::vector<Var*>& reads, const std::vector<Var*>& writes,
                 const PushOptions& options = {});
  /// As push_sync(), for a function that finishes later by calling on_complete (its vars
  /// stay held until then). A throw from `fn` before it completes is the operation's error.
  void push_async(AsyncFn fn, const std::vector<Var*>& reads, const std::vector<Var*>& writes,
                  const PushOptions& options = {});

  /// Blocks until every write pushed on `var` so far is done (reads still pending do not
  /// count); rethrows (and clears) an error stored on it. Throws StateError when called
  /// from one of this engine's operations, InvalidArgument for a deleted or foreign var.
  void wait_for_var(Var* var);
  /// Blocks until every operation pushed so far is done; rethrows the first stored error
  /// (the earliest stored, on any var or from an operation writing none) and clears all of
  /// them. Throws StateError when called from one of this engine's operations.
  void wait_all();

  /// Completed writes on `var` (skipped writes of failed dependencies count too).
  uint64_t version(const Var* var) const;

  /// Refuses new pushes, runs every pending operation to completion (waiting for async
  /// ones), then joins the threads; stored errors are dropped. Idempotent and safe from
  /// several threads; StateError from inside one of the engine's operations.
  void shutdown();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace concord::engine
