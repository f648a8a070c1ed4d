// What every multi-rank command-line tool of Concord does first: join the process's
// transport world (transport/transport_world.h: MPI under mpirun, initialised with
// MPI_THREAD_MULTIPLE requested as the runtime may run its own thread, and finalized at
// exit; UCX under torchrun or concord-run --launcher local), know its rank and size, and
// parse the flags with CLI11 so that a bad flag stops every rank with the same exit code
// (rank 0 prints the message) instead of leaving the launcher to report a mix of codes.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>

#include "transport/transport_world.h"

namespace concord::tools {

/// Joins the process's world on construction (process_world(); MPI is finalized at exit).
class MpiTool {
 public:
  MpiTool(int&, char**&) : rank_(process_world().rank()), size_(process_world().size()) {}
  MpiTool(const MpiTool&) = delete;
  MpiTool& operator=(const MpiTool&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Parses argv into `app`. Returns nothing when the tool should run, or the exit code to
  /// return from main() on every rank (0 for --help, CLI11's code for a bad flag).
  std::optional<int> parse(CLI::App& app, int argc, char** argv) const {
    try {
      app.parse(argc, argv);
      return std::nullopt;
    } catch (const CLI::ParseError& error) {
      return rank_ == 0 ? app.exit(error) : error.get_exit_code();  // app.exit prints
    }
  }

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace concord::tools
