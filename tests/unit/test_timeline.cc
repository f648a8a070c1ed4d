// Timeline writer (src/common/timeline.h): the file parses as a Chrome-trace JSON array,
// names each tensor's track, balances B/E per track in time order, escapes odd names,
// survives truncation through repair(), and stays valid under concurrent writers.
#include "common/timeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "concord/errors.h"

namespace concord {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Quotes, a backslash, a newline, a tab, non-ASCII and an astral-plane character.
const std::string kOddName = "grad/\"quoted\"\\back\nslash\t\xC3\xA9\xE2\x86\x92\xF0\x9F\x98\x80";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A fresh directory per test, removed afterwards.
class TimelineTest : public testing::Test {
 protected:
  void SetUp() override {
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("concord_timeline_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path file(const std::string& name) const { return dir_ / name; }

  fs::path dir_;
};

// Writes the events of one negotiated, fused allreduce of `tensor` with ranks 0..2.
void write_allreduce(Timeline& timeline, const std::string& tensor) {
  timeline.activity_start(tensor, "QUEUE");
  timeline.activity_end(tensor);
  timeline.negotiate_start(tensor, "allreduce");
  for (int rank = 0; rank < 3; ++rank) timeline.negotiate_rank_ready(tensor, rank);
  timeline.negotiate_end(tensor);
  timeline.activity_start(tensor, "MEMCPY_IN_FUSION_BUFFER");
  timeline.activity_end(tensor);
  timeline.activity_start(tensor, "ALLREDUCE_RING");
  timeline.activity_end(tensor);
  timeline.activity_start(tensor, "MEMCPY_OUT");
  timeline.activity_end(tensor);
}
constexpr int kEventsPerAllreduce = 13;  // without the thread_name metadata event

// Checks what every timeline must satisfy and returns tid -> tensor name.
std::map<int, std::string> check_trace(const json& trace) {
  std::map<int, std::string> names;
  std::map<int, int> depth;
  int64_t last_ts = 0;
  EXPECT_TRUE(trace.is_array()) << trace.dump();
  for (const json& event : trace) {
    SCOPED_TRACE(event.dump());
    EXPECT_EQ(event.at("pid"), 0);
    const int tid = event.at("tid").get<int>();
    const std::string ph = event.at("ph").get<std::string>();
    const int64_t ts = event.at("ts").get<int64_t>();
    EXPECT_GE(ts, last_ts) << "timestamps decrease down the file";
    last_ts = ts;
    if (ph == "M") {
      EXPECT_EQ(event.at("name"), "thread_name");
      EXPECT_EQ(names.count(tid), 0u) << "tid " << tid << " named twice";
      EXPECT_EQ(depth.count(tid), 0u) << "tid " << tid << " used before it was named";
      names[tid] = event.at("args").at("name").get<std::string>();
    } else {
      EXPECT_EQ(names.count(tid), 1u) << "event on unnamed tid " << tid;
      if (ph == "B") ++depth[tid];
      if (ph == "E") {
        EXPECT_GE(--depth[tid], 0) << "E without B on tid " << tid;
      }
      if (ph == "i") {
        EXPECT_EQ(event.at("s"), "t");
        EXPECT_EQ(event.at("name"), std::to_string(event.at("args").at("rank").get<int>()));
      }
      EXPECT_TRUE(ph == "B" || ph == "E" || ph == "i") << "unexpected phase " << ph;
    }
  }
  for (const auto& [tid, open] : depth) EXPECT_EQ(open, 0) << "unclosed B on tid " << tid;
  return names;
}

TEST_F(TimelineTest, EventsFormAChromeTraceArrayWithOneNamedTrackPerTensor) {
  const std::vector<std::string> tensors = {"grad/w0", kOddName, "grad/b0"};
  Timeline timeline;
  timeline.start(file("trace.json").string());
  EXPECT_TRUE(timeline.active());
  for (const std::string& tensor : tensors) write_allreduce(timeline, tensor);
  write_allreduce(timeline, "grad/w0");  // a second step on an existing track
  timeline.stop();
  EXPECT_FALSE(timeline.active());

  const std::string text = read_text(file("trace.json"));
  const json trace = json::parse(text);
  const auto names = check_trace(trace);
  ASSERT_EQ(trace.size(), tensors.size() * (1 + kEventsPerAllreduce) + kEventsPerAllreduce);

  std::set<std::string> named;
  for (const auto& [tid, name] : names) named.insert(name);
  EXPECT_EQ(named, std::set<std::string>(tensors.begin(), tensors.end()));

  std::map<std::string, int> tid_of;
  for (const auto& [tid, name] : names) tid_of[name] = tid;
  std::map<int, int> negotiations, rank_ticks;
  std::map<int, std::set<int>> ranks_seen;
  std::map<int, std::vector<std::string>> activities;
  for (const json& event : trace) {
    const int tid = event["tid"].get<int>();
    if (event["ph"] == "B" && event["name"] == "NEGOTIATE_ALLREDUCE") ++negotiations[tid];
    if (event["ph"] == "B" && event["name"] != "NEGOTIATE_ALLREDUCE")
      activities[tid].push_back(event["name"].get<std::string>());
    if (event["ph"] == "i") {
      ++rank_ticks[tid];
      ranks_seen[tid].insert(event["args"]["rank"].get<int>());
    }
  }
  const std::vector<std::string> one_step = {"QUEUE", "MEMCPY_IN_FUSION_BUFFER", "ALLREDUCE_RING", "MEMCPY_OUT"};
  for (const std::string& tensor : tensors) {
    SCOPED_TRACE(tensor);
    const int tid = tid_of.at(tensor);
    const int steps = tensor == "grad/w0" ? 2 : 1;
    EXPECT_EQ(negotiations[tid], steps);
    EXPECT_EQ(rank_ticks[tid], 3 * steps);
    EXPECT_EQ(ranks_seen[tid], (std::set<int>{0, 1, 2}));
    std::vector<std::string> expected;
    for (int s = 0; s < steps; ++s) expected.insert(expected.end(), one_step.begin(), one_step.end());
    EXPECT_EQ(activities[tid], expected);
  }
}

TEST_F(TimelineTest, FileIsOneEventPerLineCommaPrefixedAndBracketed) {
  Timeline timeline;
  timeline.start(file("trace.json").string());
  write_allreduce(timeline, kOddName);
  timeline.stop();

  const auto lines = split_lines(read_text(file("trace.json")));
  ASSERT_EQ(lines.size(), 1u + 1 + kEventsPerAllreduce + 1);
  EXPECT_EQ(lines.front(), "[");
  EXPECT_EQ(lines.back(), "]");
  EXPECT_EQ(lines[1].front(), '{') << lines[1];
  EXPECT_TRUE(json::parse(lines[1]).is_object()) << lines[1];
  for (size_t i = 2; i + 1 < lines.size(); ++i) {
    ASSERT_EQ(lines[i].substr(0, 2), ",{") << "line " << i << ": " << lines[i];
    EXPECT_TRUE(json::parse(lines[i].substr(1)).is_object()) << "line " << i << ": " << lines[i];
  }
  // Keys in the documented order, so the file reads well by eye.
  EXPECT_EQ(lines[1].rfind("{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2].rfind(",{\"name\":\"QUEUE\",\"ph\":\"B\",\"ts\":", 0), 0u) << lines[2];
}

TEST_F(TimelineTest, TimestampsAreMicrosecondsSinceStart) {
  Timeline timeline;
  const auto before = std::chrono::steady_clock::now();
  timeline.start(file("trace.json").string());
  timeline.activity_start("t", "ALLREDUCE_RING");
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  timeline.activity_end("t");
  const auto elapsed_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - before).count();
  timeline.stop();

  const json trace = json::parse(read_text(file("trace.json")));
  ASSERT_EQ(trace.size(), 3u);
  const int64_t begin = trace[1]["ts"].get<int64_t>();
  const int64_t end = trace[2]["ts"].get<int64_t>();
  EXPECT_GE(begin, 0);
  EXPECT_LE(begin, end);
  EXPECT_GE(end - begin, 20000) << "the 20 ms sleep is not 20000 us";
  EXPECT_LE(end, elapsed_us) << "timestamps are not relative to start()";
}

TEST_F(TimelineTest, InactiveTimelineWritesNothing) {
  Timeline never_started;
  EXPECT_FALSE(never_started.active());
  write_allreduce(never_started, "grad/w0");
  never_started.flush();
  never_started.stop();
  EXPECT_TRUE(fs::is_empty(dir_)) << "an unstarted timeline created a file";

  Timeline stopped;
  stopped.start(file("trace.json").string());
  stopped.activity_start("grad/w0", "QUEUE");
  stopped.activity_end("grad/w0");
  stopped.stop();
  const std::string closed = read_text(file("trace.json"));
  write_allreduce(stopped, "grad/w0");
  stopped.flush();
  stopped.stop();
  EXPECT_EQ(read_text(file("trace.json")), closed) << "events recorded after stop()";
  EXPECT_EQ(json::parse(closed).size(), 3u);
}

TEST_F(TimelineTest, StartTwiceThrowsStateErrorAndKeepsRecording) {
  Timeline timeline;
  timeline.start(file("first.json").string());
  try {
    timeline.start(file("second.json").string());
    FAIL() << "second start() did not throw";
  } catch (const StateError& e) {
    EXPECT_NE(std::string(e.what()).find("first.json"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(file("second.json")));
  EXPECT_TRUE(timeline.active());
  write_allreduce(timeline, "grad/w0");
  timeline.stop();
  EXPECT_EQ(json::parse(read_text(file("first.json"))).size(), 1u + kEventsPerAllreduce);
}

TEST_F(TimelineTest, UnwritablePathThrowsInvalidArgumentNamingPathAndReason) {
  Timeline timeline;
  const std::string path = "/nonexistent-dir/x.json";
  try {
    timeline.start(path);
    FAIL() << "start() on " << path << " did not throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
  }
  EXPECT_FALSE(timeline.active());
  // A failed start leaves the timeline startable.
  timeline.start(file("trace.json").string());
  EXPECT_TRUE(timeline.active());
}

TEST_F(TimelineTest, WriteErrorAtStartThrowsInvalidArgument) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  Timeline timeline;
  try {
    timeline.start("/dev/full");
    FAIL() << "start() on /dev/full did not throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/dev/full"), std::string::npos) << what;
    EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
  }
  EXPECT_FALSE(timeline.active());
}

TEST_F(TimelineTest, StopWhileWritersRunLeavesValidJson) {
  Timeline timeline;
  timeline.start(file("trace.json").string());
  std::atomic<bool> done{false};
  std::atomic<int> calls{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::string tensor = "thread" + std::to_string(t);
      while (!done.load()) {
        timeline.negotiate_rank_ready(tensor, t);
        timeline.flush();
        calls.fetch_add(1);
      }
    });
  }
  while (calls.load() < 1000) std::this_thread::yield();
  timeline.stop();
  const std::string closed = read_text(file("trace.json"));
  while (calls.load() < 2000) std::this_thread::yield();  // writers keep calling after stop
  done = true;
  for (auto& thread : threads) thread.join();

