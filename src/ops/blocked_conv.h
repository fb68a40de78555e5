// Convolutions in the channel-blocked layout NCHWc (domain "tessera",
// created by the blocked-layout pass, src/opt/blocked_layout.cpp): an
// activation [N, C, H, W] is stored as [N, ceil(C/b), H, W, b], channel c at
// block c / b, lane c % b; channels past C (the last block's padding) hold
// zeros or values derived from zeros, never read as real channels. A video
// activation [N, C, D, H, W] is blocked alike as [N, Cb, D, H, W, b].
//
//   ReorderToBlocked    X [N, C, sp...]        -> [N, Cb, sp..., b]   (block = b; padding lanes 0)
//   ReorderFromBlocked  X [N, Cb, sp..., b]    -> [N, C, sp...]       (channels = C)
//   ConvBlocked         X [N, Cb, H, W, b], W [Mb, R, kh, kw, b, b], B [Mb, b] -> Y [N, Mb, OH, OW, b]
//       y[n, kb, oh, ow, kc] = B[kb, kc] + sum_{rb, ri, ry, rx}
//           W[kb, rb, ry, rx, ri, kc] * x[n, s(kb) + rb, oh*sh - ph + ry*dh, ow*sw - pw + rx*dw, ri]
//       with s(kb) = min((kb / group_div) * group_mul, group_last) the first
//       input block an output block reads (0 for a dense convolution, whose
//       R = Cb; for a grouped one the first block of its window of whole
//       groups, zeros in W outside its own group; BlockGroups below).
//       in_channels (optional, dense only): the sum runs over the first
//       in_channels of the R * b input channels (rb * b + ri < in_channels),
//       the last block's padding lanes not read (the blocked-layout pass
//       sets it when C is not a multiple of b: 24 channels in 2 blocks of 16
//       would multiply 8 padding lanes by zero weights at every tap).
//       Plain input: X is NCHW [N, C, H, W] (an image with few channels)
//       and W is [Mb, C, kh, kw, b]; the sum runs over c, ry, rx. X of rank
//       4 is always plain; a video's X [N, C, D, H, W] with W [Mb, C, kd,
//       kh, kw, b] needs the attribute plain_input = 1 (rank 5 is otherwise
//       the 2-D blocked form).
//   DepthwiseConvBlocked X [N, Cb, H, W, b], W [Cb, kh, kw, b], B [Cb, b] -> [N, Cb, OH, OW, b]
//
// Both have a 3-D form over blocked video activations: X [N, Cb, D, H, W, b],
// W [Mb, R, kd, kh, kw, b, b] (depthwise [Cb, kd, kh, kw, b]) -> Y [N, Mb, OD,
// OH, OW, b], the kernel depth one more reduction (after the input channel,
// before the rows) and strides, dilations and pads with three entries each
// (pads: begin d, h, w, end d, h, w); plain_input = 1 for a clip with few
// channels read as it is.
//
// The sums are defined in the order of the reference Conv's (input channel,
// then kernel row, kernel column, starting from the bias), padding taps
// adding exact zeros, so the reference kernels here give the Conv's bits;
// the default schedule runs the lanes (ri) innermost, as W's layout does:
// each step of the inner loop reads the next vector of W and the next
// channel of the same input pixels.
#pragma once

#include "ops/op_attrs.h"
#include "ops/registry.h"
#include "support/int_div.h"

namespace tessera {

inline constexpr const char* kBlockedDomain = "tessera";

// Blocks of `b` lanes holding `c` channels (the last one padded).
inline int64_t channel_blocks(int64_t c, int64_t b) { return ceil_div(c, b); }

// How each output block of a grouped blocked contraction (ConvBlocked,
// WinogradGemm) finds its input blocks: it reads R of them from
// first_block(kb) = min((kb / div) * mul, last); mul = 0 is a dense one, all
// from block 0. `last` (-1: none) clamps the windows at the input's end: when
// the channels end inside the last window, its R blocks would run past the
// input's last block, so it starts `R` blocks before the end (its packed
// weights placed to match). Stored as the node attributes group_div,
// group_mul and group_last (absent when dense or unclamped).
struct BlockGroups {
  int64_t div = 1, mul = 0, last = -1;
  int64_t first_block(int64_t kb) const {
    if (mul == 0) return 0;
    const int64_t f = kb / div * mul;
    return last >= 0 && f > last ? last : f;
  }
  // Reads and checks the node's attributes, throwing naming the node.
  static BlockGroups read(const OpAttrs& attrs);
  // Adds the attributes to `attrs` when grouped.
  void write(AttrMap& attrs) const;
  // The attributes' declarations, for the ops that carry them.
  static std::vector<AttrSpec> attr_specs();
};

// Geometry of a ConvBlocked / DepthwiseConvBlocked node for given input and
// weight dims; checks them against each other and the attributes, throwing
// naming the node.
struct BlockedConvGeom {
  bool depthwise = false, plain_input = false;
  int64_t N = 0, b = 0;
  int64_t in_c = 0;   // input channel dim: blocks (blocked input) or channels (plain)
  int64_t Mb = 0;     // output channel blocks
  int64_t R = 0;      // reduction extent over input blocks (plain: channels); 1 for depthwise
  int64_t rin = 0;    // input channels summed per output block: 1 depthwise, R plain, else R * b or in_channels
  BlockGroups groups;
  int64_t spatial = 2;  // 2 (images) or 3 (videos: the depth fields below are 1 and 0 otherwise)
  int64_t id = 1, od = 1, kd = 1, sd = 1, dd = 1, pd = 0, pd_end = 0;
  int64_t ih = 0, iw = 0, oh = 0, ow = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t ph = 0, pw = 0, ph_end = 0, pw_end = 0;
  Dims out_dims() const { return spatial == 3 ? Dims{N, Mb, od, oh, ow, b} : Dims{N, Mb, oh, ow, b}; }
  int64_t first_block(int64_t kb) const { return groups.first_block(kb); }
};
BlockedConvGeom blocked_conv_geom(const OpAttrs& attrs, const Dims& x, const Dims& w);

void register_blocked_conv_ops(OpRegistry& r);

}  // namespace tessera
