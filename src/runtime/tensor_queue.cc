#include "runtime/tensor_queue.h"

#include <utility>

#include "common/enforce.h"

namespace concord {

void TensorQueue::push(TensorEntry entry) {
  std::lock_guard<std::mutex> lock(mutex_);
  CONCORD_ENFORCE(closed_message_.empty(), StateError, closed_message_);
  const std::string& name = entry.request.name;
  CONCORD_ENFORCE(!table_.contains(name), InvalidArgument, "Tensor '", name, "' is already in flight on rank ",
                  entry.request.rank, ": wait for its handle before submitting the same name again");
  insert(std::move(entry));
  new_count_.store(new_requests_.size(), std::memory_order_release);
  flush_->clear();  // a thread is still submitting
  if (push_waiter_) pushed_.notify_one();
}

void TensorQueue::push_all(std::vector<TensorEntry> entries) {
  std::lock_guard<std::mutex> lock(mutex_);
  CONCORD_ENFORCE(closed_message_.empty(), StateError, closed_message_);
  std::unordered_map<std::string, int> seen;
  for (const auto& entry : entries) {
    const std::string& name = entry.request.name;
    CONCORD_ENFORCE(!table_.contains(name) && seen[name]++ == 0, InvalidArgument, "Tensor '", name,
                    "' is already in flight on rank ", entry.request.rank,
                    ": wait for its handle before submitting the same name again");
  }
  for (auto& entry : entries) insert(std::move(entry));
  new_count_.store(new_requests_.size(), std::memory_order_release);
  flush_->clear();
  if (push_waiter_) pushed_.notify_one();
}

void TensorQueue::insert(TensorEntry entry) {
  Request request = std::move(entry.request);
  entry.request = Request{};
  const auto it = table_.emplace(request.name, std::move(entry)).first;
  try {
    new_requests_.push_back(std::move(request));
  } catch (...) {  // out of memory (push_back's strong guarantee keeps `request`): undo
    table_.erase(it);
    throw;
  }
}

std::vector<Request> TensorQueue::pop_requests() {
  std::vector<Request> next;
  next.reserve(new_count());  // outside the lock: the next burst is likely as long, and pushes
                              // then append without regrowing under the lock
  std::lock_guard<std::mutex> lock(mutex_);
  next.swap(new_requests_);
  new_count_.store(0, std::memory_order_release);
  flush_->clear();
  return next;
}

TensorEntry TensorQueue::take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto node = table_.extract(name);
  CONCORD_ENFORCE(!node.empty(), InternalError, "response for tensor '", name, "' which is not in flight on this rank");
  return std::move(node.mapped());
}

std::optional<TensorEntry> TensorQueue::try_take(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto node = table_.extract(name);
  if (node.empty()) return std::nullopt;
  return std::move(node.mapped());
}

std::vector<std::optional<TensorEntry>> TensorQueue::try_take_all(const std::vector<std::string>& names) {
  std::vector<std::optional<TensorEntry>> entries(names.size());
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < names.size(); ++i) {
    auto node = table_.extract(names[i]);
    if (!node.empty()) entries[i] = std::move(node.mapped());
  }
  return entries;
}

void TensorQueue::close(const std::string& message, bool transport_failed) {
  std::unordered_map<std::string, TensorEntry> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_message_ = message;
    pending.swap(table_);
    new_requests_.clear();
    new_count_.store(0, std::memory_order_release);
  }
  for (auto& [name, entry] : pending) {
    const std::string text = detail::concat(message, " (tensor '", name, "' was pending)");
    entry.handle->fail(transport_failed ? std::make_exception_ptr(CommError(text))
                                        : std::make_exception_ptr(StateError(text)));
  }
}

bool TensorQueue::wait_for_push(std::chrono::microseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout.count() > 0) {
    push_waiter_ = true;
    pushed_.wait_for(lock, timeout, [this] { return !new_requests_.empty() || interrupted_; });
    push_waiter_ = false;
  }
  interrupted_ = false;
  return !new_requests_.empty();
}

void TensorQueue::interrupt() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    interrupted_ = true;
    pushed_.notify_all();
  }
  flush_->request();
}

bool TensorQueue::wait_for_more(size_t seen, std::chrono::microseconds timeout) {
  flush_->wait_for(timeout);
  return new_count() != seen;
}

size_t TensorQueue::in_flight() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return table_.size();
}

}  // namespace concord
