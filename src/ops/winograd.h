// Winograd convolution F(4x4, 3x3) in the channel-blocked layout (ops of
// domain "tessera", created by the Winograd pass, src/opt/winograd.cpp, from
// 3x3 stride-1 ConvBlocked nodes). The output is cut into 4x4 tiles; each
// tile's 6x6 input window d and each 3x3 kernel g go to the Winograd domain,
// where the convolution is 36 independent channel contractions (matrix
// products) with 2.25 multiplications per output instead of 9:
//
//   Y_tile = A^T [ (G g G^T) (.) (B^T d B) ] A      ((.): element by element)
//
//   WinogradInput  X [N, Cb, H, W, b]          -> V [36, Cb, T, b]
//       tile t = (n*TH + th)*TW + tw of T = N*TH*TW, point p = 6*pi + pj:
//       V[p, cb, t, l] = sum_{i, j} BT[pi][i] BT[pj][j] *
//           x[n, cb, 4*th - ph + i, 4*tw - pw + j, l]   (zero outside X)
//       attributes pads = [ph, pw] (top, left), tiles = [TH, TW]
//   WinogradGemm   V [36, Cb, T, b], U [36, Mb, R, b, b] -> M [36, Mb, T, b]
//       M[p, kb, t, kc] = sum_{rb, ri} U[p, kb, rb, ri, kc] * V[p, s(kb) + rb, t, ri]
//       with s(kb) = (kb / group_div) * group_mul as ConvBlocked's
//   WinogradOutput M [36, Mb, T, b], B [Mb, b] -> Y [N, Mb, OH, OW, b]
//       Y[n, kb, oh, ow, kc] = B[kb, kc] + sum_{i, j} AT[oh%4][i] AT[ow%4][j] *
//           M[6i + j, kb, (n*TH + oh/4)*TW + ow/4, kc]
//       attribute output = [OH, OW]
//
// U = G g G^T is computed once by the pass (in double). The interpolation
// points are 0, 1, -1, 2, -2 (and infinity): every entry of B^T and A^T is a
// small integer, exact in float.
#pragma once

#include "ops/registry.h"
#include "ops/blocked_conv.h"
#include "support/winograd_f43.h"

namespace tessera {

// Shapes of the three ops, read from a node's inputs and attributes and
// checked against each other, throwing naming the node.
struct WinogradGeom {
  int64_t N = 0, b = 0;
  int64_t Cb = 0, Mb = 0, R = 0;  // input blocks, output blocks, blocks each output block reads
  BlockGroups groups;  // WinogradGemm
  int64_t H = 0, W = 0, ph = 0, pw = 0;  // WinogradInput
  int64_t TH = 0, TW = 0, T = 0;         // tiles: per image column, per row, in all (N * TH * TW)
  int64_t OH = 0, OW = 0;                // WinogradOutput
  int64_t first_block(int64_t kb) const { return groups.first_block(kb); }
};
WinogradGeom winograd_input_geom(const OpAttrs& attrs, const Dims& x);
WinogradGeom winograd_gemm_geom(const OpAttrs& attrs, const Dims& v, const Dims& u);
WinogradGeom winograd_output_geom(const OpAttrs& attrs, const Dims& m);

void register_winograd_ops(OpRegistry& r);

}  // namespace tessera
