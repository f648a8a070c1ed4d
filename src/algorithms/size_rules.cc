#include "algorithms/size_rules.h"

#include <cctype>

#include "common/enforce.h"

namespace concord {
namespace {

// "64K" -> 65536; "" -> `empty`. Throws InvalidArgument naming the variable and the rule.
size_t parse_size(const std::string& text, size_t empty, const std::string& variable, const std::string& rule) {
  if (text.empty()) return empty;
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  CONCORD_ENFORCE(digits > 0, InvalidArgument, variable, ": rule '", rule, "': '", text, "' is not a size in bytes");
  const std::string suffix = text.substr(digits);
  size_t scale = 1;
  if (suffix == "K" || suffix == "k") scale = size_t{1} << 10;
  else if (suffix == "M" || suffix == "m") scale = size_t{1} << 20;
  else if (suffix == "G" || suffix == "g") scale = size_t{1} << 30;
  else
    CONCORD_ENFORCE(suffix.empty(), InvalidArgument, variable, ": rule '", rule, "': unknown size suffix '", suffix,
                    "' (use K, M or G)");
  return std::stoull(text.substr(0, digits)) * scale;
}

}  // namespace

std::vector<SizeRule> parse_size_rules(const std::string& text, const std::string& variable) {
  std::vector<SizeRule> rules;
  if (text.empty() || text == "auto") return rules;
  if (text.find(':') == std::string::npos) {  // one name for every size
    rules.push_back(SizeRule{0, SIZE_MAX, text});
    return rules;
  }
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(';', begin), text.size());
    const std::string rule = text.substr(begin, end - begin);
    begin = end + 1;
    if (rule.empty()) continue;
    const size_t colon = rule.find(':');
    const size_t dash = rule.find('-');
    CONCORD_ENFORCE(colon != std::string::npos && dash != std::string::npos && dash < colon, InvalidArgument, variable,
                    ": rule '", rule, "' is not LOW-HIGH:name (e.g. 0-64K:recursive_doubling)");
    SizeRule parsed;
    parsed.min_bytes = parse_size(rule.substr(0, dash), 0, variable, rule);
    parsed.max_bytes = parse_size(rule.substr(dash + 1, colon - dash - 1), SIZE_MAX, variable, rule);
    parsed.algorithm = rule.substr(colon + 1);
    CONCORD_ENFORCE(!parsed.algorithm.empty(), InvalidArgument, variable, ": rule '", rule, "' names no algorithm");
    CONCORD_ENFORCE(parsed.min_bytes < parsed.max_bytes, InvalidArgument, variable, ": rule '", rule,
                    "' covers no size (LOW must be below HIGH)");
    rules.push_back(parsed);
  }
  return rules;
}

std::string rule_for(const std::vector<SizeRule>& rules, size_t bytes) {
  for (const auto& rule : rules)
    if (bytes >= rule.min_bytes && bytes < rule.max_bytes) return rule.algorithm;
  return "";
}

}  // namespace concord
