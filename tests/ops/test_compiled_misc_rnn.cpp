// Compiled RNN, GRU and LSTM against the reference on seeded random shapes,
// directions, activations, optional inputs and outputs.
#include "ops/compiled_test_util.h"

namespace tessera::testing {

// In test_compiled_misc.cpp: compares only the node's outputs (here fewer than the reference's).
void expect_compiled_subset_matches(const OpCase& c, const std::string& domain, Tolerance tol);

namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }
Attribute F(float v) { return Attribute::of_float(v); }
Attribute S(std::string v) { return Attribute::of_string(std::move(v)); }

struct RnnCfg {
  std::string op;
  int gates;
  int acts;
};

void run_cases(const RnnCfg& cfg, unsigned seed, int reps) {
  std::mt19937 rng(seed);
  const char* dirs[] = {"forward", "reverse", "bidirectional"};
  const std::vector<std::string> pool = {"Sigmoid", "Tanh", "Relu", "Affine", "LeakyRelu", "ThresholdedRelu",
                                         "ScaledTanh", "HardSigmoid", "Elu", "Softsign", "Softplus"};
  for (int rep = 0; rep < reps; ++rep) {
    const std::string dir = dirs[rep % 3];
    const int64_t D = dir == "bidirectional" ? 2 : 1;
    const int64_t S_ = 1 + static_cast<int64_t>(rng() % 4), B = 1 + static_cast<int64_t>(rng() % 3);
    const int64_t In = 1 + static_cast<int64_t>(rng() % 4), H = 1 + static_cast<int64_t>(rng() % 4);
    const int64_t G = cfg.gates;
    const int64_t layout = rep % 4 == 3 ? 1 : 0;
    DType d = rep % 6 == 5 ? DType::F64 : rep % 6 == 4 ? DType::F16 : DType::F32;
    Dims xd = layout ? Dims{B, S_, In} : Dims{S_, B, In};
    Dims sd = layout ? Dims{B, D, H} : Dims{D, B, H};
    std::vector<Tensor> ins = {random_tensor(d, xd, rng, -1, 1), random_tensor(d, {D, G * H, In}, rng, -0.7, 0.7),
                               random_tensor(d, {D, G * H, H}, rng, -0.7, 0.7)};
    const int opt = rep % 5;  // which optional inputs are given
    ins.push_back(opt >= 1 ? random_tensor(d, {D, 2 * G * H}, rng, -0.5, 0.5) : Tensor());
    if (opt >= 2) {
      std::vector<int32_t> lens;
      for (int64_t b = 0; b < B; ++b) lens.push_back(static_cast<int32_t>(rng() % static_cast<unsigned>(S_ + 1)));
      ins.push_back(Tensor::from<int32_t>({B}, lens));
    } else {
      ins.push_back(Tensor());
    }
    ins.push_back(opt >= 3 ? random_tensor(d, sd, rng, -1, 1) : Tensor());
    if (cfg.op == "LSTM") {
      ins.push_back(opt >= 3 ? random_tensor(d, sd, rng, -1, 1) : Tensor());
      ins.push_back(opt >= 4 ? random_tensor(d, {D, 3 * H}, rng, -0.5, 0.5) : Tensor());
    }
    while (!ins.back().defined()) ins.pop_back();
    AttrMap attrs = {{"direction", S(dir)}, {"hidden_size", I(H)}};
    if (layout) attrs["layout"] = I(1);
    if (rep % 3 == 1) attrs["clip"] = F(0.8f);
    if (rep % 4 == 2) {
      std::vector<std::string> names;
      // (A bidirectional node with one direction's list is not tested: the
      // reference's self-insert of the list is undefined behaviour.)
      for (int k = 0; k < cfg.acts * static_cast<int>(D); ++k)
        names.push_back(pool[rng() % pool.size()]);
      attrs["activations"] = Attribute::of_strings(names);
      attrs["activation_alpha"] = Attribute::of_floats({0.3f, 1.5f, 0.7f});
      attrs["activation_beta"] = Attribute::of_floats({0.2f, -0.4f});
    }
    if (cfg.op == "GRU" && rep % 2) attrs["linear_before_reset"] = I(1);
    if (cfg.op == "LSTM" && rep % 5 == 3) attrs["input_forget"] = I(1);
    int outs = cfg.op == "LSTM" ? 3 : 2;  // the reference always gives every output
    Tolerance tol = d == DType::F16 ? Tolerance{5e-3, 5e-3} : d == DType::F64 ? Tolerance{1e-10, 1e-10}
                                                                            : Tolerance{1e-5, 1e-6};
    expect_compiled_matches({.op = cfg.op, .inputs = ins, .attrs = attrs, .num_outputs = outs,
                             .opset = layout ? 14 : 7 + rep % 7},
                            tol);
  }
}

// Y only, or Y and Y_h of an LSTM (Y_c not requested).
TEST(CompiledMiscRnn, OutputSubsets) {
  std::mt19937 rng(34);
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    int64_t G = std::string(op) == "RNN" ? 1 : std::string(op) == "GRU" ? 3 : 4;
    for (int outs = 1; outs <= (G == 4 ? 2 : 1); ++outs) {
      std::vector<Tensor> ins = {random_tensor(DType::F32, {3, 2, 3}, rng, -1, 1),
                                 random_tensor(DType::F32, {2, G * 2, 3}, rng, -0.7, 0.7),
                                 random_tensor(DType::F32, {2, G * 2, 2}, rng, -0.7, 0.7), Tensor(),
                                 Tensor::from<int32_t>({2}, {3, 1})};
      expect_compiled_subset_matches({.op = op, .inputs = ins,
                                      .attrs = {{"direction", S("bidirectional")}, {"hidden_size", I(2)}},
                                      .num_outputs = outs},
                                     "", {1e-5, 1e-6});
    }
  }
}

TEST(CompiledMiscRnn, Rnn) { run_cases({"RNN", 1, 1}, 31, 16); }
TEST(CompiledMiscRnn, Gru) { run_cases({"GRU", 3, 2}, 32, 16); }
TEST(CompiledMiscRnn, Lstm) { run_cases({"LSTM", 4, 3}, 33, 16); }

}  // namespace
}  // namespace tessera::testing
