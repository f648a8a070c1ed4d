#include "kvstore/collective_driver.h"

#include "common/enforce.h"

namespace concord::kvstore {

CollectiveDriver::CollectiveDriver() : thread_([this] { loop(); }) {}

CollectiveDriver::~CollectiveDriver() { stop(); }

void CollectiveDriver::submit(std::unique_ptr<Algorithm> operation, Done done) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    CONCORD_ENFORCE(!stopping_, StateError, "KVStore collective submitted after the driver stopped");
    incoming_.push_back(Job{std::move(operation), std::move(done)});
  }
  wake_.notify_one();
}

void CollectiveDriver::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void CollectiveDriver::loop() {
  std::vector<Job> active;
  Backoff backoff;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (active.empty()) wake_.wait(lock, [&] { return stopping_ || !incoming_.empty(); });
      if (!incoming_.empty()) backoff = Backoff();
      for (auto& job : incoming_) active.push_back(std::move(job));
      incoming_.clear();
      if (active.empty() && stopping_) return;
    }
    bool finished_one = false;
    for (auto it = active.begin(); it != active.end();) {
      std::exception_ptr error;
      bool done = false;
      try {
        done = it->operation->progress() == Progress::kDone;
      } catch (...) {
        error = std::current_exception();
        done = true;
      }
      if (!done) {
        ++it;
        continue;
      }
      Done callback = std::move(it->done);
      it = active.erase(it);
      callback(error);
      finished_one = true;
    }
    if (finished_one) {
      backoff = Backoff();
    } else if (!active.empty()) {
      backoff.wait();
    }
  }
}

}  // namespace concord::kvstore
