// The stream and event of EmulatedDevice (device/emulated_device.h): a worker thread
// running closures in order, and a counter pair (recorded / completed) per event.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "device/device.h"
#include "device/emulated_memory.h"

namespace concord {

/// Event state shared between the recording stream's thread and waiters.
class EmulatedEvent : public Event {
 public:
  void synchronize() override;
  bool query() override;
  /// Called by the host when recording: the generation the stream will complete.
  uint64_t next_generation();
  /// Called by the stream thread: everything up to `generation` is done (`error` set when
  /// the stream failed before reaching it).
  void complete(uint64_t generation, std::exception_ptr error);
  /// Blocks until the generation recorded before this call is complete (stream waits).
  void wait_for(uint64_t generation);
  uint64_t recorded() const;

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_;
  uint64_t recorded_ = 0;
  uint64_t completed_ = 0;
  std::exception_ptr error_;
};

class EmulatedStream : public Stream {
 public:
  /// `memory` translates device addresses (nullptr: device memory is host memory).
  explicit EmulatedStream(const EmulatedMemory* memory);
  /// Finishes the enqueued work, then joins the thread.
  ~EmulatedStream() override;

  void copy(void* dst, const void* src, size_t bytes, CopyKind kind) override;
  void copy_batch(const std::vector<CopySpan>& spans, CopyKind kind) override;
  void reduce_into(void* dst, const void* a, const void* src, size_t count, DataType dtype, ReduceOp op) override;
  void scale(void* dst, const void* src, size_t count, DataType dtype, double factor) override;
  void record(Event& event) override;
  void wait(Event& event) override;
  void synchronize() override;

 private:
  // `always`: runs even after an earlier failure (event records, so waiters wake up).
  void enqueue(std::function<void()> work, bool always = false);
  void run();
  void* device(const void* data) const;  // the address the stream thread may touch

  const EmulatedMemory* memory_;
  std::mutex mutex_;
  std::condition_variable changed_;
  struct Work {
    std::function<void()> run;
    bool always = false;
  };
  std::deque<Work> queue_;
  uint64_t enqueued_ = 0;
  uint64_t finished_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;  // the first failure; later work is skipped
  std::thread thread_;
};

}  // namespace concord
