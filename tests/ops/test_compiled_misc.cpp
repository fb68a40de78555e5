// Compiled TopK, losses, DynamicQuantizeLinear, window functions and the
// ai.onnx.ml Binarizer / ArrayFeatureExtractor against the reference, on
// seeded random shapes and attributes; and the opaque list.
#include <cmath>
#include <functional>

#include "codegen/llvm/jit.h"
#include "compile/node_kernel.h"
#include "loop/evaluate.h"
#include "opexpr/expr_registry.h"
#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }
Attribute F(float v) { return Attribute::of_float(v); }
Attribute S(std::string v) { return Attribute::of_string(std::move(v)); }

// Random integer tensor with values in [lo, hi].
Tensor rand_int(DType d, const Dims& dims, std::mt19937& rng, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> u(lo, hi);
  std::vector<int64_t> v(static_cast<size_t>(numel_of(dims)));
  for (auto& x : v) x = u(rng);
  return Tensor::from<int64_t>(dims, v).cast(d);
}

// Sprinkles NaNs (and repeated values) into a float tensor.
Tensor with_nans_and_ties(Tensor t, std::mt19937& rng) {
  Tensor f = t.cast(DType::F64);
  double* p = f.data<double>();
  for (int64_t i = 0; i < f.numel(); ++i) {
    if (rng() % 7 == 0) p[i] = NAN;
    else if (rng() % 5 == 0) p[i] = std::round(p[i]);
  }
  return f.cast(t.dtype());
}


}  // namespace

// expect_compiled_matches for cases it cannot take: a node in another domain
// (OpCase has none) or with fewer outputs than the reference returns (only
// the node's outputs are compared). Compiled by compile_node, run by the
// evaluator and the JIT on each ISA the host has. Used by the other
// test_compiled_misc_*.cpp files too.
void expect_compiled_subset_matches(const OpCase& c, const std::string& domain, Tolerance tol) {
  std::unique_ptr<Graph> g;
  Graph dg;
  Node* n = nullptr;
  if (domain.empty()) {
    g = build_op_graph(c);
    n = &*g->nodes().front();
  } else {
    std::vector<Value*> ins;
    for (size_t i = 0; i < c.inputs.size(); ++i)
      ins.push_back(c.inputs[i].defined()
                        ? dg.add_input("in" + std::to_string(i), {c.inputs[i].dtype(), c.inputs[i].dims(), true})
                        : nullptr);
    std::vector<std::string> outs;
    for (int i = 0; i < c.num_outputs; ++i) outs.push_back("out" + std::to_string(i));
    n = dg.add_node(c.op, ins, outs, c.attrs, "node");
    n->domain = domain;
    for (Value* o : n->outputs) dg.add_output(o);
    dg.opset = c.opset;
    infer_graph(dg);
  }
  std::vector<const Tensor*> ref_in;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    ref_in.push_back(c.inputs[i].defined() ? &c.inputs[i] : nullptr);
  }
  std::vector<Tensor> want = run_reference(*n, c.opset, ref_in);
  std::vector<TensorType> out_types;
  for (Value* o : n->outputs) out_types.push_back(o->type);
  compile::NodeKernel nk;
  try {
    nk = compile::compile_node(*n, c.opset);
  } catch (const Error& e) {
    ADD_FAILURE() << c.op << ": does not compile: " << e.what();
    return;
  }
  auto check = [&](const std::function<void(std::vector<Tensor>&)>& run, const std::string& what) {
    std::vector<Tensor> args;
    for (int p : nk.param_inputs) args.push_back(c.inputs[static_cast<size_t>(p)].clone());
    for (const auto& t : out_types) args.emplace_back(t.dtype, t.dims);
    for (const auto& b : nk.scratch) args.push_back(garbage_tensor(b.dtype(), b.dims()));
    run(args);
    size_t n_in = nk.param_inputs.size();
    for (size_t o = 0; o < out_types.size(); ++o) {
      SCOPED_TRACE(c.op + " output " + std::to_string(o) + " [" + what + "]");
      expect_near(args[n_in + o], want[o], tol.rtol, tol.atol);
    }
  };
  check([&](std::vector<Tensor>& a) { loop::run_kernel(nk.kernel, a); }, "evaluator");
  for (codegen::Isa isa : {codegen::Isa::AVX512, codegen::Isa::AVX2}) {
    if (!codegen::host_supports(isa)) continue;
    codegen::JitOptions opts;
    opts.isa = isa;
    auto jit = codegen::jit_compile(nk.kernel, opts);
    check([&](std::vector<Tensor>& a) { jit->run(a); }, std::string(codegen::isa_name(isa)));
  }
}

