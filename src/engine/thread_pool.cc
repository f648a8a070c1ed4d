#include "engine/thread_pool.h"

#include <utility>

#include "common/enforce.h"

namespace concord::engine {

PriorityThreadPool::PriorityThreadPool(int num_threads, std::string name) : name_(std::move(name)) {
  CONCORD_ENFORCE(num_threads >= 1, InvalidArgument, name_, " needs at least 1 thread, got ", num_threads);
  threads_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this] { worker_loop(); });
}

PriorityThreadPool::~PriorityThreadPool() { stop(); }

void PriorityThreadPool::submit(std::function<void()> task, int priority) {
  std::lock_guard<std::mutex> lock(mutex_);
  CONCORD_ENFORCE(!stopping_, StateError, name_, ": submit after stop()");
  queue_.push(Task{priority, next_sequence_++, std::move(task)});
  // Notified under the mutex: the task may finish the engine's last operation and let the
  // owner stop and destroy the pool while a foreign submitting thread is still here.
  ready_.notify_one();
}

void PriorityThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  // Concurrent callers wait here until the first one has joined every thread.
  std::call_once(joined_, [this] {
    for (auto& thread : threads_) thread.join();
  });
}

void PriorityThreadPool::worker_loop() {
  for (;;) {
    std::function<void()> run;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      // priority_queue::top() is const; the task is moved out through const_cast, which is
      // safe because pop() follows immediately and never reads the moved-from function.
      run = std::move(const_cast<Task&>(queue_.top()).run);
      queue_.pop();
    }
    run();
  }
}

}  // namespace concord::engine
