// Engine: push validation, readiness, dispatch to the two pools, completion, waits and
// shutdown. The dependency rule itself lives in var.h; the pools in thread_pool.h.
#include "engine/engine.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <type_traits>
#include <unordered_set>
#include <utility>

#include "common/enforce.h"
#include "engine/thread_pool.h"
#include "engine/var.h"

namespace concord::engine {
namespace {

std::string describe(const PushOptions& options) {
  return options.name.empty() ? std::string("unnamed operation") : "operation '" + options.name + "'";
}

// A new operation running `fn` (SyncFn, AsyncFn, or nullptr for a deletion).
template <typename Fn>
std::unique_ptr<Operation> make_operation(Fn fn, const std::vector<Var*>& reads, const std::vector<Var*>& writes,
                                          const PushOptions& options) {
  if constexpr (!std::is_same_v<Fn, std::nullptr_t>)
    CONCORD_ENFORCE(fn != nullptr, InvalidArgument, describe(options), ": empty function");
  auto op = std::make_unique<Operation>();
  if constexpr (std::is_same_v<Fn, SyncFn>) op->sync = std::move(fn);
  if constexpr (std::is_same_v<Fn, AsyncFn>) op->async = std::move(fn);
  op->reads = reads;
  op->writes = writes;
  op->options = options;
  return op;
}

// The engine whose operation this thread is running (nullptr outside operations): waiting on
// or shutting down that engine from inside would wait for the operation itself.
thread_local const void* running_engine = nullptr;

void check_not_inside_operation(const void* engine, const char* call) {
  CONCORD_ENFORCE(running_engine != engine, StateError, "Engine::", call,
                  " called from inside one of the engine's own operations (it would wait for itself)");
}

}  // namespace

struct Engine::Impl {
  Impl(int cpu_threads, int comm_threads)
      : cpu_pool(cpu_threads, "engine CPU worker pool"), comm_pool(comm_threads, "engine communication pool") {}

  void push(std::unique_ptr<Operation> op);
  void dispatch(const std::vector<Operation*>& ready);
  void execute(Operation* op);
  void finish(Operation* op, std::exception_ptr error);
  void mark_ready(Operation* op);
  void store_error(Operation* op, const std::exception_ptr& error);
  void release_var(Var* var, bool write, std::vector<Operation*>& ready);

