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

// The process's world, made on first use; left (destroyed) only by leave_process_world().
struct ProcessWorld {
  std::mutex mutex;
  TransportWorld* world = nullptr;  // not destroyed at exit: used from exit hooks
};

ProcessWorld& the_process_world() {
  static ProcessWorld* instance = new ProcessWorld();
  return *instance;
}

}  // namespace

void TransportWorld::abort(const std::string&) {
  CONCORD_THROW(StateError, "Concord: the ", origin().transport,
                " world cannot be aborted and re-formed in-process; elastic training needs the store-based "
                "UCX transport (concord-run --min-np/--max-np starts it)");
}

TransportWorld& process_world() {
  auto& p = the_process_world();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.world) p.world = make_process_world().release();
  return *p.world;
}

void leave_process_world() {
  auto& p = the_process_world();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (!p.world) return;
  CONCORD_ENFORCE(p.world->origin().transport != "mpi", StateError,
                  "Concord: the MPI world cannot be left and re-formed in-process (MPI is initialised once); "
                  "elastic training needs the store-based UCX transport (concord-run --min-np/--max-np starts it)");
  delete p.world;
  p.world = nullptr;
}

void abort_process_world(const std::string& reason) {
  auto& p = the_process_world();
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.world) p.world->abort(reason);
}

std::string describe_transport_choice() {
  const LaunchEnvironment env = read_launch_environment();
  const Choice choice = choose(env);
  return choice.transport + " (" + choice.why + "; " + env.describe() + "; UCX " +
         (ucx_available() ? "built in" : "not built") + ")";
}

}  // namespace concord
