// Timeline: a Chrome-trace / Perfetto JSON writer showing, per tensor, where its time goes
// (negotiation with a tick per rank as it becomes ready, queueing, fusion-buffer copies,
// the algorithm's activity). Enabled by CONCORD_TIMELINE=path; see the "Timeline" section
// of docs/architecture.md. Horovod's common/timeline is the model.
//
// File format: the "JSON Array Format" of the Trace Event Format, one event per line:
//
//   [
//   {"name":"thread_name","ph":"M","ts":0,"pid":0,"tid":1,"args":{"name":"grad/w0"}}
//   ,{"name":"NEGOTIATE_ALLREDUCE","ph":"B","ts":12,"pid":0,"tid":1}
//   ,{"name":"1","ph":"i","ts":40,"pid":0,"tid":1,"s":"t","args":{"rank":1}}
//   ,{"name":"NEGOTIATE_ALLREDUCE","ph":"E","ts":57,"pid":0,"tid":1}
//   ]
//
// Every tensor name is one trace thread (tid assigned on first use, announced by a
// "thread_name" metadata event); pid is 0. "ts" is in integer microseconds of
// std::chrono::steady_clock since start(), non-decreasing down the file. After stop() the
// file is valid JSON. After a crash it is a prefix of that: chrome://tracing and Perfetto
// accept it as is, and Timeline::repair() turns it into valid JSON.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace concord {

/// Writes a Chrome-trace timeline of per-tensor activities to one file.
///
/// Thread-safety: every method may be called from any thread; one mutex serialises them,
/// so events appear in the file in the order their timestamps were taken. The recording
/// methods return after one relaxed atomic load when the timeline is not active.
///
/// Cost: a recorded event builds and serialises one nlohmann::ordered_json object and
/// appends a line of about 60-100 bytes to an in-memory buffer, all under the mutex: about
/// 1-3 microseconds per event, most of it in nlohmann::json. An allreduce records about 13
/// events per tensor (+1 the first time the tensor is seen). When not active a call costs one
/// atomic load (about a nanosecond). The buffer goes to the file on flush(), stop(), or when
/// it exceeds kAutoFlushBytes.
///
/// Write failures (disk full, ...) after start() do not throw: the timeline logs one error
/// naming the path and strerror, closes the file and becomes inactive, so a broken trace
/// never stops training. The file then holds a prefix repairable by repair().
class Timeline {
 public:
  /// Buffered bytes beyond which a recording call writes the buffer to the file itself.
  static constexpr size_t kAutoFlushBytes = 1 << 20;

  Timeline() = default;
  /// Calls stop().
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// Opens `path` (truncating it), writes the opening "[" line to disk and starts
  /// recording; time 0 of every "ts" is this call. A timeline may be started again after
  /// stop(), with fresh tids. Throws InvalidArgument naming the path and strerror(errno)
  /// if the file cannot be opened, StateError if already started.
  void start(const std::string& path);

  /// Writes the buffered events and the closing "]" line, flushes and closes the file.
  /// No-op if not started. Never throws.
  void stop() noexcept;

  /// True between a successful start() and stop() (or a write failure).
  bool active() const { return active_.load(std::memory_order_relaxed); }

  /// Begins ("B") the negotiation of `tensor`, named "NEGOTIATE_<COLLECTIVE>" with the
  /// collective upper-cased, e.g. negotiate_start("grad/w", "allreduce") ->
  /// "NEGOTIATE_ALLREDUCE". `collective` must not be null (InvalidArgument when active).
  void negotiate_start(const std::string& tensor, const char* collective);

  /// An instant event ("i", thread scope "s":"t") named after `rank` with
  /// args {"rank": rank}: that rank reported `tensor` ready.
  void negotiate_rank_ready(const std::string& tensor, int rank);

  /// Ends ("E") the negotiation of `tensor`.
  void negotiate_end(const std::string& tensor);

  /// Begins ("B") an activity of `tensor` named `activity`: QUEUE, WAIT_FOR_DATA,
  /// MEMCPY_IN_FUSION_BUFFER, the algorithm's name (ALLREDUCE_RING, ...), MEMCPY_OUT.
  void activity_start(const std::string& tensor, const std::string& activity);

  /// Ends ("E") the innermost open activity of `tensor`.
  void activity_end(const std::string& tensor);

  /// Writes the buffered events to the file and flushes it to the OS, so they survive a
  /// crash of the process. The runtime calls it once per cycle. No-op when not active.
  void flush();

  /// Turns the text of a timeline file cut short (process killed, disk full) into valid
  /// JSON: an array of every complete event line, in file order. A line counts when it
  /// parses as a JSON object once its leading "," is removed; anything else (the partial
  /// last line, the closing "]") is dropped. The text of a cleanly stopped file yields the
  /// same array. Empty text yields "[]". Throws InvalidArgument when the first line is not
  /// "[" (not a timeline file).
  static std::string repair(const std::string& text);

 private:
  // All private members below are guarded by mutex_ (active_ is also read without it).
  void record(const std::string& tensor, const char* phase, std::string_view name, std::optional<int> rank);
  int tid_for(const std::string& tensor, int64_t ts);
  void append_line(const std::string& event_json);
  bool write_buffer();
  void close_file();

  mutable std::mutex mutex_;
  std::atomic<bool> active_{false};
  std::FILE* file_ = nullptr;
  std::string path_;
  std::string buffer_;
  bool wrote_event_ = false;
  std::chrono::steady_clock::time_point start_time_{};
  std::unordered_map<std::string, int> tids_;
};

}  // namespace concord
