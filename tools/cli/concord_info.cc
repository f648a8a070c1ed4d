// concord-info: prints every CONCORD_* configuration variable with its current value,
// default, type and meaning (the table of src/common/config.cc), then every registered
// algorithm of every collective with its description (src/algorithms/registry.cc, the
// device-buffer and sparse registries), the cost-model constants in effect
// (CostParams::from_env), whether MPI takes CUDA device pointers (without initialising MPI:
// the build-time answer of mpi-ext.h, saying so; `--init-mpi` initialises MPI first and
// asks MPIX_Query_cuda_support() at run time), the NCCL status and the CUDA status
// ("CUDA: built, no usable device (<reason>)" where the build has CUDA but the machine has
// no usable GPU). `--json` prints the same as
// one JSON document (schema in src/info/build_info.h; scripts/docs_lists.py reads it);
// `--version` prints the version only. The pip-installed Python concord-info prints the same
// through the binding (python/concord/info.py).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "concord/version.h"
#include "info/build_info.h"
#include "transport/mpi_communicator.h"

int main(int argc, char** argv) {
  CLI::App app{"Prints every CONCORD_* setting, every registered algorithm and the cost model.", "concord-info"};
  app.set_version_flag("--version", "concord-info " CONCORD_VERSION_STRING);
  bool as_json = false;
  app.add_flag("--json", as_json, "print one JSON document (schema: src/info/build_info.h)");
  bool init_mpi = false;
  app.add_flag("--init-mpi", init_mpi, "initialise MPI first, so the MPI CUDA-aware line is the run-time answer");
  CLI11_PARSE(app, argc, argv);
  try {
    if (init_mpi) concord::ensure_mpi_initialized();
    std::fputs(as_json ? (concord::build_info_json() + "\n").c_str() : concord::build_info_text().c_str(), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "concord-info: %s\n", e.what());
    return 1;
  }
  return 0;
}
