// Schedules: a serializable list of directives that say how a tensor-expression
// program becomes loops. Directives name stages and their loops; loop names are
// local to a stage: a compute stage starts with one loop per output axis and
// one per reduce axis, named after the axis variables, and directives derive new
// names (split "c" -> "c.o", "c.i"; fuse "n", "c" -> "n_c").
//
// Text form, one directive per line ('#' starts a comment):
//   split conv c 16          fuse conv n c             reorder conv n c.o h w c.i
//   split_shift conv w 24
//   vectorize conv c.i       unroll conv r             parallel conv n_c
//   compute_at pad conv h    compute_inline pad        compute_root pad
//   cache_write conv         cache_read w conv         layout conv 1 16
//   pad conv 1 16            rfactor sum r 16          accumulate gemm k.i
//   prefetch gemm b.gemm k gemm_out t 25 16
// `to_text` and `parse_schedule` round-trip exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::schedule {

enum class DirectiveKind : uint8_t {
  Split,          // stage, loop, factor: loop -> loop.o (outer), loop.i (inner, extent factor)
  SplitShift,     // like Split, but a last, partial outer iteration is shifted back to end at the extent
                  // (it recomputes some of the one before): no guards; for stages that only write their
                  // output (the kernel then writes no output over an input)
  Fuse,           // stage, outer, inner (adjacent, outer directly outside inner) -> "outer_inner"
  Reorder,        // stage, loops...: those loops take the positions they occupy, in the given order
  Vectorize,      // stage, loop (constant extent)
  Unroll,         // stage, loop (constant extent)
  Parallel,       // stage, loop
  ComputeAt,      // stage, target stage, target loop: computed inside that loop, only the region it needs
  ComputeInline,  // stage: its formula is substituted into its consumers
  ComputeRoot,    // stage: materialized in full before its consumers
  CacheWrite,     // stage: the stage is computed into a new stage "<stage>.local" and copied out
  CacheRead,      // tensor stage, consumer stage: consumer reads a copy "<stage>.<consumer>" (packing)
  Layout,         // stage, dim, factor: storage dim split by factor, inner part moved last (NCHW -> NCHWc)
  Pad,            // stage, dim, multiple: storage and compute domain of dim rounded up (extra elements 0)
  RFactor,        // stage, reduce axis r, factor F: partial results over r.o into "<stage>.rf" (one per lane
                  // r.lane of F), which the stage then combines (vectorizable row reductions; reassociates)
  Accumulate,     // stage, reduction loop: the elements updated inside the loop are held in a local accumulator
                  // across it (registers), read before it (init on the first iteration of the reduction loops
                  // outside) and written after: register tiles for a reduction split into blocks
  Prefetch,       // stage, input, reduction loop k, target stage, target loop t, ints ahead A, spread S: once every
                  // S iterations of k, the cache lines of `input` that k's body reads are prefetched as the
                  // iteration t + A of t (the next tile row's panel; at most t's last) reads them at step
                  // (k's S-block start + (t mod A) mod S), vector loops at their first vector: consecutive tiles
                  // prefetch interleaved rows of the operand the next A tiles stream, spread over their steps
};
std::string_view directive_kind_name(DirectiveKind k);  // the text keyword: "split", "compute_at" ...

struct Directive {
  DirectiveKind kind = DirectiveKind::Split;
  std::string stage;
  std::vector<std::string> names;  // loops, or (compute_at) target stage then loop, (cache_read) consumer
  std::vector<int64_t> ints;       // factors, dims

  bool operator==(const Directive&) const = default;
  std::string to_text() const;  // one line, no newline
};

struct Schedule {
  std::vector<Directive> directives;

  bool empty() const { return directives.empty(); }
  bool operator==(const Schedule&) const = default;
  Schedule& add(Directive s) {
    directives.push_back(std::move(s));
    return *this;
  }
  // Builders for each directive.
  Schedule& split(std::string stage, std::string loop, int64_t factor);
  Schedule& split_shift(std::string stage, std::string loop, int64_t factor);
  Schedule& fuse(std::string stage, std::string outer, std::string inner);
  Schedule& reorder(std::string stage, std::vector<std::string> loops);
  Schedule& vectorize(std::string stage, std::string loop);
  Schedule& unroll(std::string stage, std::string loop);
  Schedule& parallel(std::string stage, std::string loop);
  Schedule& compute_at(std::string stage, std::string target, std::string loop);
  Schedule& compute_inline(std::string stage);
  Schedule& compute_root(std::string stage);
  Schedule& cache_write(std::string stage);
  Schedule& cache_read(std::string stage, std::string consumer);
  Schedule& layout(std::string stage, int64_t dim, int64_t factor);
  Schedule& pad(std::string stage, int64_t dim, int64_t multiple);
  Schedule& rfactor(std::string stage, std::string axis, int64_t factor);
  Schedule& accumulate(std::string stage, std::string loop);
  Schedule& prefetch(std::string stage, std::string input, std::string loop, std::string target,
                     std::string target_loop, int64_t ahead, int64_t spread);
};

// True when some directive is a SplitShift (outputs recomputed in part: not in place).
bool has_shifted_split(const Schedule& s);

// The name split / fuse give their results.
inline std::string outer_name(const std::string& loop) { return loop + ".o"; }
inline std::string inner_name(const std::string& loop) { return loop + ".i"; }
inline std::string fused_name(const std::string& outer, const std::string& inner) { return outer + "_" + inner; }

// One directive per line.
std::string to_text(const Schedule& s);
// Parses the text form; throws tessera::Error naming the line on bad input.
Schedule parse_schedule(const std::string& text);
// The largest integer argument (factor, dim) parse_schedule accepts; larger
// ones could only come from a damaged or crafted file.
inline constexpr int64_t kMaxScheduleInt = int64_t{1} << 24;

}  // namespace tessera::schedule
