// Shared between the generator's files (pet/mutants*.cpp): the sink the
// families write their mutants to, and the family entry points.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "pet/mutant_builder.h"
#include "pet/mutants.h"

namespace tessera::pet::detail {

// What a family sees of the subprogram.
struct GenContext {
  const Graph& sub;
  size_t num_activations;
  const std::vector<Tensor>* weights;  // may be null
  const MutantOptions& opts;
  MutantReport& report;
  // Records a mutant (dedup, family filter and the bound happen here); the
  // builder runs inside a try: a family whose ops reject the shapes is
  // skipped with the error as the reason.
  std::function<void(const std::string& family, bool equivalent, bool weight_dependent,
                     const std::function<std::shared_ptr<Graph>()>& build)>
      add;

  bool wants(const std::string& family) const;
  // The DFS has tried opts.max_dfs_states ops (deterministic, unlike a clock).
  bool out_of_states() const { return opts.max_dfs_states > 0 && report.dfs_states >= opts.max_dfs_states; }
  // The caller's deadline has passed (noted in the report).
  bool past_deadline() const {
    if (opts.deadline == std::chrono::steady_clock::time_point::max()) return false;
    if (!report.out_of_time && std::chrono::steady_clock::now() >= opts.deadline) report.out_of_time = true;
    return report.out_of_time;
  }
  // The tensor of a weight input, or null (an activation, or no weights given).
  const Tensor* weight_of(const Value* v) const;
};

// Fixed rewrites of single nodes (mutants_conv.cpp).
void conv_families(GenContext& ctx, const Node& n);
void avgpool_families(GenContext& ctx, const Node& n);
// Fixed rewrites of parallel nodes reading one value (mutants_merge.cpp).
void merge_families(GenContext& ctx);
// Algorithm 1 for one compute node (mutants_dfs.cpp).
void dfs_mutants(GenContext& ctx, const Node& n);

// The conv's spatial geometry, ONNX defaults filled in (2-D only).
struct Conv2D {
  int64_t N, C, H, W, M, KH, KW, OH, OW;
  int64_t sh, sw, dh, dw, group;
  int64_t pt, pl, pb, pr;  // pads: top, left, bottom, right
  bool bias;
};
// Reads a 2-D Conv node with known types; false (with `why`) otherwise.
bool read_conv2d(const Node& n, Conv2D& c, std::string& why);

}  // namespace tessera::pet::detail
