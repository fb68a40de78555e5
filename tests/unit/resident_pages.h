// Residency as the kernel tells it, for tests of what a load keeps in
// memory: the bytes of a range's pages present in this process's page tables
// (/proc/self/pagemap, bit 63 of each page's entry). Independent of the code
// under test, which only ever asks the kernel to map or drop pages.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::testing {

// The bytes of the pages overlapping [data, data + bytes) that are present;
// -1 when pagemap cannot be read.
inline int64_t resident_bytes(const void* data, size_t bytes) {
  if (bytes == 0) return 0;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = begin / page, last = (begin + bytes - 1) / page;
  int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return -1;
  std::vector<uint64_t> entries(last - first + 1);
  const size_t want = entries.size() * sizeof(uint64_t);
  ssize_t got = pread(fd, entries.data(), want, static_cast<off_t>(first * sizeof(uint64_t)));
  close(fd);
  if (got != static_cast<ssize_t>(want)) return -1;
  int64_t present = 0;
  for (uint64_t e : entries) present += static_cast<int64_t>((e >> 63) & 1);
  return present * static_cast<int64_t>(page);
}

}  // namespace tessera::testing
