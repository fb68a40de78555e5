// One copy of the weights: the original constants that every plan reads only
// in packed form (packed weights, Slot::data) leave the process's memory, yet
// stay readable at their address by every path that still wants them.
//
// How: a constant whose buffer is a page mapping of its own
// (Tensor::page_mapped, every tensor of 256 KiB or more) has its bytes
// written once to an unlinked file in a scratch directory, and that file is
// mapped over the buffer, at the same address, read-only (MAP_FIXED): the
// tensor, its copies and every pointer to it stay valid and read the same
// bytes, while its anonymous pages are freed. "Releasing" it later is
// madvise(MADV_DONTNEED): the pages leave the process; a later read (a plan
// for a new input shape whose packing differs, Executor::save, the reference
// interpreter, the tuner) faults them back in from the page cache or the file.
//
// Why this and not the alternatives: the graph's constants are not the
// model file's bytes (the load pipeline folds batch norms into weights, the
// target pipeline re-lays out convolution weights, Winograd transforms them),
// so re-reading the model file by offset would give the wrong values; packing
// may compute (Winograd's weight transform), so the originals cannot be
// reconstructed from the packed form in general; and swapping a Value's
// tensor for a reloadable one would race with runs and readers of
// Executor::graph(). Remapping in place changes no object, so concurrent
// runs and readers are unaffected: they always read the right bytes.
//
// The file is private to the process (O_TMPFILE, else created and unlinked at
// once) and vanishes with the last mapping. Its pages live in the page cache,
// written back to disk and dropped under memory pressure like any file's; in a
// tmpfs directory they stay in memory (shared memory, not this process's RSS),
// which available() reports. Scratch directory: $TESSERA_WEIGHT_DIR, else
// $TMPDIR, else /tmp. When no file can be made, or a write fails (disk full),
// constants stay in memory: nothing changes but the memory used.
//
// Thread-safe: every member may be called from several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tessera/tensor.h"

namespace tessera::runtime {

// Drops the whole pages inside [data, data + bytes) of a read-only-used file
// mapping (a loaded artifact's weights) from this process: they are read
// from the file again on the next access. Only for bytes never written
// through the mapping (a written private page would revert to the file's).
// Returns whether any page was dropped.
bool drop_file_pages(const void* data, size_t bytes);

class WeightStore {
 public:
  // A store in `dir` ("": the scratch directory above). Never throws: a store
  // that cannot be made keeps nothing (available() false, why() says why).
  explicit WeightStore(std::string dir = "");
  ~WeightStore();
  WeightStore(const WeightStore&) = delete;
  WeightStore& operator=(const WeightStore&) = delete;

  // Drops the pages of constant `t` from this process's memory; the first
  // call backs them by the file. Constants whose buffer is not page_mapped()
  // (small ones) stay as they are. Returns whether `t` is backed by the store.
  // The store keeps a copy of `t` (its buffer lives at least as long).
  bool release(const Tensor& t);

  // False when the store keeps nothing (more): no file could be made, or a
  // write failed (disk full); why() then says why.
  bool available() const;
  std::string why() const;
  const std::string& directory() const { return dir_; }
  bool in_memory_filesystem() const { return tmpfs_; }
  // Bytes of constants backed by the file.
  int64_t bytes() const;
  // True when the buffer at `data` is backed by the store.
  bool holds(const void* data) const;

  // The scratch directory used when none is given.
  static std::string default_directory();

 private:
  struct Entry {
    Tensor tensor;  // keeps the buffer (and so the address) alive
    size_t length = 0;
  };
  std::string dir_;
  bool tmpfs_ = false;
  int fd_ = -1;
  mutable std::mutex mu_;
  std::string why_;  // non-empty: the store takes no more constants
  size_t end_ = 0;  // the file's size: the next tensor's offset (page-aligned)
  std::map<const void*, Entry> entries_;
  int64_t bytes_ = 0;
};

}  // namespace tessera::runtime
