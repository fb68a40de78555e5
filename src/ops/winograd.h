// Winograd convolution F(m x m, 3x3), m = 4, 3 or 2, in the channel-blocked
// layout (ops of domain "tessera", created by the Winograd pass,
// src/opt/winograd.cpp, from 3x3 stride-1 ConvBlocked nodes). The output is
// cut into m x m tiles; each tile's a x a input window d (a = m + 2) and each
// 3x3 kernel g go to the Winograd domain, where the convolution is P = a^2
// independent channel contractions (matrix products): 36 / 16 = 2.25
// multiplications per output for m = 4, 25 / 9 = 2.78 for m = 3, 16 / 4 = 4
// for m = 2, instead of 9:
//
//   Y_tile = A^T [ (G g G^T) (.) (B^T d B) ] A      ((.): element by element)
//
//   WinogradInput  X [N, Cb, H, W, b]          -> V [P, Cb, T, b]
//       tile t = (n*TH + th)*TW + tw of T = N*TH*TW, point p = a*pi + pj:
//       V[p, cb, t, l] = sum_{i, j} BT[pi][i] BT[pj][j] *
//           x[n, cb, m*th - ph + i, m*tw - pw + j, l]   (zero outside X)
//       attributes pads = [ph, pw] (top, left), tiles = [TH, TW], tile = m
//   WinogradGemm   V [P, Cb, T, b], U [P, Mb, R, b, b] -> M [P, Mb, T, b]
//       M[p, kb, t, kc] = sum_{rb, ri} U[p, kb, rb, ri, kc] * V[p, s(kb) + rb, t, ri]
//       with s(kb) = (kb / group_div) * group_mul as ConvBlocked's
//   WinogradOutput M [P, Mb, T, b], B [Mb, b] -> Y [N, Mb, OH, OW, b]
//       Y[n, kb, oh, ow, kc] = B[kb, kc] + sum_{i, j} AT[oh%m][i] AT[ow%m][j] *
//           M[a*i + j, kb, (n*TH + oh/m)*TW + ow/m, kc]
//       attributes output = [OH, OW], tile = m
//
// U = G g G^T is computed once by the pass (in double). The matrices and their
// interpolation points are in support/winograd_transform.h.
#pragma once

#include "ops/registry.h"
#include "ops/blocked_conv.h"
#include "support/winograd_transform.h"

namespace tessera {

// Shapes of the three ops, read from a node's inputs and attributes and
// checked against each other, throwing naming the node.
struct WinogradGeom {
  int m = 4;  // output tile side
  int64_t N = 0, b = 0;
  int64_t Cb = 0, Mb = 0, R = 0;  // input blocks, output blocks, blocks each output block reads
  BlockGroups groups;  // WinogradGemm
  int64_t H = 0, W = 0, ph = 0, pw = 0;  // WinogradInput
  int64_t TH = 0, TW = 0, T = 0;         // tiles: per image column, per row, in all (N * TH * TW)
  int64_t OH = 0, OW = 0;                // WinogradOutput
  int64_t first_block(int64_t kb) const { return groups.first_block(kb); }
  const WinogradTransform& transform() const { return winograd_transform(m); }
};
WinogradGeom winograd_input_geom(const OpAttrs& attrs, const Dims& x);
WinogradGeom winograd_gemm_geom(const OpAttrs& attrs, const Dims& v, const Dims& u);
WinogradGeom winograd_output_geom(const OpAttrs& attrs, const Dims& m);

void register_winograd_ops(OpRegistry& r);

}  // namespace tessera
