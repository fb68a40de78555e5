// Winograd's minimal filtering F(m x m, 3x3), m = 2, 3 or 4 (ops/winograd.h has the
// algorithm): the transform matrices of each output tile size Tessera uses,
// shared by the Winograd ops, the pass that creates them and their schedules.
//
// The matrices are made by the Toom-Cook construction from interpolation
// points (plus the point at infinity): for finite points a_j,
//   A^T[i][j] = a_j^i,  G[j][k] = a_j^k / prod_{l != j} (a_j - a_l),
//   B^T[j] = the coefficients of prod_{l != j} (x - a_l),
// and the infinite point's row or column picks the highest power. The points
// decide the rounding error: F(4x4) takes 0, 1, -1, 1/2, -2 (Barabasz et al.,
// "Error analysis and improving the accuracy of Winograd convolution",
// 2020), which round several times less than the usual 0, 1, -1, 2, -2;
// F(2x2) takes 0, 1, -1 and rounds about as the direct form does; F(3x3,
// 3x3) (alpha 5, 25 points) takes 0, 1, -1, -1/2, the most accurate of the
// sets tried (the figures are in bench/ACCURACY.md). The Winograd pass does
// not choose F(3x3) (opt/winograd.cpp); the ops and schedules take it. Every
// entry of B^T and A^T is a dyadic rational (exact in float); G is applied
// once to the weights, in double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "support/int_div.h"

namespace tessera {

struct WinogradTransform {
  int m = 0;      // outputs per tile side
  int alpha = 0;  // inputs per tile side (m + 2)
  std::vector<double> points;  // the finite interpolation points
  std::vector<float> bt;       // B^T, alpha x alpha, row-major
  std::vector<float> at;       // A^T, m x alpha
  std::vector<double> g;       // G, alpha x 3

  int num_points() const { return alpha * alpha; }  // points of the 2-D transform
  float BT(int i, int j) const { return bt[static_cast<size_t>(i * alpha + j)]; }
  float AT(int i, int j) const { return at[static_cast<size_t>(i * alpha + j)]; }
  double G(int i, int j) const { return g[static_cast<size_t>(i * 3 + j)]; }
  // Tiles covering `extent` outputs.
  int64_t tiles(int64_t extent) const { return ceil_div(extent, m); }
  // Nonzero entries of B^T / A^T (a 2-D transform of one point or output
  // costs the products of a row's nonzeros).
  int bt_nonzeros() const;
  int at_nonzeros() const;
};

// The output tile sizes there are transforms for.
inline constexpr int kWinogradTiles[] = {2, 3, 4};

// The transform of F(m x m, 3x3); throws for an m not in kWinogradTiles.
const WinogradTransform& winograd_transform(int m);
// The tile size whose 2-D transform has `num_points` points (16, 25 or 36); 0 if none.
int winograd_tile_of_points(int64_t num_points);

}  // namespace tessera
