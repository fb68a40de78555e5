// A blocked convolution's padded input made chunk by chunk (see chunked_padding.h).
#include "schedule/chunked_padding.h"

#include <algorithm>

#include "schedule/stage_queries.h"

namespace tessera::schedule {

namespace {

// The rule as data: a chunk's padded rows fit this share of the planned
// second-level cache (the rest holds the weights and the output tiles); the
// weights, which every chunk reads again, at most this share of it; and at
// least this many (image, chunk) iterations, so that every thread of a
// machine of up to that many cores has some (a default schedule does not
// depend on the host's cores).
constexpr double kPadChunkCacheShare = 0.5;
constexpr double kPadChunkWeightShare = 0.5;
constexpr int64_t kPadChunkMinTasks = 8;

}  // namespace

const te::Stage* padded_input(const te::Stage& st, const RuleContext& ctx) {
  const Dims& out = st.shapes[0];
  if (st.op_class != te::OpClass::ConvBlocked || out.size() != 5) return nullptr;
  for (const te::Tensor& in : st.inputs()) {
    const te::Stage& p = in.stage();
    if (p.kind != te::StageKind::Compute || te::has_reduce(p.body) || !has_guard(p) || p.shapes[0].size() != 5 ||
        p.shapes[0].back() != out.back() || p.inputs().empty() || is_output(ctx.outputs, &p))
      continue;
    bool stored = true;
    for (const te::Tensor& x : p.inputs())
      stored = stored && x.stage().kind == te::StageKind::Placeholder && !ctx.target.constant_inputs.count(x.name());
    for (const te::StagePtr& other : ctx.stages)
      if (other.get() != &st)
        for (const te::Tensor& x : other->inputs()) stored = stored && &x.stage() != &p;
    if (stored) return &p;
  }
  return nullptr;
}

int64_t default_pad_chunk(const te::Stage& st, const te::Stage& pad, const TargetInfo& target, int64_t tiles,
                          int64_t th) {
  const Dims &out = st.shapes[0], &in = pad.shapes[0];
  if (tiles < 1 || th < 1 || out[2] < 1 || in[0] < 1 || in[2] < 1) return 0;
  const double esize = static_cast<double>(dtype_size(pad.dtypes[0]));
  const double weights = static_cast<double>(weight_bytes(st, target));
  const double l2 = static_cast<double>(target.planned.l2), padded = static_cast<double>(numel_of(in)) * esize;
  if (weights > kPadChunkWeightShare * l2 || padded <= l2) return 0;
  // Input rows per output row (the stride) and the kernel's extra rows:
  // c output rows read c * stride + extra padded rows.
  const int64_t stride = std::max<int64_t>((in[2] - 1) / out[2], 1), extra = std::max<int64_t>(in[2] - stride * out[2], 0);
  const double row = padded / static_cast<double>(in[0] * in[2]);  // one padded row of one image
  int64_t best = 0;
  for (int64_t c = 1; c <= tiles; ++c) {
    if (tiles % c != 0) continue;
    const int64_t rows = std::min(c * th * stride + extra, in[2]);
    if (static_cast<double>(rows) * row > kPadChunkCacheShare * l2 || in[0] * (tiles / c) < kPadChunkMinTasks) break;
    best = c;
  }
  return best;
}

void schedule_chunked_padding(Schedule& s, const te::Stage& pad, const std::string& tiled, const std::string& loop,
                              int64_t lanes) {
  s.compute_at(pad.name, tiled, loop);
  const std::string lane = pad.axes.back().name();
  if (pad.shapes[0].back() > lanes) {
    s.split(pad.name, lane, lanes);
    s.vectorize(pad.name, inner_name(lane));
  } else {
    s.vectorize(pad.name, lane);
  }
}

}  // namespace tessera::schedule
