#include "device/emulated_stream.h"

#include <cstring>

#include "common/enforce.h"
#include "common/reduce.h"

namespace concord {

uint64_t EmulatedEvent::next_generation() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++recorded_;
}

uint64_t EmulatedEvent::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return recorded_;
}

void EmulatedEvent::complete(uint64_t generation, std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (generation > completed_) completed_ = generation;
    if (error && !error_) error_ = error;
  }
  done_.notify_all();
}

void EmulatedEvent::wait_for(uint64_t generation) {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return completed_ >= generation; });
}

void EmulatedEvent::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return completed_ >= recorded_; });
  if (error_) std::rethrow_exception(error_);
}

bool EmulatedEvent::query() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ >= recorded_;
}

EmulatedStream::EmulatedStream(const EmulatedMemory* memory) : memory_(memory), thread_([this] { run(); }) {}

EmulatedStream::~EmulatedStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void* EmulatedStream::device(const void* data) const {
  return memory_ != nullptr ? memory_->translate(data) : const_cast<void*>(data);
}

void EmulatedStream::enqueue(std::function<void()> work, bool always) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Work{std::move(work), always});
    ++enqueued_;
  }
  changed_.notify_all();
}

void EmulatedStream::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    Work work = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = error_ != nullptr && !work.always;  // after a failure only records run
    lock.unlock();
    std::exception_ptr error;
    if (!skip) {
      try {
        work.run();
      } catch (...) {
        error = std::current_exception();
      }
    }
    lock.lock();
    if (error && !error_) error_ = error;
    ++finished_;
    changed_.notify_all();
  }
}

void EmulatedStream::copy(void* dst, const void* src, size_t bytes, CopyKind kind) {
  (void)kind;  // the emulation translates device addresses whatever the direction
  if (bytes == 0) return;
  enqueue([this, dst, src, bytes] { std::memcpy(device(dst), device(src), bytes); });
}

void EmulatedStream::copy_batch(const std::vector<CopySpan>& spans, CopyKind kind) {
  (void)kind;
  enqueue([this, spans] {
    for (const CopySpan& span : spans)
      if (span.bytes > 0) std::memcpy(device(span.dst), device(span.src), span.bytes);
  });
}

void EmulatedStream::reduce_into(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) {
  dtype_size(dtype);  // unknown codes throw here, on the caller's thread
  if (count == 0) return;
  enqueue([this, dst, a, src, count, dtype, op] {
    concord::reduce_into(device(dst), device(a), device(src), count, dtype, op);
  });
}

void EmulatedStream::scale(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  dtype_size(dtype);
  if (count == 0) return;
  enqueue([this, dst, src, count, dtype, factor] { scale_buffer(device(dst), device(src), count, dtype, factor); });
}

void EmulatedStream::record(Event& event) {
  auto& emulated = dynamic_cast<EmulatedEvent&>(event);
  const uint64_t generation = emulated.next_generation();
  enqueue(
      [this, &emulated, generation] {
        std::exception_ptr error;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          error = error_;
        }
        emulated.complete(generation, error);
      },
      /*always=*/true);
}

void EmulatedStream::wait(Event& event) {
  auto& emulated = dynamic_cast<EmulatedEvent&>(event);
  const uint64_t generation = emulated.recorded();
  enqueue([&emulated, generation] { emulated.wait_for(generation); });
}

void EmulatedStream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = enqueued_;
  changed_.wait(lock, [&] { return finished_ >= target; });
  if (error_) {
    const std::exception_ptr error = error_;
    lock.unlock();
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      CONCORD_THROW(DeviceError, "emulated stream failed: ", e.what());
    }
  }
}

}  // namespace concord
