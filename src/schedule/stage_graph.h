// Schedule steps that rewrite the tensor-expression program itself before it
// becomes loops: inlining a stage into its consumers, cache_write (compute a
// stage into a local copy), cache_read (consumers read a packed copy) and
// rfactor (a reduction split into per-lane partial results).
// Stages are immutable, so each rewrite rebuilds the stages downstream of the
// change and returns the program's new outputs.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "te/tensor_expr.h"

namespace tessera::schedule {

// The stage of a program with the given name, or null.
te::StagePtr find_stage(const std::vector<te::Tensor>& outputs, const std::string& name);

// Rebuilds the program with each stage in `replace` swapped for its
// replacement (reads of every output of a replaced stage go to the same
// output index of the replacement); stages reading changed stages are rebuilt.
std::vector<te::Tensor> replace_stages(const std::vector<te::Tensor>& outputs,
                                       const std::unordered_map<const te::Stage*, te::StagePtr>& replace);

// Substitutes the formula of compute stage `name` into every consumer.
std::vector<te::Tensor> inline_stage(const std::vector<te::Tensor>& outputs, const std::string& name);

// cache_write: stage S is computed into a new stage "S.local" (same formula)
// and S becomes a copy of it.
std::vector<te::Tensor> cache_write(const std::vector<te::Tensor>& outputs, const std::string& name);

// cache_read: `consumer` reads a new stage "<stage>.<consumer>" that copies
// `stage` (which can then get its own layout and placement: packing).
std::vector<te::Tensor> cache_read(const std::vector<te::Tensor>& outputs, const std::string& stage,
                                   const std::string& consumer);

// rfactor: for a stage S whose formula is a reduction with axis r of
// constant extent N, a new stage "S.rf" of S's shape plus a last axis
// "r.lane" of extent F holds partial results: lane l reduces the points
// r = r.o*F + l (r.o over ceil(N/F), masked past N) with the other axes; S
// then reduces S.rf over its lanes (with S's own init). The partials are
// independent along r.lane, so it vectorizes; sums are reassociated.
std::vector<te::Tensor> rfactor(const std::vector<te::Tensor>& outputs, const std::string& name,
                                const std::string& axis, int64_t factor);

}  // namespace tessera::schedule
