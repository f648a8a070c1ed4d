#include "common/logging.h"

#include <mutex>

#include <spdlog/sinks/stdout_sinks.h>

#include "common/enforce.h"

namespace concord {

void configure_logging(int rank, const std::string& level) {
  const auto parsed = spdlog::level::from_str(level == "warning" ? "warn" : level);
  CONCORD_ENFORCE(parsed != spdlog::level::off || level == "off", InvalidArgument, "CONCORD_LOG_LEVEL='", level,
                  "' is not one of trace, debug, info, warning, error, off");
  // One logger per process: in-process ranks (threads) configure it concurrently, and
  // spdlog's get-then-create would throw "logger with name 'concord' already exists" on one.
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  auto logger = spdlog::get("concord");
  if (!logger) logger = spdlog::stderr_logger_mt("concord");
  logger->set_pattern("[concord %l rank " + std::to_string(rank) + "] %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
}

}  // namespace concord
