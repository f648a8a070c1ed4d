#include "common/timeline.h"

#include <cctype>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/enforce.h"
#include "common/logging.h"
#include "concord/errors.h"

namespace concord {
namespace {

// ordered_json keeps the keys in the order written (name, ph, ts, pid, tid, ...), which
// makes the file readable by eye; nlohmann::json would sort them.
using Event = nlohmann::ordered_json;

std::string errno_message(int err) { return std::error_code(err, std::generic_category()).message(); }

// One line of JSON. Invalid UTF-8 in a tensor name is replaced by U+FFFD rather than
// throwing, so an odd name never breaks the trace.
std::string to_line(const Event& event) { return event.dump(-1, ' ', false, Event::error_handler_t::replace); }

std::string upper(const char* text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Timeline::~Timeline() { stop(); }

void Timeline::start(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  CONCORD_ENFORCE(file_ == nullptr, StateError, "Timeline::start('", path, "'): already recording to '", path_, "'");
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    const int err = errno;
    CONCORD_THROW(InvalidArgument, "cannot open timeline file '", path, "': ", errno_message(err));
  }
  // The opening bracket goes to disk at once, so even an early crash leaves a file that
  // repair() recognises.
  if (std::fputs("[\n", file) == EOF || std::fflush(file) != 0) {
    const int err = errno;
    std::fclose(file);
    CONCORD_THROW(InvalidArgument, "cannot write timeline file '", path, "': ", errno_message(err));
  }
  // Per-recording state is reset here (not in stop()), so a restarted timeline begins
  // with fresh tids.
  file_ = file;
  path_ = path;
  buffer_.clear();
  wrote_event_ = false;
  tids_.clear();
  start_time_ = std::chrono::steady_clock::now();
  active_.store(true, std::memory_order_relaxed);
}

void Timeline::stop() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ == nullptr) return;
  buffer_ += "]\n";
  if (!write_buffer()) return;  // already logged and closed
  if (std::fclose(file_) != 0) {
    CONCORD_LOG_ERROR("timeline '{}': close failed: {}", path_, errno_message(errno));
  }
  file_ = nullptr;
  active_.store(false, std::memory_order_relaxed);
}

void Timeline::negotiate_start(const std::string& tensor, const char* collective) {
  if (!active()) return;
  CONCORD_ENFORCE(collective != nullptr, InvalidArgument, "Timeline::negotiate_start: null collective for tensor '",
                  tensor, "'");
  record(tensor, "B", "NEGOTIATE_" + upper(collective), std::nullopt);
}

void Timeline::negotiate_rank_ready(const std::string& tensor, int rank) {
  if (!active()) return;
  record(tensor, "i", std::to_string(rank), rank);
}

void Timeline::negotiate_end(const std::string& tensor) {
  if (!active()) return;
  record(tensor, "E", "", std::nullopt);
}

void Timeline::activity_start(const std::string& tensor, const std::string& activity) {
  if (!active()) return;
  record(tensor, "B", activity, std::nullopt);
}

void Timeline::activity_end(const std::string& tensor) {
  if (!active()) return;
  record(tensor, "E", "", std::nullopt);
}

void Timeline::flush() {
  if (!active()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ != nullptr) write_buffer();
}

void Timeline::record(const std::string& tensor, const char* phase, std::string_view name, std::optional<int> rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (file_ == nullptr) return;  // stopped since the caller's active() check
  // Taken under the mutex, so timestamps never decrease down the file.
  const int64_t ts =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start_time_).count();
  const int tid = tid_for(tensor, ts);
  Event event = {{"name", std::string(name)}, {"ph", phase}, {"ts", ts}, {"pid", 0}, {"tid", tid}};
  if (rank) {
    event["s"] = "t";
    event["args"] = {{"rank", *rank}};
  }
  append_line(to_line(event));
  if (buffer_.size() > kAutoFlushBytes) write_buffer();
}

int Timeline::tid_for(const std::string& tensor, int64_t ts) {
  auto it = tids_.find(tensor);
  if (it != tids_.end()) return it->second;
  const int tid = static_cast<int>(tids_.size()) + 1;
  tids_.emplace(tensor, tid);
  const Event meta = {{"name", "thread_name"},     {"ph", "M"}, {"ts", ts}, {"pid", 0}, {"tid", tid},
                      {"args", {{"name", tensor}}}};
  append_line(to_line(meta));
  return tid;
}

void Timeline::append_line(const std::string& event_json) {
  if (wrote_event_) buffer_ += ',';
  buffer_ += event_json;
  buffer_ += '\n';
  wrote_event_ = true;
}

bool Timeline::write_buffer() {
  if (buffer_.empty()) return true;
  const bool ok = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size() && std::fflush(file_) == 0;
  buffer_.clear();
  if (!ok) {
    CONCORD_LOG_ERROR("timeline '{}': write failed ({}); recording stopped", path_, errno_message(errno));
    close_file();
  }
  return ok;
}

void Timeline::close_file() {
  std::fclose(file_);
  file_ = nullptr;
  active_.store(false, std::memory_order_relaxed);
}

std::string Timeline::repair(const std::string& text) {
  if (text.empty()) return "[]\n";
  size_t end = text.find('\n');
  const std::string first = text.substr(0, end);
  CONCORD_ENFORCE(first == "[", InvalidArgument, "Timeline::repair: not a timeline file, first line is '",
                  first.substr(0, 40), "' instead of '['");
  std::string out = "[\n";
  bool any = false;
  while (end != std::string::npos) {
    const size_t begin = end + 1;
    end = text.find('\n', begin);
    std::string_view line(text.data() + begin, (end == std::string::npos ? text.size() : end) - begin);
    if (!line.empty() && line.front() == ',') line.remove_prefix(1);
    // A line with a NUL is dropped: accept() stops at the NUL (found by
    // fuzz/fuzz_timeline_repair.cc: "{...}\0junk" was kept, and the output was not JSON).
    if (line.empty() || line.front() != '{' || line.find('\0') != std::string_view::npos ||
        !nlohmann::json::accept(line))
      continue;
    if (any) out += ',';
    out.append(line);
    out += '\n';
    any = true;
  }
  out += "]\n";
  return out;
}

}  // namespace concord
