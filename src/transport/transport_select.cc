// process_world(): CONCORD_TRANSPORT chosen once per process (transport_world.h).
//   mpi   MPI_COMM_WORLD; refused when the environment names a world MPI does not see
//         (torchrun's WORLD_SIZE=4 but MPI started as a singleton);
//   ucx   the UCX world, rendezvousing through CONCORD_STORE or MASTER_ADDR/MASTER_PORT;
//   auto  MPI when an MPI launcher started the process or nothing says it is one of
//         several (a lone process keeps MPI's native allreduce and needs no store), UCX
//         when another launcher (torchrun, concord-run, srun) says it is one of several.
#include <chrono>
#include <mutex>

#include "common/config.h"
#include "common/enforce.h"
#include "transport/launch_environment.h"
#include "transport/mpi_world.h"
#include "transport/transport_world.h"
#include "transport/ucx_world.h"

namespace concord {
namespace {

struct Choice {
  std::string transport;  // "mpi" or "ucx"
  std::string why;
};

Choice choose(const LaunchEnvironment& env) {
  const std::string asked = config_value("CONCORD_TRANSPORT");
  CONCORD_ENFORCE(asked == "mpi" || asked == "ucx" || asked == "auto", InvalidArgument, "CONCORD_TRANSPORT='", asked,
                  "': expected mpi, ucx or auto");
  if (asked != "auto") return {asked, "CONCORD_TRANSPORT=" + asked};
  if (env.mpi_launcher) return {"mpi", "auto: started by an MPI launcher"};
  if (!env.several()) return {"mpi", "auto: a single process (no launcher names a larger world)"};
  if (!ucx_available())
    return {"mpi",
            "auto: " + env.launcher + " names a world of " + std::to_string(env.size) + " but this build has no UCX"};
  return {"ucx", "auto: started by " + env.launcher + " without an MPI launcher"};
}

std::chrono::milliseconds init_timeout() {
  const std::string text = config_value("CONCORD_INIT_TIMEOUT");
  double seconds = 0;
  try {
    seconds = std::stod(text);
  } catch (const std::exception&) {
    seconds = -1;
  }
  CONCORD_ENFORCE(seconds > 0, InvalidArgument, "CONCORD_INIT_TIMEOUT='", text, "': expected seconds > 0");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::unique_ptr<TransportWorld> make_process_world() {
  const LaunchEnvironment env = read_launch_environment();
  const Choice choice = choose(env);
  if (choice.transport == "ucx") {
    const auto timeout = init_timeout();
    rendezvous::OpenStore store;
    if (env.several()) store = rendezvous::open_store(env, config_value("CONCORD_STORE"), timeout);
    return make_ucx_world(env, std::move(store), timeout);
  }
  auto world = make_mpi_world(env.launcher);
  CONCORD_ENFORCE(!env.several() || world->size() == env.size, StateError, "Concord: the environment says this is ",
                  env.describe(), " but MPI sees a world of ", world->size(), " (", choice.why,
                  "); Concord cannot join that world over MPI: start it under mpirun, or let it use UCX "
                  "(CONCORD_TRANSPORT=auto or ucx in a build with UCX)");
  return world;
}

}  // namespace

TransportWorld& process_world() {
  static std::mutex mutex;
  static TransportWorld* world = nullptr;  // never destroyed: used from exit hooks
  std::lock_guard<std::mutex> lock(mutex);
  if (!world) world = make_process_world().release();
  return *world;
}

std::string describe_transport_choice() {
  const LaunchEnvironment env = read_launch_environment();
  const Choice choice = choose(env);
  return choice.transport + " (" + choice.why + "; " + env.describe() + "; UCX " +
         (ucx_available() ? "built in" : "not built") + ")";
}

}  // namespace concord