  EXPECT_EQ(read_text(file("trace.json")), closed) << "events written after stop()";
  const json trace = json::parse(closed);
  check_trace(trace);
  EXPECT_GE(trace.size(), 1000u);
}

TEST_F(TimelineTest, RestartAfterStopWritesAFreshFileWithFreshTracks) {
  Timeline timeline;
  timeline.start(file("a.json").string());
  write_allreduce(timeline, "grad/w0");
  write_allreduce(timeline, "grad/w1");
  timeline.stop();
  timeline.start(file("b.json").string());
  write_allreduce(timeline, "grad/w1");
  timeline.stop();

  const json b = json::parse(read_text(file("b.json")));
  const auto names = check_trace(b);
  ASSERT_EQ(b.size(), 1u + kEventsPerAllreduce);
  EXPECT_EQ(names, (std::map<int, std::string>{{1, "grad/w1"}}));
}

TEST_F(TimelineTest, DestructorClosesTheArray) {
  {
    Timeline timeline;
    timeline.start(file("trace.json").string());
    write_allreduce(timeline, "grad/w0");
  }
  EXPECT_EQ(json::parse(read_text(file("trace.json"))).size(), 1u + kEventsPerAllreduce);
}

TEST_F(TimelineTest, FlushPutsEventsOnDiskBeforeStop) {
  Timeline timeline;
  timeline.start(file("trace.json").string());
  EXPECT_EQ(read_text(file("trace.json")), "[\n") << "start() must put '[' on disk";
  write_allreduce(timeline, "grad/w0");
  timeline.flush();
  // What a crash right now would leave: every event, no closing bracket.
  const std::string on_disk = read_text(file("trace.json"));
  EXPECT_NE(on_disk.back(), ']');
  EXPECT_THROW(json::parse(on_disk), json::parse_error);
  const json repaired = json::parse(Timeline::repair(on_disk));
  check_trace(repaired);
  EXPECT_EQ(repaired.size(), 1u + kEventsPerAllreduce);
  timeline.stop();
}

