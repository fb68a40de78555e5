// PET's multi-linear subprograms (MLTPs) of a model, and splicing a mutant
// back in their place.
//
// A node is multi-linear when its op is one of pet_design.md's list (Conv,
// MatMul, Gemm with alpha = beta = 1, Transpose, Reshape, Concat, Pad with
// zeros, Add, Mul, AveragePool, ...), its outputs are f32, its data inputs
// (the registry's OpDef::linear_inputs, widened where the registry lists
// fewer than the op is linear in: both operands of Add/Sub, every Concat
// input, Pad's data, Conv's and Gemm's bias) are f32, and every other input
// is a constant (an integer parameter, or Pad's zero fill). The model is
// split at the other nodes; the connected multi-linear regions become
// subprograms. A product of two computed values (MatMul of two activations,
// Mul of two activations, a Conv with a computed weight) is quadratic in a
// value that feeds both operands, so edges into it are cut: it starts a
// region of its own and reads both operands as activations.
//
// A region of at most `max_ops` nodes is offered whole; a larger one (or one
// that is not convex: a path leaves it and comes back) is offered as its
// connected convex subsets of at most `max_ops` nodes (PET's d = 4). In a
// chain of n nodes that is at most 4n - 6 subsets; in general a node of
// degree k starts at most 1 + k + k^2 + k^3 of them, so the enumeration is
// bounded by `max_subsets_per_region` (kept in model order, the rest counted
// as dropped in the report). Only subprograms holding a compute op (Conv,
// ConvTranspose, MatMul, Gemm, AveragePool) are offered: PET has nothing to
// mutate in a chain of reshapes alone.
//
// Independent compute nodes that read the same tensor as their activation
// (Inception's parallel 1x1 convs, BERT's Q/K/V products), at most
// `max_group` of them, are also offered together as one group subprogram.
//
// The standalone graph's inputs are the activations (first use order), then
// the weights: the float constants read at data positions (Conv W and B,
// MatMul/Gemm constant operands, Add/Mul constants). Integer parameters
// (Reshape's shape, Pad's pads, Slice's starts ...) stay constants inside.
// Its outputs are the values used outside the subprogram (or model outputs).
// The hash is the graph's structural hash, which therefore ignores the
// weights' contents (they are inputs) but not the integer parameters: the
// search caches mutants by it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace tessera::pet {

struct SubprogramOptions {
  int max_ops = 4;                    // PET's d: larger regions are offered as subsets
  int max_subsets_per_region = 128;   // bound on one region's subsets (model order)
  bool groups = true;                 // offer parallel compute nodes of one input together
  int max_group = 4;                  // members of one group subprogram
};

struct Subprogram {
  enum class Kind { Region, Subset, Group };
  Kind kind = Kind::Region;
  std::vector<Node*> nodes;             // the model's nodes, in model order
  std::shared_ptr<Graph> graph;         // standalone: activations, then weights, as inputs
  size_t num_activations = 0;           // graph inputs [0, n) are activations
  std::vector<Value*> activations;      // the model values bound to those inputs
  std::vector<Value*> weights;          // the model constants bound to the weight inputs
  std::vector<Tensor> weight_tensors;   // their contents, same order
  std::vector<Value*> outputs;          // the model values the graph's outputs stand for
  uint64_t hash = 0;                    // structural hash of `graph` (weight contents ignored)
  // The layout the model holds its inputs and outputs in, as the search
  // measures candidates (pet/layout_context.h; 0: all plain). Set by the search.
  uint64_t context = 0;
  // The model's elementwise consumers fused after its outputs, measured with
  // every candidate, and their structure's hash (pet/fused_consumers.h; 0:
  // none). Set by the search.
  std::vector<const Node*> fused_consumers;
  uint64_t consumers_hash = 0;

  size_t num_weights() const { return weights.size(); }
  std::string describe() const;         // "region of 3 nodes (Conv 'c1', Add 'a', ...)"
};

struct SubprogramReport {
  int multilinear_nodes = 0;
  int regions = 0;            // connected multi-linear regions found
  int offered_whole = 0;      // regions offered as one subprogram
  int subsets = 0;            // subset subprograms offered
  int subsets_dropped = 0;    // beyond max_subsets_per_region
  int groups = 0;             // group subprograms offered
  int without_compute = 0;    // regions with no compute op (not offered)
};

// Why `n` is not multi-linear in PET's sense ("" when it is). `opset` is the
// model's.
std::string not_multilinear_reason(const Node& n, int64_t opset);
inline bool is_multilinear(const Node& n, int64_t opset) { return not_multilinear_reason(n, opset).empty(); }

// The model's subprograms: regions, subsets of large regions, then groups.
// The model must have fully known types (run infer_graph first).
std::vector<Subprogram> find_subprograms(const Graph& model, const SubprogramOptions& opts = {},
                                         SubprogramReport* report = nullptr);

// The subprogram made of `nodes` (model nodes, any order; multi-linear);
// throws naming a node when one is not multi-linear or not in the model.
Subprogram make_subprogram(const Graph& model, const std::vector<Node*>& nodes,
                           Subprogram::Kind kind = Subprogram::Kind::Region);

// Node-name prefix of the nodes splice adds (tessera viz and --dump-pet mark them).
inline constexpr const char* kPetNodePrefix = "pet/";

// Puts `replacement` (same inputs and outputs as sub.graph: count, order,
// dtype, dims) in place of the subprogram's nodes: its weight inputs bound to
// the model's constants, its activations to the model's values; the old
// output values keep their names and uses but are now computed by the new
// nodes (named "pet/..."); the old nodes are removed, the graph verified and
// sorted. Weight-only ops of the replacement fold at the model's next
// fold_constants. Throws naming the mismatch when the signatures differ or a
// node of the subprogram is no longer in the model. Returns the nodes added.
std::vector<Node*> splice(Graph& model, const Subprogram& sub, const Graph& replacement);

}  // namespace tessera::pet
