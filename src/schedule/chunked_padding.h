// A blocked convolution's zero-padded input made chunk by chunk: instead of
// one copy of the whole padded input before the convolution (at batch 8 a
// RegNet's first grouped 3x3 layer pads 38 MB, written to memory and read
// back), the tile loops run in parallel over (image, chunk of output rows)
// only, and each iteration pads the input rows its chunk reads into a buffer
// of its own, from which its tiles then read while it is in the
// second-level cache. Every chunk re-reads all the weights, so this is for
// convolutions whose weights stay in that cache (grouped and narrow ones),
// and only where the whole padded copy would not.
#pragma once

#include <cstdint>
#include <string>

#include "schedule/schedule_rule.h"

namespace tessera::schedule {

// The stage through which the blocked 2-D convolution `st` reads its
// channel-blocked input zero-padded, when only `st` reads it: a guarded
// copy, without reduction, of inputs the kernel is given (not constants), of
// `st`'s rank and block, not an output; null when there is none.
const te::Stage* padded_input(const te::Stage& st, const RuleContext& ctx);

// The default chunk, in tiles of `th` output rows out of the `tiles` tiles
// of an image's rows: the most whose padded input rows fit
// kPadChunkCacheShare of the planned second-level cache while the images
// times the chunks give at least kPadChunkMinTasks parallel iterations; 0
// (no chunks) where the weights outweigh kPadChunkWeightShare of that cache,
// the whole padded input fits it, or no chunk qualifies.
int64_t default_pad_chunk(const te::Stage& st, const te::Stage& pad, const TargetInfo& target, int64_t tiles,
                          int64_t th);

// The directives for `pad`: computed inside loop `loop` of stage `tiled`
// (the region that loop's iteration reads), its lanes vectorized.
void schedule_chunked_padding(Schedule& s, const te::Stage& pad, const std::string& tiled, const std::string& loop,
                              int64_t lanes);

}  // namespace tessera::schedule
