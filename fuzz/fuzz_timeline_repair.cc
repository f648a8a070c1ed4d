// libFuzzer target: timeline repair (Timeline::repair, src/common/timeline.h), which reads a
// timeline file cut short by a crash. Input: the file's text. It must return valid JSON (an
// array) or throw concord::InvalidArgument.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "common/timeline.h"
#include "concord/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::string repaired = concord::Timeline::repair(text);
    const auto json = nlohmann::json::parse(repaired, nullptr, /*allow_exceptions=*/false);
    if (!json.is_array()) std::abort();
  } catch (const concord::InvalidArgument&) {
  }
  return 0;
}
