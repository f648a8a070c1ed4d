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

// Checked at run time like the others (spdlog's SPDLOG_DEBUG macro is compiled out below
// SPDLOG_ACTIVE_LEVEL, info by default, so CONCORD_LOG_LEVEL=debug would print nothing).
#define CONCORD_LOG_DEBUG(...) spdlog::debug(__VA_ARGS__)
#define CONCORD_LOG_INFO(...) spdlog::info(__VA_ARGS__)
#define CONCORD_LOG_WARN(...) spdlog::warn(__VA_ARGS__)
#define CONCORD_LOG_ERROR(...) spdlog::error(__VA_ARGS__)
