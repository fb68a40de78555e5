// Where a load's memory goes: with $TESSERA_MEMORY_TRACE set (to anything but
// "" or "0"), every phase of loading and compiling a model prints one line
// to stderr as it ends —
//   memory after import: RSS 180.2 MiB, peak 201.3 MiB, heap 99.1 MiB in use + 2.0 MiB free, mapped 12.0 MiB
// RSS and peak are the process's VmRSS and VmHWM (/proc/self/status; the
// peak only grows, so the first phase whose peak is higher is where it was
// reached); heap is malloc's view over all arenas (glibc malloc_info: bytes handed out, bytes
// free but still held, bytes in mmap'd chunks). Unset, a phase mark costs
// one check of a cached flag.
//
// bench/memory.py and the memory accounting of issue 22 read these lines;
// phases are marked by the ONNX importer (parsing the file, import), the
// driver's load pipeline (load passes) and the executor (target passes,
// types and tasks, kernels, packing, release); a `.tsr` load goes through
// the importer and the executor too, and ends with "artifact pages" (the
// original weights its plans read as they are brought back in).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

struct MemorySnapshot {
  std::optional<int64_t> rss, peak;   // VmRSS, VmHWM
  int64_t heap_used = 0;              // malloc: bytes in use, every arena (mmap'd chunks too)
  int64_t heap_free = 0;              // malloc: free bytes it keeps
  int64_t heap_mapped = 0;            // of heap_used: in mmap'd chunks
};

// The process's memory now (heap fields 0 without glibc's malloc_info).
MemorySnapshot memory_snapshot();

// Whether $TESSERA_MEMORY_TRACE asks for the phase lines (read once).
bool memory_trace_enabled();

// Prints "memory after PHASE: ..." to stderr when tracing is on.
void mark_memory_phase(std::string_view phase);

// The line mark_memory_phase prints for `s`, without the newline.
std::string format_memory_phase(std::string_view phase, const MemorySnapshot& s);

// Returns the heap's free memory to the system (glibc malloc_trim): what
// loading and compiling freed leaves the process instead of staying on
// malloc's free lists. Returns whether anything was released; false on
// other C libraries. Counts its calls (trims_done) so tests can see it ran.
bool release_free_heap();
int64_t trims_done();

}  // namespace tessera
