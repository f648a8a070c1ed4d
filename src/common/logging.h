// Rank-prefixed logging on top of spdlog. Levels come from CONCORD_LOG_LEVEL.
#pragma once

#include <spdlog/spdlog.h>

#include <string>

namespace concord {

/// Configures spdlog's default logger: pattern "[concord <level> rank R] message" on
/// stderr and the level named by `level` (trace, debug, info, warning, error, off).
/// Throws InvalidArgument for an unknown level name.
void configure_logging(int rank, const std::string& level);

}  // namespace concord

#define CONCORD_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define CONCORD_LOG_INFO(...) spdlog::info(__VA_ARGS__)
#define CONCORD_LOG_WARN(...) spdlog::warn(__VA_ARGS__)
#define CONCORD_LOG_ERROR(...) spdlog::error(__VA_ARGS__)
