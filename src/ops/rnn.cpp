// Recurrent nets: RNN, GRU and LSTM (opset 7 semantics, layout from 14), one
// shared driver over directions, batches and time steps with per-cell update
// rules. Supports forward / reverse / bidirectional, custom activations with
// alpha/beta, clip, GRU's linear_before_reset, LSTM peepholes and
// input_forget, sequence_lens, initial states and all outputs.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "ops/nn_extra.h"
#include "ops/nn_extra_util.h"
#include "ops/op_attrs.h"
#include "ops/rnn_common.h"

namespace tessera {

std::vector<RnnActivation> read_rnn_activations(const OpAttrs& attrs, RnnCell cell, int64_t dirs) {
  const Node& n = attrs.node();
  std::vector<std::string> names;
  if (attrs.has("activations")) names = attrs.strings("activations");
  const int per = rnn_num_activations(cell);
  if (names.empty()) {
    std::vector<std::string> def = cell == RnnCell::RNN   ? std::vector<std::string>{"Tanh"}
                                   : cell == RnnCell::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), def.begin(), def.end());
  }
  // A single direction's list is reused for the reverse direction.
  if (dirs == 2 && static_cast<int>(names.size()) == per) {
    std::vector<std::string> copy = names;
    names.insert(names.end(), copy.begin(), copy.end());
  }
  TESSERA_CHECK(static_cast<int64_t>(names.size()) == per * dirs, n.describe(), ": expected ", per * dirs,
                " activations, got ", names.size());
  std::vector<float> alphas = attrs.floats("activation_alpha"), betas = attrs.floats("activation_beta");
  size_t ai = 0, bi = 0;
  std::vector<RnnActivation> out;
  for (const std::string& s : names) {
    RnnActivation f;
    for (char ch : s) f.name.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    static const std::vector<std::pair<std::string, std::pair<double, double>>> known = {
        {"sigmoid", {0, 0}},   {"tanh", {0, 0}},          {"relu", {0, 0}},          {"affine", {1, 0}},
        {"leakyrelu", {0.01, 0}}, {"thresholdedrelu", {1, 0}}, {"scaledtanh", {1, 1}}, {"hardsigmoid", {0.2, 0.5}},
        {"elu", {1, 0}},       {"softsign", {0, 0}},      {"softplus", {0, 0}}};
    auto it = std::find_if(known.begin(), known.end(), [&](const auto& k) { return k.first == f.name; });
    TESSERA_CHECK(it != known.end(), n.describe(), ": unsupported activation '", s, "'");
    f.alpha = it->second.first;
    f.beta = it->second.second;
    bool takes_alpha = f.name == "affine" || f.name == "leakyrelu" || f.name == "thresholdedrelu" ||
                       f.name == "scaledtanh" || f.name == "hardsigmoid" || f.name == "elu";
    bool takes_beta = f.name == "affine" || f.name == "scaledtanh" || f.name == "hardsigmoid";
    if (takes_alpha && ai < alphas.size()) f.alpha = alphas[ai++];
    if (takes_beta && bi < betas.size()) f.beta = betas[bi++];
    out.push_back(f);
  }
  return out;
}

namespace {

using Cell = RnnCell;

struct Activation : RnnActivation {
  double operator()(double x) const {
    if (name == "sigmoid") return 1 / (1 + std::exp(-x));
    if (name == "tanh") return std::tanh(x);
    if (name == "relu") return x > 0 ? x : 0;
    if (name == "affine") return alpha * x + beta;
    if (name == "leakyrelu") return x >= 0 ? x : alpha * x;
    if (name == "thresholdedrelu") return x > alpha ? x : 0;
    if (name == "scaledtanh") return alpha * std::tanh(beta * x);
    if (name == "hardsigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "elu") return x >= 0 ? x : alpha * (std::exp(x) - 1);
    if (name == "softsign") return x / (1 + std::fabs(x));
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));  // softplus
  }
};

std::vector<Activation> read_activations(const OpAttrs& attrs, Cell cell, int64_t dirs) {
  std::vector<Activation> out;
  for (const RnnActivation& a : read_rnn_activations(attrs, cell, dirs)) out.push_back({a});
  return out;
}

int64_t num_directions(const OpAttrs& attrs) {
  const Node& n = attrs.node();
  std::string d = attrs.s("direction");
  TESSERA_CHECK(d == "forward" || d == "reverse" || d == "bidirectional", n.describe(), ": unsupported direction '",
                d, "'");
  return d == "bidirectional" ? 2 : 1;
}

