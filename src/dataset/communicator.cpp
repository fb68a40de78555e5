// Whether an MPI launcher started this process (see communicator.h).
#include "dataset/communicator.h"

#include <cstdlib>

namespace tessera::dataset {

bool launched_by_mpi() {
  // Open MPI's mpirun, PMIx launchers, MPICH's Hydra and Slurm's PMI.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(v)) return true;
  return false;
}

}  // namespace tessera::dataset
