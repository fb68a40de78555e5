// The attention family compiled and checked against the reference: Attention
// (3-D / 4-D, GQA, past KV, masks, causal, softcap, nonpad lengths, every
// qk output mode), RotaryEmbedding, LinearAttention (every update rule),
// FlexAttention (preview domain) and CausalConvWithState.
#include <cmath>

#include "codegen/llvm/jit.h"
#include "compile/node_kernel.h"
#include "loop/evaluate.h"
#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }

TEST(CompiledAttention, Attention4D) {
  std::mt19937 rng(41);
  for (int rep = 0; rep < 8; ++rep) {
    int64_t B = 1 + rep % 2, Hkv = 1 + rep % 2, Hq = Hkv * (1 + rep % 3 / 2 + (rep == 5)), Sq = 2 + rep % 3,
            Skv = 3 + rep % 2, D = 4, Dv = 3 + rep % 2, P = rep % 3 == 2 ? 2 : 0;
    DType t = rep == 6 ? DType::F16 : DType::F32;
    auto r = [&](Dims d) { return random_tensor(t, d, rng, -1, 1); };
    OpCase c{"Attention", {r({B, Hq, Sq, D}), r({B, Hkv, Skv, D}), r({B, Hkv, Skv, Dv})}, {}, 4, 23};
    if (rep % 2 == 1) c.inputs.push_back(rep % 4 == 1 ? random_tensor(DType::Bool, {Sq, P + Skv}, rng, 0, 1)
                                                      : r({B, 1, Sq, P + Skv}));
    else if (P) c.inputs.push_back(Tensor());
    if (P) {
      c.inputs.push_back(r({B, Hkv, P, D}));
      c.inputs.push_back(r({B, Hkv, P, Dv}));
    }
    if (rep % 3 == 0) c.attrs["is_causal"] = I(1);
    if (rep == 4) c.attrs["softcap"] = Attribute::of_float(0.7f);
    if (rep == 3) c.attrs["scale"] = Attribute::of_float(0.3f);
    c.attrs["qk_matmul_output_mode"] = I(rep % 4);
    expect_compiled_matches(c, t == DType::F16 ? Tolerance{1e-2, 1e-3} : Tolerance{1e-5, 1e-6});
  }
}

TEST(CompiledAttention, Attention3DAndPadding) {
  std::mt19937 rng(42);
  auto r = [&](Dims d) { return random_tensor(DType::F32, d, rng, -1, 1); };
  OpCase c{"Attention", {r({2, 3, 8}), r({2, 4, 4}), r({2, 4, 6})}, {{"q_num_heads", I(2)}, {"kv_num_heads", I(1)}}, 4, 23};
  expect_compiled_matches(c);
  c.attrs["is_causal"] = I(1);
  expect_compiled_matches(c);
  // A short float mask (last dim below T is padded with -inf) and nonpad lengths (opset 24).
  OpCase m{"Attention", {r({2, 1, 3, 4}), r({2, 1, 5, 4}), r({2, 1, 5, 4}), r({3, 4}), Tensor(), Tensor(),
                         i64({2}, {3, 5})}, {{"is_causal", I(1)}}, 4, 24};
  m.attrs["qk_matmul_output_mode"] = I(3);
  expect_compiled_matches(m);
  // A fully masked row gives zero probabilities.
  Tensor mask = Tensor::from<bool>({2, 3}, {false, false, false, true, false, true});
  expect_compiled_matches({"Attention", {r({1, 1, 2, 4}), r({1, 1, 3, 4}), r({1, 1, 3, 2}), mask}, {{"qk_matmul_output_mode", I(3)}}, 4, 23});
}

TEST(CompiledAttention, Rotary) {
  std::mt19937 rng(43);
  for (int rep = 0; rep < 6; ++rep) {
    int64_t B = 2, S = 3, H = 2, D = 8, rot = rep % 3 == 2 ? 4 : 0, half = (rot ? rot : D) / 2;
    bool four = rep % 2 == 0, pos = rep >= 3;
    Tensor x = four ? random_tensor(DType::F32, {B, H, S, D}, rng) : random_tensor(DType::F32, {B, S, H * D}, rng);
    Dims cd = pos ? Dims{10, half + rep % 2} : Dims{B, S, half};
    OpCase c{"RotaryEmbedding", {x, random_tensor(DType::F32, cd, rng), random_tensor(DType::F32, cd, rng)}, {}, 1, 23};
    if (pos) c.inputs.push_back(i64({B, S}, {0, 3, 9, 2, 2, 7}));
    if (!four) c.attrs["num_heads"] = I(H);
    if (rot) c.attrs["rotary_embedding_dim"] = I(rot);
    c.attrs["interleaved"] = I(rep % 2 == 1 || rep == 4);
    expect_compiled_matches(c);
  }
}