  mutable std::mutex mutex;          // guards everything below and every Var
  std::condition_variable progress;  // notified (under mutex) on every completion
  uint64_t next_var_id = 0;
  uint64_t ops_pushed = 0;
  uint64_t ops_completed = 0;
  uint64_t next_error_sequence = 1;
  std::unordered_set<Var*> vars;     // live vars (freed by deletion or by ~Impl)
  std::exception_ptr unowned_error;  // from a failed operation that writes no var
  uint64_t unowned_error_sequence = 0;
  bool accepting = true;  // false once shutdown() began
  PriorityThreadPool cpu_pool;
  PriorityThreadPool comm_pool;
};

void Engine::Impl::push(std::unique_ptr<Operation> op) {
  const std::string what = describe(op->options);
  std::vector<Var*> all = op->reads;
  all.insert(all.end(), op->writes.begin(), op->writes.end());
  for (const Var* var : all) {
    CONCORD_ENFORCE(var != nullptr, InvalidArgument, what, ": null var");
    CONCORD_ENFORCE(var->owner == this, InvalidArgument, what, ": var ", var->id, " belongs to another engine");
  }
  std::vector<Var*> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  const auto duplicate = std::adjacent_find(sorted.begin(), sorted.end());
  CONCORD_ENFORCE(duplicate == sorted.end(), InvalidArgument, what, ": var ",
                  duplicate == sorted.end() ? 0 : (*duplicate)->id,
                  " is listed twice (in reads and writes together, or twice in one list)");

  std::vector<Operation*> ready;
  {
    std::lock_guard<std::mutex> lock(mutex);
    CONCORD_ENFORCE(accepting, StateError, what, ": push after Engine::shutdown()");
    for (const Var* var : all)
      CONCORD_ENFORCE(!var->delete_pushed, InvalidArgument, what, ": var ", var->id, " was passed to delete_var()");
    if (op->deletes != nullptr) op->deletes->delete_pushed = true;
    Operation* raw = op.release();
    ++ops_pushed;
    raw->ungranted = static_cast<int>(all.size()) + 1;  // +1: not ready while appending
    for (Var* var : raw->reads) {
      var->waiting.push_back({raw, false});
      var->grant(ready);
    }
    for (Var* var : raw->writes) {
      ++var->writes_pushed;
      var->waiting.push_back({raw, true});
      var->grant(ready);
    }
    if (--raw->ungranted == 0) ready.push_back(raw);
    for (Operation* r : ready) mark_ready(r);
  }
  dispatch(ready);
}

// Called under the mutex when `op` holds all of its vars: every earlier write on them is
// complete, so an error stored on them now is exactly the one it must inherit.
void Engine::Impl::mark_ready(Operation* op) {
  if (op->deletes != nullptr) return;  // a deletion always runs
  for (const auto* list : {&op->writes, &op->reads})
    for (const Var* var : *list)
      if (var->error && !op->inherited) op->inherited = var->error;
}

void Engine::Impl::dispatch(const std::vector<Operation*>& ready) {
  for (Operation* op : ready) {
    auto& pool = op->options.kind == FnKind::kComm ? comm_pool : cpu_pool;
    pool.submit([this, op] { execute(op); }, op->options.priority);
  }
}

void Engine::Impl::execute(Operation* op) {
  struct RunningScope {  // marks this thread as inside one of this engine's operations
    const void* saved = running_engine;
    explicit RunningScope(const void* engine) { running_engine = engine; }
    ~RunningScope() { running_engine = saved; }
  } scope(this);
  if (op->inherited && !op->options.on_skip) {
    finish(op, op->inherited);
    return;
  }
  if (op->inherited) {  // PushOptions::on_skip: run it as the operation's async function
    op->async = [skip = std::move(op->options.on_skip), inherited = op->inherited](OnComplete done) {
      skip(inherited, std::move(done));
    };
  }
  if (op->async) {
    // The function object stays alive here until it returns, even if it completes (and the
    // operation is freed) from inside itself.
    AsyncFn fn = std::move(op->async);
    auto called = std::make_shared<std::atomic<bool>>(false);
    const std::string what = describe(op->options);
    OnComplete on_complete = [this, op, called, what](std::exception_ptr error) {
      CONCORD_ENFORCE(!called->exchange(true), StateError, what, ": on_complete called more than once");
      finish(op, std::move(error));
    };
    try {
      fn(std::move(on_complete));
    } catch (...) {
      // A throw before completing counts as the operation's error; after completing, the
      // operation is gone and the exception has nowhere to go.
      if (!called->exchange(true)) finish(op, std::current_exception());
    }
    return;
  }
  std::exception_ptr error;
  if (op->sync) {
    SyncFn fn = std::move(op->sync);
    try {
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  }
  finish(op, error);
}

void Engine::Impl::store_error(Operation* op, const std::exception_ptr& error) {
  const uint64_t sequence = next_error_sequence++;
  if (op->writes.empty()) {
    // A skipped read-only operation adds nothing: its error stays where it came from.
    if (!unowned_error && error != op->inherited) {
      unowned_error = error;
      unowned_error_sequence = sequence;
    }
    return;
  }
  for (Var* var : op->writes) {
    if (var->error) continue;  // keep the earlier error (the one this op inherited)
    var->error = error;
    var->error_sequence = sequence;
  }
}

void Engine::Impl::release_var(Var* var, bool write, std::vector<Operation*>& ready) {
  if (write) {
    var->write_running = false;
    ++var->version;
  } else {
    --var->running_reads;
  }
  var->grant(ready);
}

void Engine::Impl::finish(Operation* op, std::exception_ptr error) {
  // Errors and the operation are released after the mutex: destroying an error may run
  // foreign code (a Python exception takes the GIL).
  std::unique_ptr<Operation> owned(op);
  std::exception_ptr dropped;
  std::vector<Operation*> ready;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (error) store_error(op, error);
    for (Var* var : op->reads) release_var(var, false, ready);
    for (Var* var : op->writes) release_var(var, true, ready);
    if (Var* var = op->deletes) {
      if (var->error && !unowned_error) {  // nobody can wait on it any more
        unowned_error = var->error;
        unowned_error_sequence = var->error_sequence;
      }
      dropped = std::move(var->error);
      vars.erase(var);
      delete var;
    }
    for (Operation* r : ready) mark_ready(r);
    ++ops_completed;
    // Notified under the mutex: once shutdown() sees the last completion it may destroy the
    // engine, so nothing below may touch `this` unless there is more work (`ready`).
    progress.notify_all();
  }
  dispatch(ready);
}

Engine::Engine(int cpu_threads, int comm_threads) {
  CONCORD_ENFORCE(cpu_threads >= 1 && comm_threads >= 1, InvalidArgument,
                  "Engine needs at least 1 CPU and 1 communication thread, got cpu_threads=", cpu_threads,
                  " comm_threads=", comm_threads);
  impl_ = std::make_unique<Impl>(cpu_threads, comm_threads);
}

Engine::~Engine() {
  shutdown();
  for (Var* var : impl_->vars) delete var;
}

Var* Engine::new_var() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  CONCORD_ENFORCE(impl_->accepting, StateError, "Engine::new_var() after shutdown()");
  Var* var = new Var(impl_.get(), impl_->next_var_id++);
  impl_->vars.insert(var);
  return var;
}

