// Error types thrown by Concord. Every message names the tensor, the rank(s) and what
// differed; see docs/troubleshooting.md (keyed by message).
#pragma once

#include <stdexcept>
#include <string>

namespace concord {

/// Base class of every error Concord throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bad argument from the caller: unsupported dtype, duplicate in-flight name, ...
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

/// The same tensor name was submitted with different parameters (shape, dtype, op, root,
/// scale factors) on different ranks. Raised on every rank.
class MismatchError : public Error {
 public:
  using Error::Error;
};

/// A call that needs a running runtime was made before init() or after shutdown(), or
/// an operation was still pending when the runtime shut down.
class StateError : public Error {
 public:
  using Error::Error;
};

/// The transport (MPI) reported a failure.
class CommError : public Error {
 public:
  using Error::Error;
};

/// An internal invariant was violated: a bug in Concord.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace concord