class TimelineRepair : public TimelineTest {
 protected:
  // A stopped timeline's text and its parsed events.
  void write_complete() {
    Timeline timeline;
    timeline.start(file("trace.json").string());
    write_allreduce(timeline, "grad/w0");
    write_allreduce(timeline, kOddName);
    timeline.stop();
    text_ = read_text(file("trace.json"));
    full_ = json::parse(text_);
  }
  std::string text_;
  json full_;
};

TEST_F(TimelineRepair, CutInTheMiddleOfTheLastLineKeepsEveryCompleteEvent) {
  write_complete();
  // Drop "]\n", then half of the last event line.
  std::string cut = text_.substr(0, text_.size() - 2);
  const size_t last_line = cut.rfind('\n', cut.size() - 2) + 1;
  cut.resize(last_line + (cut.size() - last_line) / 2);
  EXPECT_THROW(json::parse(cut), json::parse_error);

  const json repaired = json::parse(Timeline::repair(cut));
  ASSERT_TRUE(repaired.is_array());
  ASSERT_EQ(repaired.size(), full_.size() - 1);
  for (size_t i = 0; i < repaired.size(); ++i) EXPECT_EQ(repaired[i], full_[i]) << "event " << i;
}

TEST_F(TimelineRepair, EveryCutPositionYieldsTheCompleteLinesBeforeIt) {
  write_complete();
  // Where each event line's text ends (before its newline): lines 1 .. size-2 of the file.
  std::vector<size_t> event_ends;
  for (size_t pos = text_.find('\n') + 1; pos < text_.size(); pos = text_.find('\n', pos) + 1) {
    if (text_[pos] != ']') event_ends.push_back(text_.find('\n', pos));
  }
  ASSERT_EQ(event_ends.size(), full_.size());
  for (size_t n = 0; n <= text_.size(); ++n) {
    const std::string cut = text_.substr(0, n);
    json repaired;
    ASSERT_NO_THROW(repaired = json::parse(Timeline::repair(cut))) << "cut at " << n;
    // The events whose line is entirely inside the cut (newline or not).
    size_t complete = 0;
    while (complete < event_ends.size() && event_ends[complete] <= n) ++complete;
    ASSERT_EQ(repaired.size(), complete) << "cut at " << n;
    for (size_t i = 0; i < complete; ++i) ASSERT_EQ(repaired[i], full_[i]) << "cut at " << n;
  }
}

