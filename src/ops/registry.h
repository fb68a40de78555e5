// The process-wide registry of every built-in op (the ops layer fills the
// registry mechanism of ir/op_registry.h), and the graph-level questions put
// to it: inference, reference execution, FLOP and byte counts.
#pragma once

#include "ir/op_registry.h"

namespace tessera {

// The process-wide registry with every built-in op, filled on first use.
const OpRegistry& op_registry();

// Per-family registration, called once by op_registry().
void register_elementwise_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_nn_extra_ops(OpRegistry& r);  // attention, resize, RNNs, signal, losses, vision
void register_tensor_ops(OpRegistry& r);
void register_reduce_ops(OpRegistry& r);
void register_misc_ops(OpRegistry& r);
void register_string_ops(OpRegistry& r);    // string tensors: normalize, concat, split, regex, tf-idf
void register_ml_ops(OpRegistry& r);        // the ai.onnx.ml domain

// Runs the op's inference for `n` given its input values' current types;
// fills (and checks against) the output values' types. Throws naming the node.
void infer_node(const Node& n, int64_t opset);
// Runs inference over the whole graph in order.
void infer_graph(Graph& g);
// Runs the reference kernel for one node on concrete inputs.
std::vector<Tensor> run_reference(const Node& n, int64_t opset, const std::vector<const Tensor*>& inputs,
                                  std::function<const Tensor*(const std::string&)> outer = nullptr);
// FLOPs of a node (0 when its types are not fully known).
double node_flops(const Node& n);
// The node's DNNFusion mapping type: the op's type, except that a one-to-one
// op whose input is broadcast to a larger output is one-to-many (DNNFusion
// takes the most complex input/output pair).
MappingType node_mapping_type(const Node& n);
// Bytes read and written by a node (inputs + outputs), 0 when types unknown.
double node_bytes(const Node& n);

}  // namespace tessera
