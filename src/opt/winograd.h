// The Winograd pass's candidates as a tuner sees them (the pass itself is
// to_winograd, opt/passes.h; its policy is in winograd.cpp's header comment).
// Each 3x3 stride-1 blocked convolution is a site with a geometry (a text of
// its shapes, pads, channels and block: every convolution of the same
// geometry takes the same choice, in this model or another), the tile the
// static estimate gives it and whether F(4x4)'s error bound allows it there.
// A choice per geometry (0 direct, 2 or 4) overrides the estimate; F(4x4) is
// never applied where the bound does not allow it: accuracy first.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera {

// The tiles a choice may name: 0 (the direct convolution), F(2x2), F(4x4).
inline constexpr int kWinogradChoiceTiles[] = {0, 2, 4};

struct WinogradSite {
  Node* node = nullptr;        // a ConvBlocked node
  std::string geometry;        // its shapes, channels, block and pads as text (the key of a choice)
  int estimated_tile = 0;      // the static estimate's choice (0: direct)
  bool large_tile_allowed = false;  // F(4x4)'s error bound holds here
  double macs = 0;             // the direct form's multiply-adds (a site's weight)
};

// The pass's candidates in `g` (a graph after the blocked-layout pass,
// before the Winograd pass), in node order, each with the estimate's tile.
std::vector<WinogradSite> winograd_sites(const Graph& g);

// The tile a site takes under `choices` (geometry -> tile): the choice of
// its geometry, except F(4x4) where the bound does not allow it (the
// estimate's then); the estimate's when its geometry has none. Throws naming
// the geometry when a choice is not 0, 2 or 4.
int winograd_tile_for(const WinogradSite& site, const std::map<std::string, int>& choices);

}  // namespace tessera
