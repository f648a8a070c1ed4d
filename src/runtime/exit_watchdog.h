// Bounded process exit after a failure (a failed job must end, not hang). When Concord has
// failed on this rank (stall shutdown, communication error, a peer's shutdown that failed
// pending operations), the process's exit must not wait forever on a peer: MPI_Finalize
// (Open MPI: a PMIx fence over every rank) blocks while a stalled rank is still alive. The
// exit hooks arm this watchdog before finalisation; if the process is still alive after
// the grace period, it prints why and ends the process with status 1, and mpirun then
// aborts the whole job ("1 process returned a non-zero exit code ... the job has been
// aborted"). A cooperative exit (every rank reaches finalisation) finishes well within the
// grace period and keeps its own exit status.
#pragma once

#include <string>

namespace concord {

/// Seconds a failed process may spend in its exit path (MPI finalisation) before the
/// watchdog ends it. Finalisation among live, exiting ranks takes well under a second.
constexpr double kFailedExitGraceSeconds = 5.0;

/// Starts a detached thread that sleeps `grace_seconds` and then writes
/// "[concord error rank R] exit blocked for G s after: <reason>; ending this process with
/// status 1 so that mpirun aborts the job" to stderr and calls _exit(1). Dies with the
/// process if it exits first. `rank` is only used in the message (-1: unknown).
void arm_exit_watchdog(int rank, const std::string& reason, double grace_seconds = kFailedExitGraceSeconds);

}  // namespace concord
