// Graph passes. Each is a free function that rewrites the graph in place.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera {

// Infers types node by node and replaces every node whose inputs are all
// constant (and Shape/Size of statically shaped values) by constants; removes
// the nodes that no longer reach an output. Returns the number folded.
int fold_constants(Graph& g);

// Folds inference-mode BatchNormalization into the Conv feeding it (that
// Conv's output used only by the BatchNorm, weights and statistics constant):
// scaled weights and a bias; the Conv takes over the BatchNorm's output.
// Returns the number folded.
int fold_batchnorm(Graph& g);

// Exact simplifications (Pow(x, 2) -> x * x, Transposes of size-1 axes ->
// Reshape, Slices tiling an axis -> one Split); counts per rule into
// `applied` when given. Returns the number applied.
int simplify_graph(Graph& g, std::map<std::string, int>* applied = nullptr);

// DNNFusion's mathematical-property rewriting, greedily by FLOP reduction; returns the count applied.
int rewrite_math_properties(Graph& g, std::vector<std::string>* applied = nullptr);

// Convs (1-D, 2-D, 3-D) whose taps fall much in the zero padding (large
// dilations on small maps, 3-D kernels on short time axes) as one Conv per
// output region with only the taps that read the input, regions
// concatenated back (opt/skip_padding_taps.cpp), where that
// skips at least `min_skipped_per_region` multiply-adds per region (each is a
// kernel of its own; 0 in tests: every shape the rewrite applies to).
// Returns the number of Convs rewritten.
int skip_padding_taps(Graph& g, double min_skipped_per_region = 1 << 18);

// An AveragePool read only by a 1x1 stride-1 unpadded Conv with fewer output
// than input channels moves after it (bias added after the pool), taking a
// zero spatial Pad in front of it as its own padding (count_include_pad=1).
// Returns the number of pools moved.
int move_pools_after_convs(Graph& g);

// A float MaxPool over several axes (no Indices output, no ceil_mode) whose
// window has at least twice the taps of its axes' windows together (3x3x3)
// becomes one MaxPool per axis, chained; exact. Returns the number separated.
int separate_max_pools(Graph& g);

// Moves float 2-D convolutions to the channel-blocked layout NCHWc with
// `block` lanes (ConvBlocked / DepthwiseConvBlocked of domain "tessera",
// weights packed here) and carries the layout through the elementwise ops,
// pools and channel concatenations between them; values are reordered only
// where they leave that region. Returns the number of convolutions moved.
int to_blocked_layout(Graph& g, int64_t block);

// Dilated 3x3 stride-1 blocked convolutions (ConvBlocked) as undilated ones
// on the input's phases moved into the batch, the output's phases moved
// back (reshapes and transposes of the blocked values), so the Winograd pass
// can take them; where each phase has at least 8 rows and columns. Exact.
// Returns the number rewritten.
int dilations_to_phases(Graph& g);

// Rewrites 3x3 stride-1 blocked convolutions into Winograd F(4x4, 3x3) or
// F(2x2, 3x3) (WinogradInput, WinogradGemm, WinogradOutput; weights
// transformed here), per layer where a static estimate says it pays and the
// model's error budget allows F(4x4) (every one it can, with tile
// `every_tile`, when that is 2 or 4: tests). `choices` (a tuner's, keyed by
// the geometry of opt/winograd.h's WinogradSite) override the estimate per
// geometry (winograd_tile_for). Returns the number rewritten.
int to_winograd(Graph& g, int every_tile = 0, const std::map<std::string, int>& choices = {});

// A dense blocked convolution reading a map scaled per channel at run time
// (x * s, s [1, Cb, 1, 1, b]: squeeze-excitation) reads x and its weights
// scaled by s instead, where the map has at least twice the weights'
// elements. Returns the number folded.
int fold_channel_scales(Graph& g);

// PET's post-optimizations of reshape/transpose ("R/T") chains: moves R/T
// chains after the one-to-one elementwise ops they feed (a constant operand
// moved back through the chain, only where it gets no larger), then replaces
// every chain by its canonical form where that has fewer ops (inverse pairs
// vanish, consecutive R/T merge). Exact; counts per rule ("move_rt",
// "merge_rt") into `applied` when given. Returns the number applied.
int simplify_rt(Graph& g, std::map<std::string, int>* applied = nullptr);

struct PassContext;
// PET's search (pet/search.h) over the graph with the context's cost
// function and the run's options; then PET's post-optimizations and the
// mutants' weight derivations folded. Returns the subprograms replaced.
int run_pet(Graph& g, const PassContext& ctx);

}  // namespace tessera
