// What the environment says about how this process was started: by an MPI launcher
// (Open MPI's OMPI_COMM_WORLD_*, MPICH/Hydra's PMI_*), by torchrun or concord-run (env://:
// RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), by Slurm's srun
// (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID), or alone. The transport choice
// (transport_select.cc) and the UCX rendezvous (rendezvous/open_store.h) read it; a process that the environment
// calls one of several must join that world or fail, never run as a world of one.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace concord {

struct LaunchEnvironment {
  /// "mpirun", "torchrun", "concord-run", "env" (RANK/WORLD_SIZE without torchrun's
  /// marks), "slurm" or "none".
  std::string launcher = "none";
  bool mpi_launcher = false;  ///< an MPI launcher started the process
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  /// Processes of the job on this host as the launcher says (OMPI_COMM_WORLD_LOCAL_SIZE,
  /// MPI_LOCALNRANKS, LOCAL_WORLD_SIZE); 0 when it does not say (Slurm, a bare RANK).
  int local_size = 0;
  std::string master_addr;  ///< MASTER_ADDR, empty when unset
  int master_port = 0;      ///< MASTER_PORT, 0 when unset
  std::string run_id;       ///< TORCHELASTIC_RUN_ID, CONCORD_RUN_ID or SLURM_JOB_ID.SLURM_STEP_ID
  /// The launcher runs a PMIx server for this process (PMIX_NAMESPACE and PMIX_RANK set:
  /// Open MPI's mpirun, Slurm's srun --mpi=pmix); the UCX world may rendezvous through it.
  bool pmix = false;

  /// True when the environment says this process is one of several.
  bool several() const { return size > 1; }
  /// "rank R of N (launcher)" for messages.
  std::string describe() const;
};

/// Reads `lookup` (std::getenv by default; tests pass a map). Throws InvalidArgument naming
/// the variable when a rank or size is malformed or the rank is outside [0, size).
LaunchEnvironment read_launch_environment(const std::function<std::optional<std::string>(const char*)>& lookup = {});

}  // namespace concord
