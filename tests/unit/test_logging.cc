// Logging (src/common/logging.h): CONCORD_LOG_LEVEL's level decides at run time what is
// printed, debug included, with the rank prefix; an unknown level is refused.
#include "common/logging.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <memory>
#include <sstream>

#include "concord/errors.h"

namespace concord {
namespace {

// Points the configured logger at a string for the test's duration.
class CapturedLog {
 public:
  explicit CapturedLog(const std::string& level) {
    configure_logging(0, "warning");  // makes the logger
    logger_ = spdlog::default_logger();
    saved_ = logger_->sinks();
    logger_->sinks() = {std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)};
    configure_logging(3, level);  // its pattern and level, as init() sets them
  }
  ~CapturedLog() {
    logger_->sinks() = saved_;
    configure_logging(0, "warning");
  }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> logger_;
  std::vector<spdlog::sink_ptr> saved_;
};

TEST(Logging, DebugMessagesPrintAtLevelDebug) {
  CapturedLog log("debug");
  CONCORD_LOG_DEBUG("selection: {} -> {}", "allreduce.float32.bucket12", "ring");
  CONCORD_LOG_WARN("a warning");
  EXPECT_EQ(log.text(),
            "[concord debug rank 3] selection: allreduce.float32.bucket12 -> ring\n"
            "[concord warning rank 3] a warning\n");
}

TEST(Logging, LevelWarningHidesDebugAndInfo) {
  CapturedLog log("warning");
  CONCORD_LOG_DEBUG("hidden {}", 1);
  CONCORD_LOG_INFO("hidden {}", 2);
  CONCORD_LOG_ERROR("shown {}", 3);
  EXPECT_EQ(log.text(), "[concord error rank 3] shown 3\n");
}

TEST(Logging, UnknownLevelIsRefused) { EXPECT_THROW(configure_logging(0, "verbose"), InvalidArgument); }

}  // namespace
}  // namespace concord
