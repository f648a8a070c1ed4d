// One enforce macro family: throws a concord error carrying file:line and a message built
// with operator<< from the arguments.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "concord/errors.h"

namespace concord::detail {

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

/// "[1, 3]": the form every error message uses for a list of ranks.
inline std::string rank_list(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  out << ']';
  return out.str();
}

template <typename ErrorType, typename... Args>
[[noreturn]] void throw_error(const char* file, int line, const Args&... args) {
  throw ErrorType(concat(args..., " [", file, ":", line, "]"));
}

}  // namespace concord::detail

/// Throws ErrorType(message) with file:line when `cond` is false.
#define CONCORD_ENFORCE(cond, ErrorType, ...)                                                \
  do {                                                                                       \
    if (!(cond)) ::concord::detail::throw_error<ErrorType>(__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

/// Throws ErrorType(message) with file:line unconditionally.
#define CONCORD_THROW(ErrorType, ...) ::concord::detail::throw_error<ErrorType>(__FILE__, __LINE__, __VA_ARGS__)