void infer_rnn(InferContext& c, Cell cell) {
  const Node& n = c.node;
  const TensorType& x = c.in(0);
  const TensorType& w = c.in(1);
  const TensorType& r = c.in(2);
  TESSERA_CHECK(is_float(x.dtype), n.describe(), ": X must be a float tensor");
  check_same_dtype(n, {&x, &w, &r});
  TESSERA_CHECK(x.rank() == 3 && w.rank() == 3 && r.rank() == 3, n.describe(), ": X, W and R must be 3-D");
  const int64_t layout = c.opset >= 14 ? op_attrs(c).i("layout") : 0;
  TESSERA_CHECK(layout == 0 || layout == 1, n.describe(), ": layout must be 0 or 1");
  const int64_t D = num_directions(op_attrs(c));
  const int64_t H = n.has_attr("hidden_size") ? op_attrs(c).i("hidden_size") : r.dims[2];
  const int64_t S = layout ? x.dims[1] : x.dims[0];
  const int64_t Bt = layout ? x.dims[0] : x.dims[1];
  if (w.dims[0] >= 0) TESSERA_CHECK(w.dims[0] == D, n.describe(), ": W has ", w.dims[0], " directions, expected ", D);
  if (w.dims[1] >= 0 && H >= 0)
    TESSERA_CHECK(w.dims[1] == rnn_num_gates(cell) * H, n.describe(), ": W dim 1 is ", w.dims[1], ", expected ",
                  rnn_num_gates(cell) * H);
  TensorType y{x.dtype, layout ? Dims{Bt, S, D, H} : Dims{S, D, Bt, H}};
  TensorType yh{x.dtype, layout ? Dims{Bt, D, H} : Dims{D, Bt, H}};
  c.out(0) = y;
  c.out(1) = yh;
  if (cell == Cell::LSTM) c.out(2) = yh;
}

