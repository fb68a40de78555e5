// The constants of Winograd's F(4x4, 3x3) (ops/winograd.h has the algorithm):
// tile sizes and the transform matrices, shared by the Winograd ops, the pass
// that creates them and their schedules.
#pragma once

#include <cstdint>

namespace tessera {

inline constexpr int kWinoTile = 4;   // outputs per tile side (m)
inline constexpr int kWinoAlpha = 6;  // inputs per tile side (m + r - 1)
inline constexpr int kWinoPoints = kWinoAlpha * kWinoAlpha;

// The transform matrices of F(4x4, 3x3).
inline constexpr float kWinoBT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                        {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
inline constexpr float kWinoAT[4][6] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
inline constexpr double kWinoG[6][3] = {{1.0 / 4, 0, 0},
                                        {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                        {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                        {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                        {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                        {0, 0, 1}};

// Tiles covering `extent` outputs.
inline int64_t wino_tiles(int64_t extent) { return (extent + kWinoTile - 1) / kWinoTile; }

}  // namespace tessera