TEST_F(TimelineRepair, CompleteFileRepairsToItselfAndOtherTextIsRejected) {
  write_complete();
  EXPECT_EQ(json::parse(Timeline::repair(text_)), full_);
  EXPECT_EQ(json::parse(Timeline::repair("")), json::array());
  EXPECT_EQ(json::parse(Timeline::repair("[")), json::array());
  EXPECT_EQ(json::parse(Timeline::repair("[\n{\"name\":\"thread_na")), json::array());
  EXPECT_THROW(Timeline::repair("{\"traceEvents\": []}"), InvalidArgument);
}

TEST_F(TimelineTest, FourConcurrentWritersProduceValidJsonWithAllEvents) {
  constexpr int kThreads = 4;
  constexpr int kTensorsPerThread = 3;
  constexpr int kSteps = 200;
  Timeline timeline;
  timeline.start(file("trace.json").string());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&timeline, t] {
      for (int step = 0; step < kSteps; ++step) {
        for (int k = 0; k < kTensorsPerThread; ++k) {
          write_allreduce(timeline, "thread" + std::to_string(t) + "/" + kOddName + std::to_string(k));
        }
        if (step % 16 == 0) timeline.flush();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  timeline.stop();

  const json trace = json::parse(read_text(file("trace.json")));
  const auto names = check_trace(trace);
  constexpr int kTensors = kThreads * kTensorsPerThread;
  EXPECT_EQ(names.size(), static_cast<size_t>(kTensors));
  ASSERT_EQ(trace.size(), static_cast<size_t>(kTensors * (1 + kSteps * kEventsPerAllreduce)));
  std::map<int, int> per_tid;
  for (const json& event : trace) ++per_tid[event["tid"].get<int>()];
  for (const auto& [tid, count] : per_tid) EXPECT_EQ(count, 1 + kSteps * kEventsPerAllreduce) << names.at(tid);
}

TEST_F(TimelineTest, LargeBurstIsFlushedAutomaticallyAndStaysValid) {
  Timeline timeline;
  timeline.start(file("trace.json").string());
  const std::string activity(200, 'A');
  size_t events = 0;
  while (events * 200 < 2 * Timeline::kAutoFlushBytes) {
    timeline.activity_start("grad/w0", activity);
    timeline.activity_end("grad/w0");
    events += 2;
  }
  EXPECT_GT(fs::file_size(file("trace.json")), Timeline::kAutoFlushBytes)
      << "the buffer grew past kAutoFlushBytes without being written";
  timeline.stop();
  const json trace = json::parse(read_text(file("trace.json")));
  check_trace(trace);
  EXPECT_EQ(trace.size(), events + 1);
}

}  // namespace
}  // namespace concord
