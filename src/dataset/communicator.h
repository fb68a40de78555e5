// The processes a dataset collection runs in, as collect() sees them: this
// one's rank among `size`, a barrier, a broadcast from rank 0, a sum, and a
// way to stop them all. Open MPI provides it under mpirun (src/mpi, the only
// code that links MPI); a single process needs none of it (Local).
#pragma once

#include <cstdint>
#include <string>

namespace tessera::dataset {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Returns once every rank has called it.
  virtual void barrier() = 0;
  // Rank 0's `text` on every rank (the others' `text` is ignored).
  virtual std::string broadcast(const std::string& text) = 0;
  // The sum over the ranks of each one's `value`, on every rank.
  virtual int64_t sum(int64_t value) = 0;
  // Stops every rank (one rank failed: the others would wait for it forever).
  virtual void abort(int code) = 0;
};

// One process, no MPI.
class Local final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void barrier() override {}
  std::string broadcast(const std::string& text) override { return text; }
  int64_t sum(int64_t value) override { return value; }
  void abort(int) override {}
};

// True when this process was started by an MPI launcher (mpirun, mpiexec,
// srun with PMI): its environment names a world size. A tessera built
// without MPI refuses to collect then (every rank would do all the work).
bool launched_by_mpi();

}  // namespace tessera::dataset
