#include "control/stall_inspector.h"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <tuple>

#include "common/enforce.h"
#include "concord/errors.h"

namespace concord {
namespace {

using Seconds = std::chrono::duration<double>;
using detail::rank_list;

StallInspector::Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<StallInspector::Clock::duration>(Seconds(seconds));
}

}  // namespace

StallInspector::StallInspector(int size, double warning_seconds, double shutdown_seconds, RankNames names)
    : size_(size),
      names_(std::move(names)),
      warning_(to_duration(warning_seconds)),
      shutdown_(to_duration(shutdown_seconds)) {
  CONCORD_ENFORCE(size >= 1, InvalidArgument, "StallInspector needs size >= 1, got ", size);
  CONCORD_ENFORCE(warning_seconds > 0, InvalidArgument, "CONCORD_STALL_WARNING_TIME must be > 0 seconds, got ",
                  warning_seconds);
  CONCORD_ENFORCE(shutdown_seconds >= 0, InvalidArgument,
                  "CONCORD_STALL_SHUTDOWN_TIME must be >= 0 seconds (0 = never), got ", shutdown_seconds);
}

void StallInspector::record_submitted(const std::string& tensor, const char* collective, int rank,
                                      Clock::time_point now) {
  CONCORD_ENFORCE(rank >= 0 && rank < size_, InvalidArgument, "stall inspector: tensor '", tensor,
                  "' submitted by rank ", rank, ", outside [0, ", size_, ")");
  auto [it, inserted] = entries_.try_emplace(tensor);
  Entry& entry = it->second;
  if (inserted) {
    entry.collective = collective != nullptr ? collective : "unknown";
    entry.submitted.assign(size_, false);
    entry.first = now;
  }
  if (!entry.submitted[rank]) {
    entry.submitted[rank] = true;
    ++entry.count;
  }
}

void StallInspector::remove(const std::string& tensor) { entries_.erase(tensor); }

StallReport StallInspector::check(Clock::time_point now) {
  std::vector<std::pair<const std::string*, Entry*>> stalled;
  for (auto& [name, entry] : entries_) {
    if (entry.count < size_) stalled.emplace_back(&name, &entry);
  }
  std::sort(stalled.begin(), stalled.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second->first, *a.first) < std::tie(b.second->first, *b.first);
  });

  StallReport report;
  std::ostringstream stalled_list;
  for (auto& [name, entry] : stalled) {
    std::vector<int> submitted, missing;
    for (int rank = 0; rank < size_; ++rank) (entry->submitted[rank] ? submitted : missing).push_back(rank);
    const Clock::duration waited = now - entry->first;
    const bool due = entry->warned ? now - entry->last_warning > warning_ : waited > warning_;
    if (due) {
      entry->warned = true;
      entry->last_warning = now;
      std::ostringstream line;
      line << "Tensor '" << *name << "' (" << entry->collective << ")" << names_.scope
           << " has been submitted by ranks " << rank_list(names_(submitted)) << " but not by ranks "
           << rank_list(names_(missing)) << " for " << std::fixed << std::setprecision(1) << Seconds(waited).count()
           << " s; the missing ranks may be submitting different tensors or none, which deadlocks "
              "the job (CONCORD_STALL_SHUTDOWN_TIME > 0 aborts it)";
      report.warnings.push_back(line.str());
    }
    if (shutdown_ > Clock::duration::zero() && waited > shutdown_) report.shutdown = true;
    stalled_list << (stalled_list.tellp() > 0 ? "; " : "") << "tensor '" << *name << "' is missing on ranks "
                 << rank_list(names_(missing)) << names_.scope;
  }
  if (report.shutdown) {
    std::ostringstream message;
    message << "Stall shutdown after " << Seconds(shutdown_).count()
            << " s (CONCORD_STALL_SHUTDOWN_TIME): " << stalled_list.str();
    report.shutdown_message = message.str();
  }
  return report;
}

}  // namespace concord
