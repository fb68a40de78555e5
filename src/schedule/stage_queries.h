// Questions the schedule rules ask of a stage and its program: is it an
// output, how many lanes its type has, how long its reduction is, which reads
// index with which variables, what its weights weigh, which stages to
// materialize.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/target_info.h"
#include "te/tensor_expr.h"

namespace tessera::schedule {

// True when `s` computes one of `outputs`.
bool is_output(const std::vector<te::Tensor>& outputs, const te::Stage* s);
// Lanes of a vector of `dtype` elements on the target.
int64_t lanes_of(const TargetInfo& target, DType dtype);
// Iterations of the stage's top-level reduction (1 without one; constant axes only).
int64_t reduce_extent(const te::Stage& s);
// True when some read of `in` in `st` has an index that uses `v`.
bool reads_use(const te::Stage& st, const te::Stage& in, const loop::Var& v);
// The dimension of `in` that every read of it in `st` indexes with exactly
// `v`; -1 when none does or the reads disagree.
int dim_indexed_by(const te::Stage& st, const te::Stage& in, const loop::Var& v);
// Elements of the stage's constant inputs (weights) and of its output and
// other inputs (activations).
struct Footprint {
  int64_t weights = 0, activations = 0;
};
Footprint footprint(const te::Stage& st, const TargetInfo& target);
// Bytes of the stage's constant inputs (weights), each at its own element type.
int64_t weight_bytes(const te::Stage& st, const TargetInfo& target);

// True when every read of the stage is at its own output position in a
// tensor of its own shape (elementwise on equal shapes).
bool reads_in_place(const te::Stage& st);
// True when the stage's formula has a guarded select (if_then_else).
bool has_guard(const te::Stage& st);
// The innermost axis the stage's guard cuts test (guarded selects on one
// comparison of its axes with a constant: a concatenation's input
// boundaries, unswitch_guards.h); -1 when it has none.
int guard_cut_axis(const te::Stage& st);
// True when the stage is split into whole vectors of its last axis and no
// guard of its formula reads that axis: each guard is one test per vector.
bool lane_uniform_guards(const te::Stage& st, const TargetInfo& target);
// True when a stage is cheap enough to recompute at every read of a
// contraction's inner loop (see the definition); with `value_selects`,
// selects between values count as operations.
bool cheap_prologue(const std::vector<te::Tensor>& outputs, const te::Stage& st, bool value_selects = false);
// True when the schedule already materializes the stage (compute_root).
bool rooted(const Schedule& s, const std::string& stage);
// True when the schedule already says where the stage is computed
// (compute_root or compute_at).
bool placed(const Schedule& s, const std::string& stage);
// Inlined stages of the program worth materializing once (read by several
// stages, by a nested pick, or broadcast), outside the epilogues of the
// `tiled` contractions.
std::vector<const te::Stage*> shared_stages(const std::vector<te::Tensor>& outputs,
                                            const std::vector<te::StagePtr>& stages,
                                            const std::set<const te::Stage*>& tiled);

}  // namespace tessera::schedule
