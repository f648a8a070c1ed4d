// A fixed set of threads serving one priority queue of tasks: the engine's CPU worker pool
// and its communication thread(s) are two instances (docs/architecture.md,
// "Dependency engine"). Higher priority first; equal priorities in submission order. Idle
// threads sleep on a condition variable (no busy-waiting).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <vector>

namespace concord::engine {

/// Runs submitted tasks on `num_threads` threads, highest priority first, FIFO among equal
/// priorities. Tasks must not throw (the engine catches around user functions); a task
/// that throws terminates the process.
class PriorityThreadPool {
 public:
  /// Starts `num_threads` (>= 1) threads. Throws InvalidArgument for fewer; `name` appears
  /// in that message ("CPU worker pool", "communication pool").
  PriorityThreadPool(int num_threads, std::string name);
  /// stop().
  ~PriorityThreadPool();
  PriorityThreadPool(const PriorityThreadPool&) = delete;
  PriorityThreadPool& operator=(const PriorityThreadPool&) = delete;

  /// Queues `task` with `priority` (higher runs first). Never blocks on running tasks.
  /// Throws StateError after stop().
  void submit(std::function<void()> task, int priority);

  /// Runs the tasks already queued, then joins the threads. Idempotent and safe to call
  /// from several threads; must not be called from one of the pool's own threads.
  void stop();

  /// Threads in the pool (also after stop()).
  int size() const { return static_cast<int>(threads_.size()); }

 private:
  struct Task {
    int priority;
    uint64_t sequence;  // submission order breaks priority ties (FIFO)
    std::function<void()> run;
  };
  struct LaterFirst {  // std::priority_queue pops the "largest": highest priority, oldest
    bool operator()(const Task& a, const Task& b) const {
      if (a.priority != b.priority) return a.priority < b.priority;
      return a.sequence > b.sequence;
    }
  };

  void worker_loop();

  std::string name_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::priority_queue<Task, std::vector<Task>, LaterFirst> queue_;
  uint64_t next_sequence_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // fixed after construction
  std::once_flag joined_;
};

}  // namespace concord::engine
