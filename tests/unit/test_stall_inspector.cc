// The stall inspector (src/control/stall_inspector.h): warnings name the tensor, the ranks
// that submitted it, the missing ranks and the seconds; they come once past the warning time
// and again only after another warning period; shutdown only when enabled and exceeded.
// Time is synthetic (time points built from seconds), so nothing sleeps.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "concord/errors.h"
#include "control/stall_inspector.h"

namespace concord {
namespace {

using Clock = StallInspector::Clock;

// A time point `seconds` after an arbitrary origin.
Clock::time_point at(double seconds) {
  return Clock::time_point{} + std::chrono::hours(1) +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void submit(StallInspector& inspector, const std::string& tensor, std::vector<int> ranks, double seconds,
            const char* collective = "allreduce") {
  for (int rank : ranks) inspector.record_submitted(tensor, collective, rank, at(seconds));
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.starts_with(prefix); }
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The tensor name quoted at the start of a warning line ("Tensor 'x' ..." -> "x").
std::string tensor_of(const std::string& warning) {
  const size_t begin = warning.find('\'') + 1;
  return warning.substr(begin, warning.find('\'', begin) - begin);
}

TEST(StallInspectorWarning, NoneBeforeWarningTime) {
  StallInspector inspector(4, 60, 0);
  submit(inspector, "a", {0, 2}, 0);
  for (double t : {0.0, 30.0, 59.9, 60.0}) {
    const StallReport report = inspector.check(at(t));
    EXPECT_TRUE(report.warnings.empty()) << "at " << t << " s: " << report.warnings.front();
    EXPECT_FALSE(report.shutdown) << "at " << t << " s";
  }
}

TEST(StallInspectorWarning, ExactlyOneJustAfterWarningTimeNamingTensorRanksAndSeconds) {
  StallInspector inspector(4, 60, 0);
  submit(inspector, "a", {2, 0}, 0);
  const StallReport report = inspector.check(at(61.2));
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_PRED2(starts_with, report.warnings[0],
               "Tensor 'a' (allreduce) has been submitted by ranks [0, 2] but not by ranks "
               "[1, 3] for 61.2 s;");
  EXPECT_FALSE(report.shutdown);
  EXPECT_EQ(report.shutdown_message, "");
}

TEST(StallInspectorWarning, OnAProcessSetNamesGlobalRanksAndTheSet) {
  StallInspector inspector(3, 60, 5, RankNames{{1, 4, 6}, " in process set 2 (ranks [1, 4, 6])"});
  submit(inspector, "a", {2, 0}, 0);
  const StallReport report = inspector.check(at(61.2));
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_PRED2(starts_with, report.warnings[0],
               "Tensor 'a' (allreduce) in process set 2 (ranks [1, 4, 6]) has been "
               "submitted by ranks [1, 6] but not by ranks [4] for 61.2 s;");
  EXPECT_EQ(report.shutdown_message,
            "Stall shutdown after 5 s (CONCORD_STALL_SHUTDOWN_TIME): tensor 'a' is missing "
            "on ranks [4] in process set 2 (ranks [1, 4, 6])");
}

TEST(StallInspectorWarning, NoRepeatOnNextCallButAgainAfterAnotherPeriod) {
  StallInspector inspector(3, 60, 0);
  submit(inspector, "a", {1}, 0);
  EXPECT_EQ(inspector.check(at(61)).warnings.size(), 1u);
  EXPECT_EQ(inspector.check(at(62)).warnings.size(), 0u);
  EXPECT_EQ(inspector.check(at(120)).warnings.size(), 0u);
  const StallReport again = inspector.check(at(121.5));
  ASSERT_EQ(again.warnings.size(), 1u);
  EXPECT_PRED2(contains, again.warnings[0], "by ranks [1] but not by ranks [0, 2] for 121.5 s;");
  EXPECT_EQ(inspector.check(at(122)).warnings.size(), 0u);
}

TEST(StallInspectorWarning, SubmittedByAllAndRemovedIsNeverReported) {
  StallInspector inspector(4, 1, 2);
  submit(inspector, "done", {3, 1, 0, 2}, 0);
  EXPECT_EQ(inspector.tracked(), 1u);
  // Submitted everywhere but not yet removed: not stalled either.
  StallReport report = inspector.check(at(100));
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();
  EXPECT_FALSE(report.shutdown) << report.shutdown_message;
  inspector.remove("done");
  EXPECT_EQ(inspector.tracked(), 0u);
  report = inspector.check(at(1000));
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();
  EXPECT_FALSE(report.shutdown) << report.shutdown_message;
}

TEST(StallInspectorWarning, RemovedWhileStalledIsForgotten) {
  StallInspector inspector(2, 1, 0);
  submit(inspector, "erased", {0}, 0);
  inspector.remove("erased");
  EXPECT_EQ(inspector.tracked(), 0u);
  EXPECT_TRUE(inspector.check(at(10)).warnings.empty());
}

TEST(StallInspectorShutdown, OnlyWhenExceededAndNamesEveryStalledTensor) {
  StallInspector inspector(4, 60, 5);
  submit(inspector, "b", {0, 1}, 1);
  submit(inspector, "a", {0, 2, 3}, 0);
  StallReport report = inspector.check(at(5));
  EXPECT_FALSE(report.shutdown) << report.shutdown_message;
  EXPECT_EQ(report.shutdown_message, "");

  report = inspector.check(at(5.5));
  EXPECT_TRUE(report.shutdown);
  // 'b' has waited only 4.5 s but is stalled too, so it is named.
  EXPECT_EQ(report.shutdown_message,
            "Stall shutdown after 5 s (CONCORD_STALL_SHUTDOWN_TIME): tensor 'a' is missing on ranks "
            "[1]; tensor 'b' is missing on ranks [2, 3]");
  EXPECT_TRUE(report.warnings.empty()) << report.warnings.front();  // 5.5 s < 60 s
}

TEST(StallInspectorShutdown, ShutdownAfterWarningTimeStillWarnsFirst) {
  StallInspector inspector(2, 1, 10);
  submit(inspector, "a", {1}, 0);
  StallReport report = inspector.check(at(5));
  EXPECT_EQ(report.warnings.size(), 1u);
  EXPECT_FALSE(report.shutdown) << report.shutdown_message;
  report = inspector.check(at(10.5));
  EXPECT_TRUE(report.shutdown);
  EXPECT_PRED2(contains, report.shutdown_message, "after 10 s");
  EXPECT_PRED2(contains, report.shutdown_message, "tensor 'a' is missing on ranks [0]");
}

TEST(StallInspectorShutdown, ZeroNeverShutsDown) {
  StallInspector inspector(2, 60, 0);
  submit(inspector, "a", {0}, 0);
  const StallReport report = inspector.check(at(1e6));
  EXPECT_FALSE(report.shutdown);
  EXPECT_EQ(report.shutdown_message, "");
  EXPECT_EQ(report.warnings.size(), 1u);  // it is stalled, only shutdown is off
}

TEST(StallInspectorOrder, ByFirstSubmissionThenName) {
  StallInspector inspector(2, 10, 0);
  submit(inspector, "b", {0}, 2);
  submit(inspector, "c", {1}, 1);
  submit(inspector, "a", {0}, 2);
  submit(inspector, "z", {1}, 0);
  submit(inspector, "y", {0}, 3);
  inspector.record_submitted("y", "allreduce", 1, at(3));  // complete: not reported
  const StallReport report = inspector.check(at(100));
  std::vector<std::string> order;
  for (const auto& warning : report.warnings) order.push_back(tensor_of(warning));
  EXPECT_EQ(order, (std::vector<std::string>{"z", "c", "a", "b"}));
}

TEST(StallInspectorRecord, IdempotentKeepsFirstTimeAndCollective) {
  StallInspector inspector(2, 60, 0);
  submit(inspector, "a", {0}, 0, "broadcast");
  submit(inspector, "a", {0}, 50, "allreduce");  // a repeat must not count as rank 1
  EXPECT_EQ(inspector.tracked(), 1u);
  const StallReport report = inspector.check(at(61));
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_PRED2(starts_with, report.warnings[0],
               "Tensor 'a' (broadcast) has been submitted by ranks [0] but not by ranks [1] "
               "for 61.0 s;");
}

TEST(StallInspectorRecord, RejectsBadArguments) {
  EXPECT_THROW(StallInspector(0, 60, 0), InvalidArgument);
  EXPECT_THROW(StallInspector(2, 0, 0), InvalidArgument);
  EXPECT_THROW(StallInspector(2, 60, -1), InvalidArgument);
  StallInspector inspector(2, 60, 0);
  EXPECT_THROW(inspector.record_submitted("a", "allreduce", 2, at(0)), InvalidArgument);
  EXPECT_THROW(inspector.record_submitted("a", "allreduce", -1, at(0)), InvalidArgument);
  EXPECT_EQ(inspector.tracked(), 0u);
}

}  // namespace
}  // namespace concord