TEST(CompiledAttention, LinearAttention) {
  std::mt19937 rng(44);
  const char* rules[] = {"linear", "gated", "delta", "gated_delta"};
  for (int rep = 0; rep < 8; ++rep) {
    std::string rule = rules[rep % 4];
    int64_t B = 1 + rep % 2, T = 3, Hkv = 1 + rep / 4, Hq = Hkv * 2, dk = 2, dv = 3;
    auto r = [&](Dims d, double lo = -1, double hi = 1) { return random_tensor(DType::F32, d, rng, lo, hi); };
    OpCase c{"LinearAttention", {r({B, T, Hq * dk}), r({B, T, Hkv * dk}), r({B, T, Hkv * dv})},
             {{"q_num_heads", I(Hq)}, {"kv_num_heads", I(Hkv)}, {"update_rule", Attribute::of_string(rule)}}, 2, 27};
    c.inputs.push_back(rep % 3 ? r({B, Hkv, dk, dv}) : Tensor());
    bool decay = rule == "gated" || rule == "gated_delta", beta = rule == "delta" || rule == "gated_delta";
    c.inputs.push_back(decay ? r({B, T, rep % 2 ? Hkv : Hkv * dk}, -1, 0) : Tensor());
    if (beta) c.inputs.push_back(r({B, T, rep % 2 ? 1 : Hkv}, 0, 1));
    if (rep == 5) c.attrs["scale"] = Attribute::of_float(0.5f);
    expect_compiled_matches(c);
  }
}

TEST(CompiledAttention, CausalConv) {
  std::mt19937 rng(45);
  for (int rep = 0; rep < 6; ++rep) {
    int64_t B = 2, C = 3, L = 2 + rep, K = 1 + rep % 4;
    OpCase c{"CausalConvWithState", {random_tensor(DType::F32, {B, C, L}, rng), random_tensor(DType::F32, {C, 1, K}, rng)},
             {}, 2, 27};
    c.inputs.push_back(rep % 2 ? random_tensor(DType::F32, {C}, rng) : Tensor());
    if (rep % 3) c.inputs.push_back(random_tensor(DType::F32, {B, C, K - 1}, rng));
    if (rep >= 3) c.attrs["activation"] = Attribute::of_string("silu");
    expect_compiled_matches(c);
  }
}

// FlexAttention lives in the preview domain, which OpCase cannot name: a
// small harness compiles the node and compares evaluator and JIT with the reference.
void expect_flex_matches(const std::vector<Tensor>& ins, AttrMap attrs, Tolerance tol = {}) {
  Graph g;
  g.opset = 26;
  g.extra_opsets["ai.onnx.preview"] = 1;
  std::vector<Value*> vs;
  for (size_t i = 0; i < ins.size(); ++i) vs.push_back(g.add_input("in" + std::to_string(i), {ins[i].dtype(), ins[i].dims(), true}));
  Node* n = g.add_node("FlexAttention", vs, {"out0"}, attrs, "node");
  n->domain = "ai.onnx.preview";
  g.add_output(n->outputs[0]);
  infer_graph(g);
  std::vector<const Tensor*> ref_in;
  for (size_t i = 0; i < ins.size(); ++i) ref_in.push_back(&ins[i]);
  std::vector<Tensor> want = run_reference(*n, 26, ref_in);
  compile::NodeKernel nk = compile::compile_node(*n, 26);
  auto check = [&](std::vector<Tensor>& args, const char* what) {
    const Tensor& got = args[args.size() - 1 - nk.scratch.size()];
    ASSERT_EQ(got.dims(), want[0].dims());
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_NEAR(got.get_double(i), want[0].get_double(i), tol.atol + tol.rtol * std::fabs(want[0].get_double(i)))
          << what << " element " << i;
  };
  auto make = [&] {
    std::vector<Tensor> args;
    for (int p : nk.param_inputs) args.push_back(ins[static_cast<size_t>(p)].clone());
    args.emplace_back(want[0].dtype(), want[0].dims());
    for (const auto& b : nk.scratch) args.push_back(garbage_tensor(b.dtype(), b.dims()));
    return args;
  };
  std::vector<Tensor> a = make();
  loop::run_kernel(nk.kernel, a);
  check(a, "evaluator");
  for (codegen::Isa isa : {codegen::Isa::AVX512, codegen::Isa::AVX2}) {
    if (!codegen::host_supports(isa)) continue;
    codegen::JitOptions opts;
    opts.isa = isa;
    std::vector<Tensor> j = make();
    codegen::jit_compile(nk.kernel, opts)->run(j);
    check(j, codegen::isa_name(isa).data());
  }
}

TEST(CompiledAttention, FlexAttention) {
  std::mt19937 rng(46);
  auto r = [&](Dims d, DType t = DType::F32) { return random_tensor(t, d, rng, -1, 1); };
  expect_flex_matches({r({1, 2, 3, 4}), r({1, 2, 5, 4}), r({1, 2, 5, 3})}, {});
  expect_flex_matches({r({2, 4, 3, 4}), r({2, 2, 5, 4}), r({2, 2, 5, 6})}, {{"scale", Attribute::of_float(0.25f)}});
  expect_flex_matches({r({1, 1, 2, 4}, DType::F64), r({1, 1, 3, 4}, DType::F64), r({1, 1, 3, 2}, DType::F64)}, {},
                      {1e-12, 1e-12});
}

}  // namespace
}  // namespace tessera::testing
