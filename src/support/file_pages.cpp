// Dropping and bringing in pages of a file mapping (see file_pages.h).
#include "support/file_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "support/int_div.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif

namespace tessera {

size_t page_bytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

bool drop_file_pages(const void* data, size_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = round_up(begin, page_bytes());
  const uintptr_t last = round_down(begin + bytes, page_bytes());
  if (last <= first) return false;
  return madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) == 0;
}

void populate_file_pages(const void* data, size_t bytes) {
  if (bytes == 0) return;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = round_down(begin, page_bytes());
  const uintptr_t last = round_up(begin + bytes, page_bytes());
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_POPULATE_READ) == 0 || errno != EINVAL) return;
  // A kernel without MADV_POPULATE_READ: fault each page in by reading it.
  // (Other failures — a file truncated under the mapping — are left to the
  // reads that need the bytes, which report them as they would have.)
  for (uintptr_t p = first; p < last; p += page_bytes()) (void)*reinterpret_cast<const volatile char*>(p);
}

}  // namespace tessera
