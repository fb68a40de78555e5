// Open MPI for the dataset collection (see mpi_communicator.h).
#include "mpi/mpi_communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "support/error.h"

namespace tessera::mpi {

namespace {

// Completes a non-blocking operation, sleeping between tests.
void wait(MPI_Request& request) {
  for (;;) {
    int done = 0;
    TESSERA_CHECK(MPI_Test(&request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test failed");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

MpiCommunicator::MpiCommunicator() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) TESSERA_CHECK(MPI_Init(nullptr, nullptr) == MPI_SUCCESS, "MPI_Init failed");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiCommunicator::barrier() {
  MPI_Request r;
  TESSERA_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Ibarrier failed");
  wait(r);
}

std::string MpiCommunicator::broadcast(const std::string& text) {
  unsigned long long n = rank_ == 0 ? text.size() : 0;
  MPI_Request r;
  TESSERA_CHECK(MPI_Ibcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Ibcast failed");
  wait(r);
  std::string out = rank_ == 0 ? text : std::string(n, '\0');
  // In pieces: an MPI count is an int.
  constexpr unsigned long long kPiece = 1ull << 30;
  for (unsigned long long at = 0; at < n; at += kPiece) {
    const int count = static_cast<int>(std::min(kPiece, n - at));
    TESSERA_CHECK(MPI_Ibcast(out.data() + at, count, MPI_CHAR, 0, MPI_COMM_WORLD, &r) == MPI_SUCCESS,
                  "MPI_Ibcast failed");
    wait(r);
  }
  return out;
}

int64_t MpiCommunicator::sum(int64_t value) {
  long long in = value, out = 0;
  MPI_Request r;
  TESSERA_CHECK(MPI_Iallreduce(&in, &out, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &r) == MPI_SUCCESS,
                "MPI_Iallreduce failed");
  wait(r);
  return out;
}

void MpiCommunicator::abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

}  // namespace tessera::mpi
