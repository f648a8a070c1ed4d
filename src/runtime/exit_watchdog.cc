#include "runtime/exit_watchdog.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

namespace concord {

void arm_exit_watchdog(int rank, const std::string& reason, double grace_seconds) {
  std::thread([rank, reason, grace_seconds] {
    std::this_thread::sleep_for(std::chrono::duration<double>(grace_seconds));
    // fprintf and _exit only: the process is in its exit path, other threads may hold locks.
    std::fprintf(stderr,
                 "[concord error rank %d] exit blocked for %.0f s after: %s; ending this process with "
                 "status 1 so that mpirun aborts the job\n",
                 rank, grace_seconds, reason.c_str());
    std::fflush(stderr);
    _exit(1);
  }).detach();
}

}  // namespace concord