namespace {

void expect_ml_matches(const std::string& op, const std::vector<Tensor>& inputs, AttrMap attrs) {
  expect_compiled_subset_matches({.op = op, .inputs = inputs, .attrs = std::move(attrs), .opset = 1}, "ai.onnx.ml",
                                 {0, 0});
}

TEST(CompiledMisc, TopK) {
  std::mt19937 rng(101);
  const DType types[] = {DType::F32, DType::F64, DType::F16, DType::I32, DType::I64,
                          DType::U8,  DType::I8,  DType::BF16, DType::U64, DType::I16};
  for (int rep = 0; rep < 30; ++rep) {
    DType d = types[rep % 10];
    int rank = 1 + rep % 3;
    Dims dims = random_dims(rank, rng, 7);
    int64_t axis = static_cast<int64_t>(rng() % static_cast<unsigned>(rank));
    int64_t n = dims[static_cast<size_t>(axis)];
    int64_t k = static_cast<int64_t>(rng() % static_cast<unsigned>(n + 1));
    Tensor x = is_float(d) ? with_nans_and_ties(random_tensor(d, dims, rng, -4, 4), rng)
                           : rand_int(d, dims, rng, d == DType::U8 ? 0 : -3, 3);
    AttrMap attrs = {{"axis", I(rep % 2 ? axis - rank : axis)}, {"largest", I(rep % 4 < 2 ? 1 : 0)}};
    if (rep % 5 == 0) attrs["sorted"] = I(1);
    expect_compiled_matches({.op = "TopK", .inputs = {x, i64({1}, {k})}, .attrs = attrs, .num_outputs = 2,
                             .opset = 11, .constant_inputs = {1}});
  }
  // Opset 1: k is an attribute; a single output (values only).
  Tensor x = random_tensor(DType::F32, {3, 9}, rng);
  expect_compiled_matches({.op = "TopK", .inputs = {x}, .attrs = {{"k", I(4)}}, .num_outputs = 2, .opset = 1});
  expect_compiled_matches({.op = "TopK", .inputs = {x, i64({1}, {9})}, .attrs = {{"largest", I(0)}}, .num_outputs = 2,
                           .opset = 11, .constant_inputs = {1}});
  // Values only.
  expect_compiled_subset_matches({.op = "TopK", .inputs = {x, i64({1}, {3})}, .num_outputs = 1, .opset = 11,
                                  .constant_inputs = {1}},
                                 "", {0, 0});
}

TEST(CompiledMisc, Losses) {
  std::mt19937 rng(202);
  const char* reds[] = {"none", "sum", "mean"};
  for (int rep = 0; rep < 30; ++rep) {
    bool sce = rep % 2 == 1;
    DType d = rep % 5 == 3 ? DType::F64 : rep % 5 == 4 ? DType::F16 : DType::F32;
    int64_t N = 1 + static_cast<int64_t>(rng() % 4), C = 1 + static_cast<int64_t>(rng() % 5);
    Dims xd = {N, C}, td = {N};
    int extra = static_cast<int>(rng() % 3);
    for (int e = 0; e < extra; ++e) {
      int64_t v = 1 + static_cast<int64_t>(rng() % 3);
      xd.push_back(v);
      td.push_back(v);
    }
    Tensor x = random_tensor(d, xd, rng, -3, 3);
    bool ignore = rep % 3 == 0;
    int64_t ii = ignore ? static_cast<int64_t>(rng() % static_cast<unsigned>(C)) : 0;
    Tensor t = rand_int(rep % 4 == 1 ? DType::I32 : DType::I64, td, rng, 0, C - 1);
    AttrMap attrs = {{"reduction", S(reds[(rep / 2) % 3])}};
    if (ignore) attrs["ignore_index"] = I(ii);
    std::vector<Tensor> ins = {x, t};
    if (rep % 4 >= 2) ins.push_back(random_tensor(d, {C}, rng, 0.1, 2));
    int outs = sce ? 2 : 1;  // the reference always gives SCE's log_prob
    Tolerance tol = d == DType::F16 ? Tolerance{1e-3, 1e-3} : Tolerance{1e-6, 1e-6};
    expect_compiled_matches({.op = sce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss", .inputs = ins,
                             .attrs = attrs, .num_outputs = outs, .opset = 13}, tol);
  }
  // SoftmaxCrossEntropyLoss without its log_prob output.
  expect_compiled_subset_matches({.op = "SoftmaxCrossEntropyLoss",
                                  .inputs = {random_tensor(DType::F32, {3, 4, 2}, rng), i64({3, 2}, {0, 1, 2, 3, 3, 0})},
                                  .num_outputs = 1, .opset = 13},
                                 "", {1e-6, 1e-6});
  // Every target ignored: mean is 0/0 = NaN in both.
  expect_compiled_matches({.op = "NegativeLogLikelihoodLoss", .inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i64({2}, {1, 1})},
                           .attrs = {{"ignore_index", I(1)}}, .opset = 13});
}

