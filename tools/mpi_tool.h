// What every MPI command-line tool of Concord does first: start MPI (MPI_THREAD_MULTIPLE
// requested, as the runtime may run its own thread), know its rank and size, and parse the
// flags with CLI11 so that a bad flag stops every rank with the same exit code (rank 0
// prints the message) instead of leaving mpirun to report a mix of codes.
#pragma once

#include <mpi.h>
#include <CLI/CLI.hpp>

#include <optional>

namespace concord::tools {

/// Initialises MPI on construction and finalizes it on destruction.
class MpiTool {
 public:
  MpiTool(int& argc, char**& argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiTool() { MPI_Finalize(); }
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
