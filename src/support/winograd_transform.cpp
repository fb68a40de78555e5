// The Toom-Cook construction of winograd_transform.h, once per tile size.
#include "support/winograd_transform.h"

#include <map>

#include "support/error.h"

namespace tessera {

namespace {

// Finite interpolation points per output tile size (see the header for why these).
const std::map<int, std::vector<double>>& point_table() {
  static const std::map<int, std::vector<double>> table = {
      {2, {0.0, 1.0, -1.0}},
      {3, {0.0, 1.0, -1.0, -0.5}},
      {4, {0.0, 1.0, -1.0, 0.5, -2.0}},
  };
  return table;
}

// Coefficients (ascending powers) of prod over `roots` of (x - root).
std::vector<double> poly_from_roots(const std::vector<double>& roots) {
  std::vector<double> c{1.0};
  for (double r : roots) {
    std::vector<double> next(c.size() + 1, 0.0);
    for (size_t i = 0; i < c.size(); ++i) {
      next[i] -= r * c[i];
      next[i + 1] += c[i];
    }
    c = std::move(next);
  }
  return c;
}

WinogradTransform build(int m, const std::vector<double>& a) {
  constexpr int r = 3;
  WinogradTransform t;
  t.m = m;
  t.alpha = m + r - 1;
  t.points = a;
  const int n = t.alpha;
  TESSERA_CHECK(static_cast<int>(a.size()) == n - 1, "Winograd F(", m, ", 3) needs ", n - 1, " points");
  t.bt.assign(static_cast<size_t>(n * n), 0.0f);
  t.at.assign(static_cast<size_t>(m * n), 0.0f);
  t.g.assign(static_cast<size_t>(n * r), 0.0);
  for (int j = 0; j < n - 1; ++j) {
    double power = 1.0, denominator = 1.0;
    std::vector<double> others;
    for (int l = 0; l < n - 1; ++l)
      if (l != j) {
        denominator *= a[static_cast<size_t>(j)] - a[static_cast<size_t>(l)];
        others.push_back(a[static_cast<size_t>(l)]);
      }
    for (int i = 0; i < m; ++i, power *= a[static_cast<size_t>(j)]) t.at[static_cast<size_t>(i * n + j)] = static_cast<float>(power);
    power = 1.0;
    for (int k = 0; k < r; ++k, power *= a[static_cast<size_t>(j)]) t.g[static_cast<size_t>(j * r + k)] = power / denominator;
    const std::vector<double> c = poly_from_roots(others);
    for (size_t k = 0; k < c.size(); ++k) t.bt[static_cast<size_t>(j * n) + k] = static_cast<float>(c[k]);
  }
  // The point at infinity.
  t.at[static_cast<size_t>((m - 1) * n + n - 1)] = 1.0f;
  t.g[static_cast<size_t>((n - 1) * r + r - 1)] = 1.0;
  const std::vector<double> c = poly_from_roots(a);
  for (size_t k = 0; k < c.size(); ++k) t.bt[static_cast<size_t>((n - 1) * n) + k] = static_cast<float>(c[k]);
  return t;
}

int count_nonzeros(const std::vector<float>& v) {
  int k = 0;
  for (float x : v) k += x != 0.0f;
  return k;
}

}  // namespace

int WinogradTransform::bt_nonzeros() const { return count_nonzeros(bt); }
int WinogradTransform::at_nonzeros() const { return count_nonzeros(at); }

const WinogradTransform& winograd_transform(int m) {
  static const std::map<int, WinogradTransform> transforms = [] {
    std::map<int, WinogradTransform> t;
    for (const auto& [tile, points] : point_table()) t.emplace(tile, build(tile, points));
    return t;
  }();
  auto it = transforms.find(m);
  TESSERA_CHECK(it != transforms.end(), "no Winograd transform for ", m, "x", m, " output tiles (there are 2, 3 and 4)");
  return it->second;
}

int winograd_tile_of_points(int64_t num_points) {
  for (int m : kWinogradTiles)
    if (winograd_transform(m).num_points() == num_points) return m;
  return 0;
}

}  // namespace tessera