TEST(CompiledMisc, DynamicQuantizeLinear) {
  std::mt19937 rng(303);
  for (int rep = 0; rep < 10; ++rep) {
    Dims dims = random_dims(rep % 4, rng, 9);
    double lo = rep % 3 == 0 ? 0.5 : -4, hi = rep % 3 == 1 ? -0.5 : 6;
    Tensor x = random_tensor(DType::F32, dims, rng, lo, hi);
    expect_compiled_matches({.op = "DynamicQuantizeLinear", .inputs = {x}, .num_outputs = 3, .opset = 11});
  }
  expect_compiled_matches({.op = "DynamicQuantizeLinear", .inputs = {f32({3}, {0, 0, 0})}, .num_outputs = 3, .opset = 11});
}

TEST(CompiledMisc, Windows) {
  std::mt19937 rng(404);
  const char* ops[] = {"HannWindow", "HammingWindow", "BlackmanWindow"};
  const int64_t dtypes[] = {1, 11, 10, 7, 16};
  for (int rep = 0; rep < 15; ++rep) {
    int64_t size = 1 + static_cast<int64_t>(rng() % 20);
    Tensor sz = rep % 2 ? i64({}, {size}) : Tensor::from<int32_t>({}, {static_cast<int32_t>(size)});
    AttrMap attrs = {{"periodic", I(rep % 3 == 0 ? 0 : 1)}};
    int64_t od = dtypes[rep % 5];
    if (od != 1) attrs["output_datatype"] = I(od);
    Tolerance tol = od == 10 || od == 16 ? Tolerance{1e-2, 1e-3} : Tolerance{1e-6, 1e-7};
    expect_compiled_matches({.op = ops[rep % 3], .inputs = {sz}, .attrs = attrs, .opset = 17, .constant_inputs = {0}},
                            tol);
  }
}

TEST(CompiledMisc, MlBinarizerAndArrayFeatureExtractor) {
  std::mt19937 rng(505);
  const DType types[] = {DType::F32, DType::F64, DType::I32, DType::I64};
  for (int rep = 0; rep < 8; ++rep) {
    DType d = types[rep % 4];
    Tensor x = random_tensor(d, random_dims(1 + rep % 3, rng, 8), rng, -3, 3);
    expect_ml_matches("Binarizer", {x}, {{"threshold", F(rep % 2 ? 0.5f : -1.0f)}});
  }
  for (int rep = 0; rep < 10; ++rep) {
    DType d = types[rep % 4];
    Dims xd = random_dims(1 + rep % 3, rng, 6);
    int64_t m = xd.back();
    Dims id = rep % 3 == 0 ? Dims{2, 2} : rep % 3 == 1 ? Dims{} : Dims{1 + static_cast<int64_t>(rng() % 5)};
    Tensor ind = rand_int(DType::I64, id, rng, 0, m - 1);
    expect_ml_matches("ArrayFeatureExtractor", {random_tensor(d, xd, rng), ind}, {});
  }
}

TEST(CompiledMisc, OpaqueOpsSayWhy) {
  const OpRegistry& r = op_registry();
  for (const char* op : {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli",
                         "Multinomial", "If", "Loop", "Scan", "StringNormalizer", "StringConcat", "StringSplit",
                         "RegexFullMatch", "TfIdfVectorizer", "NonMaxSuppression"}) {
    ASSERT_TRUE(r.find(op)) << op;
    const ExprDef* d = expr_registry().find(op);
    ASSERT_TRUE(d) << op;
    EXPECT_FALSE(d->expr) << op;
    EXPECT_FALSE(d->opaque_reason.empty()) << op;
  }
  for (const char* op : {"LabelEncoder", "TreeEnsemble"}) {
    ASSERT_TRUE(r.find(op, "ai.onnx.ml")) << op;
    const ExprDef* d = expr_registry().find(op, "ai.onnx.ml");
    ASSERT_TRUE(d) << op;
    EXPECT_FALSE(d->opaque_reason.empty()) << op;
  }
}

}  // namespace
}  // namespace tessera::testing
