// Facts about the recurrent nets (RNN, GRU, LSTM) shared by their reference
// kernel (rnn.cpp) and their tensor expression (expr_misc_rnn.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ops/op_attrs.h"

namespace tessera {

enum class RnnCell { RNN, GRU, LSTM };

inline int rnn_num_gates(RnnCell c) { return c == RnnCell::RNN ? 1 : c == RnnCell::GRU ? 3 : 4; }
inline int rnn_num_activations(RnnCell c) { return c == RnnCell::RNN ? 1 : c == RnnCell::GRU ? 2 : 3; }

// One activation function of the `activations` attribute.
struct RnnActivation {
  std::string name;  // lower case: sigmoid, tanh, relu, affine, leakyrelu, ...
  double alpha = 0, beta = 0;
};

// The node's activation list, rnn_num_activations per direction (defaults per
// cell; one direction's list reused for the reverse one); alpha / beta are
// consumed in order by the functions that take them. Throws naming the node
// on an unknown function or a wrong count.
std::vector<RnnActivation> read_rnn_activations(const OpAttrs& attrs, RnnCell cell, int64_t dirs);

}  // namespace tessera
