// The weight store: constants' pages backed by a private scratch file,
// mapped over their buffers in place (see weight_store.h for why).
#include "runtime/weight_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "support/file_pages.h"
#include "support/int_div.h"

namespace tessera::runtime {

namespace {

constexpr long kTmpfsMagic = 0x01021994;  // statfs f_type of tmpfs

// Writes all of [data, data + n) at `offset`; false on any failure.
bool write_all(int fd, const void* data, size_t n, size_t offset) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = pwrite(fd, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

std::string WeightStore::default_directory() {
  for (const char* var : {"TESSERA_WEIGHT_DIR", "TMPDIR"})
    if (const char* d = std::getenv(var); d && *d) return d;
  return "/tmp";
}

WeightStore::WeightStore(std::string dir) : dir_(dir.empty() ? default_directory() : std::move(dir)) {
  fd_ = open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) {  // a file system without O_TMPFILE: a named file, unlinked at once
    std::string name = dir_ + "/tessera-weights-XXXXXX";
    fd_ = mkostemp(name.data(), O_CLOEXEC);
    if (fd_ >= 0) unlink(name.c_str());
  }
  if (fd_ < 0) {
    why_ = "cannot create a file in " + dir_ + ": " + std::strerror(errno);
    return;
  }
  struct statfs fs {};
  tmpfs_ = fstatfs(fd_, &fs) == 0 && static_cast<long>(fs.f_type) == kTmpfsMagic;
}

WeightStore::~WeightStore() {
  // Mappings outlive the descriptor; the file goes with the last of them.
  if (fd_ >= 0) close(fd_);
}

bool WeightStore::release(const Tensor& t) {
  if (fd_ < 0 || !t.defined() || !t.page_mapped() || t.nbytes() == 0) return false;
  void* at = const_cast<void*>(t.raw());
  const size_t len = round_up(t.nbytes(), page_bytes());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(at); it != entries_.end()) {
    madvise(at, it->second.length, MADV_DONTNEED);  // file-backed: the bytes stay in the file
    return true;
  }
  if (!why_.empty()) return false;
  // The whole pages of the buffer (the tail past nbytes is its own, zero).
  if (!write_all(fd_, at, len, end_)) {
    why_ = "writing to a file in " + dir_ + " failed: " + std::strerror(errno);
    if (ftruncate(fd_, static_cast<off_t>(end_)) != 0) why_ += " (and the file could not be cut back)";
    return false;
  }
  // Map the file's copy elsewhere, then move that mapping over the buffer:
  // the buffer's old pages go only once the new mapping is in place.
  void* m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(end_));
  if (m == MAP_FAILED) return false;
  if (mremap(m, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED) {
    munmap(m, len);
    return false;
  }
  entries_.emplace(at, Entry{t, len});
  end_ += len;
  bytes_ += static_cast<int64_t>(t.nbytes());
  return true;
}

bool WeightStore::available() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fd_ >= 0 && why_.empty();
}

std::string WeightStore::why() const {
  std::lock_guard<std::mutex> lock(mu_);
  return why_;
}

int64_t WeightStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

bool WeightStore::holds(const void* data) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(data) > 0;
}

}  // namespace tessera::runtime
