// One enforce macro family: throws a concord error carrying file:line and a message built
// with operator<< from the arguments.
#pragma once

#include <sstream>
#include <string>

#include "concord/errors.h"

namespace concord::detail {

template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

template <typename ErrorType, typename... Args>
[[noreturn]] void throw_error(const char* file, int line, const Args&... args) {
  throw ErrorType(concat(args..., " [", file, ":", line, "]"));
}

}  // namespace concord::detail

/// Throws ErrorType(message) with file:line when `cond` is false.
#define CONCORD_ENFORCE(cond, ErrorType, ...)                                      \
  do {                                                                              \
    if (!(cond)) ::concord::detail::throw_error<ErrorType>(__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

/// Throws ErrorType(message) with file:line unconditionally.
#define CONCORD_THROW(ErrorType, ...) \
  ::concord::detail::throw_error<ErrorType>(__FILE__, __LINE__, __VA_ARGS__)