std::vector<Tensor> run_rnn(const KernelContext& c, Cell cell) {
  const Node& n = c.node;
  const char* what = n.op_type.c_str();
  const Tensor& X = c.in(0);
  const Tensor& W = c.in(1);
  const Tensor& R = c.in(2);
  TESSERA_CHECK(X.rank() == 3 && W.rank() == 3 && R.rank() == 3, n.describe(), ": X, W and R must be 3-D");
  TESSERA_CHECK(W.dtype() == X.dtype() && R.dtype() == X.dtype(), n.describe(), ": X, W and R must share a dtype");
  const int64_t layout = c.opset >= 14 ? op_attrs(c).i("layout") : 0;
  const int64_t D = num_directions(op_attrs(c));
  const bool reverse_only = op_attrs(c).s("direction") == "reverse";
  const int G = rnn_num_gates(cell);
  const int64_t S = layout ? X.dim(1) : X.dim(0);
  const int64_t Bt = layout ? X.dim(0) : X.dim(1);
  const int64_t I = X.dim(2);
  const int64_t H = n.has_attr("hidden_size") ? op_attrs(c).i("hidden_size") : R.dim(2);
  TESSERA_CHECK(H > 0, n.describe(), ": hidden_size must be positive");
  TESSERA_CHECK(W.dims() == Dims({D, G * H, I}), n.describe(), ": W must be [", D, ", ", G * H, ", ", I, "], got ",
                dims_to_string(W.dims()));
  TESSERA_CHECK(R.dims() == Dims({D, G * H, H}), n.describe(), ": R must be [", D, ", ", G * H, ", ", H, "], got ",
                dims_to_string(R.dims()));
  auto opt = [&](int i) -> const Tensor* { return c.has_input(i) && c.inputs[static_cast<size_t>(i)]->numel() > 0 ? c.inputs[static_cast<size_t>(i)] : nullptr; };
  const Tensor* Bias = opt(3);
  const Tensor* lens = opt(4);
  const Tensor* h0 = opt(5);
  const Tensor* c0 = cell == Cell::LSTM ? opt(6) : nullptr;
  const Tensor* P = cell == Cell::LSTM ? opt(7) : nullptr;
  const Dims state_dims = layout ? Dims{Bt, D, H} : Dims{D, Bt, H};
  if (Bias)
    TESSERA_CHECK(Bias->dims() == Dims({D, 2 * G * H}), n.describe(), ": B must be [", D, ", ", 2 * G * H, "]");
  if (h0) TESSERA_CHECK(h0->dims() == state_dims, n.describe(), ": initial_h must be ", dims_to_string(state_dims));
  if (c0) TESSERA_CHECK(c0->dims() == state_dims, n.describe(), ": initial_c must be ", dims_to_string(state_dims));
  if (P) TESSERA_CHECK(P->dims() == Dims({D, 3 * H}), n.describe(), ": P must be [", D, ", ", 3 * H, "]");
  std::vector<int64_t> seq(static_cast<size_t>(Bt), S);
  if (lens) {
    seq = lens->to_int_vector();
    TESSERA_CHECK(static_cast<int64_t>(seq.size()) == Bt, n.describe(), ": sequence_lens must have ", Bt, " values");
    for (int64_t l : seq)
      TESSERA_CHECK(l >= 0 && l <= S, n.describe(), ": sequence length ", l, " is outside [0, ", S, "]");
  }
  std::vector<Activation> acts = read_activations(op_attrs(c), cell, D);
  const bool has_clip = n.has_attr("clip");
  const double clip = has_clip ? op_attrs(c).f("clip") : 0.0;
  TESSERA_CHECK(!has_clip || clip > 0, n.describe(), ": clip must be positive");
  const bool lbr = cell == Cell::GRU && op_attrs(c).i("linear_before_reset") != 0;
  const bool input_forget = cell == Cell::LSTM && op_attrs(c).i("input_forget") != 0;

  std::vector<double> x = float_values(X, what), w = float_values(W, what), r = float_values(R, what);
  std::vector<double> bias = Bias ? float_values(*Bias, what) : std::vector<double>(static_cast<size_t>(D * 2 * G * H));
  std::vector<double> p = P ? float_values(*P, what) : std::vector<double>(static_cast<size_t>(D * 3 * H));
  std::vector<double> hinit = h0 ? float_values(*h0, what) : std::vector<double>(static_cast<size_t>(D * Bt * H));
  std::vector<double> cinit = c0 ? float_values(*c0, what) : std::vector<double>(static_cast<size_t>(D * Bt * H));
  std::vector<double> y(static_cast<size_t>(S * D * Bt * H)), yh(static_cast<size_t>(D * Bt * H)),
      yc(static_cast<size_t>(D * Bt * H));
  auto state_index = [&](int64_t d, int64_t b, int64_t k) { return layout ? (b * D + d) * H + k : (d * Bt + b) * H + k; };
  auto x_index = [&](int64_t t, int64_t b, int64_t i) { return layout ? (b * S + t) * I + i : (t * Bt + b) * I + i; };
  auto y_index = [&](int64_t t, int64_t d, int64_t b, int64_t k) {
    return layout ? ((b * S + t) * D + d) * H + k : ((t * D + d) * Bt + b) * H + k;
  };
  auto cl = [&](double v) { return has_clip ? std::clamp(v, -clip, clip) : v; };

  std::vector<double> h(static_cast<size_t>(H)), cs(static_cast<size_t>(H)), nh(static_cast<size_t>(H)),
      nc(static_cast<size_t>(H)), xw(static_cast<size_t>(G * H)), hr(static_cast<size_t>(G * H)),
      rgate(static_cast<size_t>(H));
  for (int64_t d = 0; d < D; ++d) {
    const bool backward = reverse_only || d == 1;
    const Activation* f = &acts[static_cast<size_t>(d * rnn_num_activations(cell))];
    const double* wd = &w[static_cast<size_t>(d * G * H * I)];
    const double* rd = &r[static_cast<size_t>(d * G * H * H)];
    const double* wb = &bias[static_cast<size_t>(d * 2 * G * H)];
    const double* rb = wb + G * H;
    const double* pd = &p[static_cast<size_t>(d * 3 * H)];
    for (int64_t b = 0; b < Bt; ++b) {
      for (int64_t k = 0; k < H; ++k) {
        h[static_cast<size_t>(k)] = hinit[static_cast<size_t>(state_index(d, b, k))];
        cs[static_cast<size_t>(k)] = cinit[static_cast<size_t>(state_index(d, b, k))];
      }
      const int64_t len = seq[static_cast<size_t>(b)];
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backward ? len - 1 - step : step;
        // xw = W x + Wb ; hr = R h + Rb, per gate row.
        for (int64_t g = 0; g < G * H; ++g) {
          double a = wb[g], e = rb[g];
          for (int64_t i = 0; i < I; ++i) a += wd[g * I + i] * x[static_cast<size_t>(x_index(t, b, i))];
          for (int64_t j = 0; j < H; ++j) e += rd[g * H + j] * h[static_cast<size_t>(j)];
          xw[static_cast<size_t>(g)] = a;
          hr[static_cast<size_t>(g)] = e;
        }
        if (cell == Cell::GRU)
          for (int64_t j = 0; j < H; ++j)
            rgate[static_cast<size_t>(j)] = f[0](cl(xw[static_cast<size_t>(H + j)] + hr[static_cast<size_t>(H + j)]));
        for (int64_t k = 0; k < H; ++k) {
          auto at = [&](const std::vector<double>& v, int gate) { return v[static_cast<size_t>(gate * H + k)]; };
          size_t kk = static_cast<size_t>(k);
          if (cell == Cell::RNN) {
            nh[kk] = f[0](cl(at(xw, 0) + at(hr, 0)));
          } else if (cell == Cell::GRU) {
            double z = f[0](cl(at(xw, 0) + at(hr, 0)));
            double rg = rgate[kk];
            double cand;
            if (lbr) {
              cand = f[1](cl(at(xw, 2) + rg * at(hr, 2)));
            } else {
              // R_h (r . h) + Rb_h
              double e = rb[2 * H + k];
              for (int64_t j = 0; j < H; ++j) e += rd[(2 * H + k) * H + j] * rgate[static_cast<size_t>(j)] * h[static_cast<size_t>(j)];
              cand = f[1](cl(at(xw, 2) + e));
            }
            nh[kk] = (1 - z) * cand + z * h[kk];
          } else {
            double ig = f[0](cl(at(xw, 0) + at(hr, 0) + pd[k] * cs[kk]));
            double fg = input_forget ? 1 - ig : f[0](cl(at(xw, 2) + at(hr, 2) + pd[2 * H + k] * cs[kk]));
            double cc = f[1](cl(at(xw, 3) + at(hr, 3)));
            nc[kk] = fg * cs[kk] + ig * cc;
            double og = f[0](cl(at(xw, 1) + at(hr, 1) + pd[H + k] * nc[kk]));
            nh[kk] = og * f[2](nc[kk]);
          }
        }
        h = nh;
        if (cell == Cell::LSTM) cs = nc;
        for (int64_t k = 0; k < H; ++k) y[static_cast<size_t>(y_index(t, d, b, k))] = h[static_cast<size_t>(k)];
      }
      for (int64_t k = 0; k < H; ++k) {
        yh[static_cast<size_t>(state_index(d, b, k))] = h[static_cast<size_t>(k)];
        yc[static_cast<size_t>(state_index(d, b, k))] = cs[static_cast<size_t>(k)];
      }
    }
  }
  const DType dt = X.dtype();
  std::vector<Tensor> out = {float_tensor(dt, layout ? Dims{Bt, S, D, H} : Dims{S, D, Bt, H}, y, what),
                             float_tensor(dt, state_dims, yh, what)};
  if (cell == Cell::LSTM) out.push_back(float_tensor(dt, state_dims, yc, what));
  return out;
}