void Engine::delete_var(Var* var) {
  CONCORD_ENFORCE(var != nullptr, InvalidArgument, "Engine::delete_var(nullptr)");
  auto op = make_operation(nullptr, {}, {var}, PushOptions{FnKind::kCpu, 0, "delete_var"});
  op->deletes = var;
  impl_->push(std::move(op));
}

void Engine::push_sync(SyncFn fn, const std::vector<Var*>& reads, const std::vector<Var*>& writes,
                       const PushOptions& options) {
  impl_->push(make_operation(std::move(fn), reads, writes, options));
}

void Engine::push_async(AsyncFn fn, const std::vector<Var*>& reads, const std::vector<Var*>& writes,
                        const PushOptions& options) {
  impl_->push(make_operation(std::move(fn), reads, writes, options));
}

void Engine::wait_for_var(Var* var) {
  CONCORD_ENFORCE(var != nullptr, InvalidArgument, "Engine::wait_for_var(nullptr)");
  CONCORD_ENFORCE(var->owner == impl_.get(), InvalidArgument, "Engine::wait_for_var(): var ", var->id,
                  " belongs to another engine");
  check_not_inside_operation(impl_.get(), "wait_for_var()");
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(impl_->mutex);
    CONCORD_ENFORCE(!var->delete_pushed, InvalidArgument, "Engine::wait_for_var(): var ", var->id,
                    " was passed to delete_var()");
    const uint64_t target = var->writes_pushed;
    impl_->progress.wait(lock, [&] { return var->version >= target; });
    std::swap(error, var->error);
  }
  if (error) std::rethrow_exception(error);
}

void Engine::wait_all() {
  check_not_inside_operation(impl_.get(), "wait_all()");
  std::exception_ptr error;
  std::vector<std::exception_ptr> cleared;  // released after the mutex (see finish())
  {
    std::unique_lock<std::mutex> lock(impl_->mutex);
    const uint64_t target = impl_->ops_pushed;
    impl_->progress.wait(lock, [&] { return impl_->ops_completed >= target; });
    uint64_t first = impl_->unowned_error_sequence;
    error = impl_->unowned_error;
    for (Var* var : impl_->vars) {
      if (!var->error) continue;
      if (!error || var->error_sequence < first) {
        error = var->error;
        first = var->error_sequence;
      }
      cleared.push_back(std::move(var->error));
    }
    cleared.push_back(std::move(impl_->unowned_error));
  }
  if (error) std::rethrow_exception(error);
}

uint64_t Engine::version(const Var* var) const {
  CONCORD_ENFORCE(var != nullptr, InvalidArgument, "Engine::version(nullptr)");
  CONCORD_ENFORCE(var->owner == impl_.get(), InvalidArgument, "Engine::version(): var ", var->id,
                  " belongs to another engine");
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return var->version;
}

void Engine::shutdown() {
  check_not_inside_operation(impl_.get(), "shutdown()");
  {
    std::unique_lock<std::mutex> lock(impl_->mutex);
    impl_->accepting = false;
    impl_->progress.wait(lock, [&] { return impl_->ops_completed >= impl_->ops_pushed; });
  }
  impl_->cpu_pool.stop();
  impl_->comm_pool.stop();
}

}  // namespace concord::engine
