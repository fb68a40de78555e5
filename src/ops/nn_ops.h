// Shared pieces of the core neural-network op family: the per-file
// registration functions and the sliding-window geometry used by Conv,
// ConvTranspose and the pooling ops.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "ops/op_attrs.h"
#include "ops/op_helpers.h"

namespace tessera {

void register_nn_conv_ops(OpRegistry& r);            // Conv
void register_nn_conv_transpose_ops(OpRegistry& r);  // ConvTranspose
void register_nn_quant_ops(OpRegistry& r);           // ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul
void register_nn_gemm_ops(OpRegistry& r);            // MatMul, Gemm
void register_nn_pool_ops(OpRegistry& r);            // MaxPool, AveragePool, LpPool
void register_nn_global_pool_ops(OpRegistry& r);     // Global*Pool, MaxUnpool
void register_nn_batchnorm_ops(OpRegistry& r);       // BatchNormalization, InstanceNormalization, GroupNormalization
void register_nn_layernorm_ops(OpRegistry& r);       // LayerNormalization, RMSNormalization
void register_nn_lrn_ops(OpRegistry& r);             // LRN, MeanVarianceNormalization, LpNormalization
void register_nn_softmax_ops(OpRegistry& r);         // Softmax, LogSoftmax, Hardmax
void register_nn_dropout_ops(OpRegistry& r);         // Dropout
void register_nn_einsum_ops(OpRegistry& r);          // Einsum

// Sliding-window attributes normalised to `nsp` spatial dims.
struct WindowAttrs {
  int64_t nsp = 0;
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // 2*nsp: all begins, then all ends
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
};

// Reads kernel_shape (or takes `kernel` when non-empty and the attribute is
// absent), strides, dilations, pads, auto_pad and (when `pool`) ceil_mode.
// Checks sizes and values, throwing naming the node.
WindowAttrs read_window_attrs(const OpAttrs& attrs, int64_t nsp, const std::vector<int64_t>& kernel, bool pool);
// LpPool's and GlobalLpPool's p (an int since opset 2, a float before);
// checks it is positive, throwing naming the node. Shared by the references
// and the expressions.
double lp_order(const OpAttrs& attrs);

// Output spatial dims of a forward window op (Conv, pools) for input spatial
// dims `in` (-1 = unknown, giving -1). When every dim is known and `pads` is
// non-null, stores the resolved pads (2*nsp) there. Throws when the window
// does not fit.
Dims window_output_dims(const Node& n, const WindowAttrs& a, const Dims& in, std::vector<int64_t>* pads = nullptr);

// Geometry padded to three spatial dims (leading dims of size 1) so one loop
// nest serves 1-D, 2-D and 3-D windows.
struct Geom3 {
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, d{1, 1, 1}, pb{0, 0, 0}, pe{0, 0, 0};
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  int64_t k_size() const { return k[0] * k[1] * k[2]; }
};
// Builds a Geom3; throws naming the node when nsp > 3.
Geom3 make_geom3(const Node& n, const WindowAttrs& a, const Dims& in, const Dims& out,
                 const std::vector<int64_t>& pads);

// Spatial dims (everything after N and C) of a type / tensor.
inline Dims spatial_dims(const Dims& d) { return d.size() > 2 ? Dims(d.begin() + 2, d.end()) : Dims{}; }

// Range [lo, hi) of output positions o in [0, out) with o*s + off in [0, in).
void valid_range(int64_t out, int64_t s, int64_t off, int64_t in, int64_t& lo, int64_t& hi);

// All elements of a small tensor as doubles.
std::vector<double> nn_to_doubles(const Tensor& t);
// A float tensor of type t and dims d from computed double values.
Tensor nn_from_doubles(DType t, const Dims& d, const std::vector<double>& v);

// Flops shared by the matrix ops: product of known dims, or 0.
inline double prod_dims(const Dims& d) {
  double p = 1;
  for (int64_t v : d) p *= static_cast<double>(v);
  return p;
}

}  // namespace tessera