double rnn_flops(const std::vector<const TensorType*>& ins, const std::vector<TensorType>& outs, int gates) {
  if (!ins[0] || !ins[1] || !ins[2]) return 0;
  const Dims& w = ins[1]->dims;  // [D, G*H, I]
  const Dims& r = ins[2]->dims;  // [D, G*H, H]
  const Dims& x = ins[0]->dims;
  double steps = static_cast<double>(x[0] * x[1]);  // S * B in either layout
  return steps * static_cast<double>(w[0]) * 2.0 * static_cast<double>(w[1] * (w[2] + r[2])) +
         steps * static_cast<double>(w[0] * r[2]) * 4.0 * gates;
}

}  // namespace

void register_rnn_ops(OpRegistry& r) {
  const std::vector<AttrSpec> common = {floats_attr("activation_alpha", {}), floats_attr("activation_beta", {}),
                                        strings_attr("activations"), float_attr("clip"),
                                        string_attr("direction", "forward"), int_attr("hidden_size"),
                                        int_attr("layout", 0)};
  auto with = [&](std::vector<AttrSpec> extra) {
    std::vector<AttrSpec> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  r.add({.name = "RNN", .min_opset = 7, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = [](InferContext& c) { infer_rnn(c, Cell::RNN); },
         .reference = [](const KernelContext& c) { return run_rnn(c, Cell::RNN); },
         .flops = [](const Node&, const std::vector<const TensorType*>& i, const std::vector<TensorType>& o) {
           return rnn_flops(i, o, 1);
         },
         .attributes = common});
  r.add({.name = "GRU", .min_opset = 7, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = [](InferContext& c) { infer_rnn(c, Cell::GRU); },
         .reference = [](const KernelContext& c) { return run_rnn(c, Cell::GRU); },
         .flops = [](const Node&, const std::vector<const TensorType*>& i, const std::vector<TensorType>& o) {
           return rnn_flops(i, o, 3);
         },
         .attributes = with({int_attr("linear_before_reset", 0)})});
  r.add({.name = "LSTM", .min_opset = 7, .mapping = MappingType::ManyToMany, .linear_inputs = {},
         .infer = [](InferContext& c) { infer_rnn(c, Cell::LSTM); },
         .reference = [](const KernelContext& c) { return run_rnn(c, Cell::LSTM); },
         .flops = [](const Node&, const std::vector<const TensorType*>& i, const std::vector<TensorType>& o) {
           return rnn_flops(i, o, 4);
         },
         .attributes = with({int_attr("input_forget", 0)})});
}

}  // namespace tessera
