#include "tools/common/sizes.h"

#include <exception>

#include "common/enforce.h"

namespace concord::tools {

size_t parse_size(const std::string& text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    CONCORD_THROW(InvalidArgument, "size '", text, "' is not a number");
  }
  const std::string suffix = text.substr(end);
  double scale = 1;
  if (suffix == "K" || suffix == "k") scale = 1024.0;
  else if (suffix == "M" || suffix == "m") scale = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g") scale = 1024.0 * 1024 * 1024;
  else if (!suffix.empty()) CONCORD_THROW(InvalidArgument, "bad size suffix in '", text, "': use K, M or G");
  CONCORD_ENFORCE(value >= 0, InvalidArgument, "size '", text, "' is negative");
  return static_cast<size_t>(value * scale);
}

}  // namespace concord::tools
