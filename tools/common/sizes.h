// Byte sizes as the benchmark tools take them on the command line (concord-bench's -b/-e,
// concord-calibrate's -s, concord-turnaround's, concord-topkbench's and
// concord-sparsebench's sizes): nccl-tests' spelling with binary suffixes.
#pragma once

#include <cstddef>
#include <string>

namespace concord::tools {

/// "1K" = 1024, "64M", "1G" (binary suffixes, K/M/G in either case) or plain bytes; a
/// fraction is rounded down ("1.5K" = 1536). Throws InvalidArgument for text that is not a
/// number, a negative size or any other suffix, naming the text.
size_t parse_size(const std::string& text);

}  // namespace concord::tools
