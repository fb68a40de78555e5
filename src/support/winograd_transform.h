// Winograd's minimal filtering F(m x m, 3x3), m = 2, 3 or 4 (ops/winograd.h has the
// algorithm): the transform matrices of each output tile size Tessera uses,
// shared by the Winograd ops, the pass that creates them and their schedules.
//
// The matrices are made by the Toom-Cook construction from interpolation
// points (plus the point at infinity): for finite points a_j,
//   A^T[i][j] = a_j^i,  G[j][k] = a_j^k / prod_{l != j} (a_j - a_l),
//   B^T[j] = the coefficients of prod_{l != j} (x - a_l),
// and the infinite point's row or column picks the highest power. The points
// decide the rounding error. On a 512-channel 14x14 layer against float64
// (bench/ACCURACY.md): F(4x4) on 0, 1, -1, 2, -2 (the usual choice) 1.2e-5;
// on 0, 1, -1, 1/2, -2 (Barabasz et al., "Error analysis and improving the
// accuracy of Winograd convolution", 2020) 3.3e-6; F(2x2) on 0, 1, -1
// 6.1e-7; the direct form 3.1e-7 (all summing in blocks). F(3x3, 3x3)
// (alpha 5, 25 points) on 0, 1, -1, -1/2 took VGG-16 with it on every
// plain-chain layer to 1.0e-6 against float64 (0, 1, -1, 1/2: 1.35e-6;
// 0, +-1, 2: 1.04e-6), F(2x2) 7.0e-7: the Winograd pass does not choose it
// (opt/winograd.cpp), the ops and schedules take it. Every entry of
// B^T and A^T is a dyadic rational (exact in float); G is applied once to
// the weights, in double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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
  int64_t tiles(int64_t extent) const { return (extent + m - 1) / m; }
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
