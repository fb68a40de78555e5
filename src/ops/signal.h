// Facts of the signal ops (signal.cpp) that their tensor expressions share.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace tessera {

// MelWeightMatrix's mel + 2 triangle edges as spectrogram bin indices, in
// float32 as the ONNX reference computes them; checks the sizes and that
// lo / hi (the edge-frequency inputs) are scalars with 0 <= lo < hi.
std::vector<int64_t> mel_bin_edges(const Node& n, int64_t mel, int64_t dft, int64_t rate, const Tensor& lo,
                                   const Tensor& hi);

}  // namespace tessera
