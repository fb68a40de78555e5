// The dataset collection's ranks over Open MPI (Debian's libopenmpi-dev):
// the only code of Tessera that links MPI, in a layer of its own that only
// the CLI links (CMakeLists.txt). Waits poll and sleep instead of MPI's
// busy polling, so a rank that waits (for rank 0's task list, for the last
// rank to finish) leaves the cores to the ranks still measuring.
#pragma once

#include "dataset/communicator.h"

namespace tessera::mpi {

class MpiCommunicator final : public dataset::Communicator {
 public:
  // MPI_Init (once per process); MPI_Finalize in the destructor.
  MpiCommunicator();
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void barrier() override;
  std::string broadcast(const std::string& text) override;
  int64_t sum(int64_t value) override;
  // MPI_Abort: every rank ends with `code`.
  void abort(int code) override;

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace tessera::mpi
