#include "transport/launch_environment.h"

#include <cstdlib>

#include "common/enforce.h"

namespace concord {
namespace {

int parse_int(const std::string& text, const char* name) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  CONCORD_ENFORCE(end != text.c_str() && *end == '\0' && value >= 0, InvalidArgument, name, "='", text,
                  "' is not a non-negative integer");
  return static_cast<int>(value);
}

}  // namespace

std::string LaunchEnvironment::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(size) + " (" + launcher + ")";
}

LaunchEnvironment read_launch_environment(const std::function<std::optional<std::string>(const char*)>& lookup_in) {
  const auto lookup = lookup_in ? lookup_in : [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  LaunchEnvironment env;
  // (launcher, rank variable, size variable, local rank and local size variables), first
  // match wins: an MPI launcher's own variables before env:// ones that a user may have
  // exported. Slurm states its tasks per node only as a list over nodes ("2(x3),1").
  struct Source {
    const char* launcher;
    const char* rank;
    const char* size;
    const char* local_rank;
    const char* local_size;
    bool mpi;
  };
  const Source sources[] = {
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE", true},
      {"mpirun", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", true},
      {"env", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", false},
      {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr, false},
  };
  for (const Source& source : sources) {
    const auto rank = lookup(source.rank);
    const auto size = lookup(source.size);
    if (!rank || !size) continue;
    env.launcher = source.launcher;
    env.mpi_launcher = source.mpi;
    env.rank = parse_int(*rank, source.rank);
    env.size = parse_int(*size, source.size);
    CONCORD_ENFORCE(env.size >= 1 && env.rank < env.size, InvalidArgument, source.rank, "=", env.rank,
                    " is not a rank of ", source.size, "=", env.size);
    if (const auto local = lookup(source.local_rank)) env.local_rank = parse_int(*local, source.local_rank);
    if (source.local_size) {
      if (const auto local = lookup(source.local_size)) env.local_size = parse_int(*local, source.local_size);
    }
    break;
  }
  if (env.launcher == "env") {
    if (lookup("TORCHELASTIC_RUN_ID")) env.launcher = "torchrun";
    else if (lookup("CONCORD_RUN_LOCAL")) env.launcher = "concord-run";
  }
  env.pmix = lookup("PMIX_NAMESPACE").has_value() && lookup("PMIX_RANK").has_value();
  if (const auto addr = lookup("MASTER_ADDR")) env.master_addr = *addr;
  if (const auto port = lookup("MASTER_PORT")) env.master_port = parse_int(*port, "MASTER_PORT");
  if (const auto id = lookup("TORCHELASTIC_RUN_ID")) env.run_id = *id;
  else if (const auto id = lookup("CONCORD_RUN_ID")) env.run_id = *id;
  else if (const auto job = lookup("SLURM_JOB_ID")) env.run_id = *job + "." + lookup("SLURM_STEP_ID").value_or("0");
  return env;
}

}  // namespace concord
