// The arena layout: every intermediate tensor of a compiled program gets an
// offset into one arena, chosen ahead of time so that buffers
// that are live at the same step never share bytes, while buffers with
// disjoint lifetimes may.
//
// A program has steps 0, 1, 2, ...; a buffer is live from the step that writes
// it (first_step) to the last step that reads it (last_step, inclusive).
//
// In-place hints: a request may name (inplace_of) another buffer it may
// overwrite, for an elementwise op that writes its output over its input. The
// hint is honoured, giving both buffers the same offset, when it is feasible:
//   - the target's last use is the step that writes this buffer
//     (target.last_step == first_step) and the target was written earlier
//     (target.first_step < first_step),
//   - this buffer is no larger than the target,
//   - the target is not already overwritten in place by another buffer (the
//     first feasible hint in request order wins).
// Honoured hints form chains (A overwritten by B overwritten by C ...) that are
// placed as one unit; within a chain only consecutive links share a live step,
// so each buffer overlaps in memory only with its direct in-place partners.
//
// Placement heuristic: units are placed one by one, largest first, each at the
// offset that leaves the tightest gap among the buffers already placed whose
// lifetimes overlap (best fit). First fit, a second ordering (by size times
// lifetime) and the no-reuse layout (units one after another) are tried too,
// and the smallest arena wins, so the arena never exceeds the no-reuse
// layout's. The result is deterministic; planning n buffers costs O(n^2 log n)
// (about 0.1 s for 5000 buffers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/memory.h"

namespace tessera::runtime {

struct BufferRequest {
  int64_t size_bytes = 0;
  int64_t first_step = 0;
  int64_t last_step = 0;    // inclusive; >= first_step
  int64_t alignment = 64;   // a power of two; the offset is a multiple of it
  int64_t inplace_of = -1;  // index of a request this one may overwrite, or -1
};

struct ArenaLayout {
  std::vector<int64_t> offsets;   // per request, into the arena
  std::vector<int64_t> alias_of;  // per request: the honoured in-place target, or -1
  int64_t arena_bytes = 0;        // max over buffers of offset + size (peak memory)
  int64_t total_bytes = 0;        // sum of all sizes: memory without reuse
  // max over steps of the bytes live at that step, a buffer that overwrites a
  // live in-place target counting zero (no plan can use less than this).
  int64_t lower_bound_bytes = 0;
  int64_t inplace_honoured = 0;   // number of honoured in-place hints
};

// Plans offsets for the requests; throws tessera::Error for an invalid
// request (negative size or step, last_step < first_step, alignment not a
// power of two, inplace_of out of range or naming itself).
ArenaLayout layout_arena(const std::vector<BufferRequest>& requests);

// "peak 12.3 MiB (no reuse: 40.1 MiB, lower bound 11.9 MiB)".
std::string describe(const ArenaLayout& plan);

using tessera::format_bytes;  // support/memory.h

}  // namespace tessera::runtime
