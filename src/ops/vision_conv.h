// Col2Im and DeformConv facts shared by the reference kernels
// (vision_conv.cpp) and the tensor expressions (expr_nn_vision.cpp):
// attributes, output size, shape checks, and for DeformConv the offset /
// mask channels and sampling positions of each tap.
#pragma once

#include <vector>

#include "ops/op_attrs.h"
#include "ops/registry.h"

namespace tessera {

// Geometry of one Col2Im: x [N, C*bp, L] of L sliding blocks of bp elements
// (the product of block) summed into an image [N, C, image...]; nb[d] block
// positions along spatial axis d (their product is L).
struct Col2ImShape {
  std::vector<int64_t> image, block, dil, str, pads, nb;  // pads: the r begins, then the r ends
  int64_t N = 0, C = 0, L = 0, bp = 1;
  size_t rank() const { return image.size(); }  // spatial axes
};

// Checks a Col2Im's input dims x, image_shape and block_shape values and its
// attributes (dilations, strides, pads), and counts its block positions.
Col2ImShape col2im_shape(const OpAttrs& attrs, const Dims& x, std::vector<int64_t> image, std::vector<int64_t> block);

// Geometry of one 2-D DeformConv: X [N, C, H, W], W [OC, C/group, kh, kw],
// offset [N, offset_group*2*K, oh, ow], mask [N, offset_group*K, oh, ow] with K = kh*kw taps.
struct DeformConvShape {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  int64_t oh = -1, ow = -1;  // -1 where X's spatial dims are unknown
  // Known only from deform_conv_shape:
  int64_t N = -1, C = -1, H = -1, W = -1, OC = -1, group = 1, offset_group = 1;

  int64_t taps() const { return kh * kw; }
  // Channel of tap k's row offset in offset group o (the column offset follows it).
  template <class I> I offset_channel(const I& o, const I& k) const { return o * (2 * taps()) + k * 2; }
  // Channel of tap k's mask in offset group o.
  template <class I> I mask_channel(const I& o, const I& k) const { return o * taps() + k; }
  // Input row / column that tap (ki, kj) of output (oy, ox) reads before its offset is added.
  template <class I> I sample_y(const I& oy, const I& ki) const { return oy * sh - pt + ki * dh; }
  template <class I> I sample_x(const I& ox, const I& kj) const { return ox * sw - pl + kj * dw; }
};

// Kernel shape, strides, dilations and pads of a 2-D DeformConv, and the output size where X's dims allow.
DeformConvShape deform_conv_geom(const OpAttrs& attrs, const Dims& x, const Dims& w);

// Checks X, W, offset and the optional mask and B (nullptr when absent) of a 2-D DeformConv.
DeformConvShape deform_conv_shape(const OpAttrs& attrs, const Dims& x, const Dims& w, const Dims& offset,
                                  const Dims* mask, const Dims* bias);

}  // namespace tessera
