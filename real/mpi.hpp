// mpi.hpp: the MPI runtime as real/ uses it: start-up under mpirun/srun, the world, moving
// strings to and from rank 0, abort. Internal to real/.
#pragma once

#include <string>
#include <vector>

namespace gradsync::real::mpi {

// launcher: "mpirun" or "srun" when this process was started by one (their environment
// variables), empty otherwise.
std::string launcher();
// launcher_size: the process count the launcher's environment states (OMPI_COMM_WORLD_SIZE,
// PMI_SIZE, SLURM_NTASKS), before MPI starts; 0 when none is set or readable.
int launcher_size();
// init: MPI_Init_thread asking for MPI_THREAD_MULTIPLE (a stream thread calls MPI while the
// watchdog may abort); once per process. RuntimeError when MPI cannot start.
void init();
bool initialized();
void finalize();
int rank();
int size();
std::string processor_name();
std::string version();  // "Open MPI v4.1.4, ..."
void barrier();
// gather: every rank's text on rank 0, in rank order (empty elsewhere).
std::vector<std::string> gather(const std::string& mine);
// broadcast: rank 0's text on every rank.
std::string broadcast(const std::string& from_root);
// all_ranks_on_one_host: whether every rank reports the same processor name.
bool all_ranks_on_one_host();
// ranks_on_this_host: how many ranks share this rank's host (MPI_COMM_TYPE_SHARED); collective.
int ranks_on_this_host();
[[noreturn]] void abort(int code);

}  // namespace gradsync::real::mpi
