// The epilogue that finishes a contraction tile by tile (see tile_epilogue.h).
#include "schedule/tile_epilogue.h"

#include <set>

#include "schedule/stage_queries.h"

namespace tessera::schedule {

// The largest window whose reduction a pool's finishing stage may repeat
// inside the tile (every output computes it: a whole plane, a global pool's
// window, would be read twice).
constexpr int64_t kMaxFinishWindow = 64;

// The elementwise output that can finish a contraction tile by tile: the
// stages reading `st`, and those reading them in turn, are of its shape,
// without reductions (but a pool's finish over a window of at most
// kMaxFinishWindow taps), read each other only at their own output position
// (bias, activation, residual add, x * sigmoid(x)), and all end in one
// output stage, into which the others are inlined. Null when there is none.
const te::Stage* epilogue_of(const std::vector<te::Tensor>& outputs, const std::vector<te::StagePtr>& stages,
                             const te::Stage& st) {
  if (is_output(outputs, &st)) return nullptr;
  std::set<const te::Stage*> chain{&st};  // st and every stage that reads it, directly or not
  const te::Stage* sink = nullptr;
  for (const te::StagePtr& s : stages) {  // producers come before consumers
    bool reads = false;  // a stage reading only the sink is not part of the chain (below)
    for (const te::Tensor& in : s->inputs()) reads |= chain.count(&in.stage()) > 0 && &in.stage() != sink;
    if (!reads) continue;
    // A pool's finishing stage may hold a window reduction of its own over a
    // small window (MaxPool's NaN check, recomputed from the window in cache).
    const bool pool_finish = st.op_class == te::OpClass::Pool && s->op_class == te::OpClass::Pool &&
                             reduce_extent(st) <= kMaxFinishWindow;
    if (s->kind != te::StageKind::Compute || (te::has_reduce(s->body) && !pool_finish) || s->shapes[0] != st.shapes[0] ||
        s->axes.size() != st.shapes[0].size())
      return nullptr;
    for (const te::Tensor& in : s->inputs())
      if (chain.count(&in.stage()) && !te::reads_at_own_position(*s, in.stage())) return nullptr;
    if (is_output(outputs, s.get())) {
      if (sink) return nullptr;  // two outputs
      sink = s.get();
    }
    chain.insert(s.get());
  }
  if (!sink) return nullptr;
  // Every stage of the chain but the sink must be read only inside the chain
  // and not be an output (it is inlined into the sink). The sink, stored
  // whole, may be read by later stages too (the output of a Winograd
  // transform's block that its next input transform also reads).
  for (const te::StagePtr& s : stages) {
    if (chain.count(s.get())) continue;
    for (const te::Tensor& in : s->inputs())
      if (chain.count(&in.stage()) && &in.stage() != sink) return nullptr;
  }
  return sink;
}

}  // namespace tessera::schedule
