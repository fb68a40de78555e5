// Gathers, scatters and generators compiled and checked against the reference
// on seeded random shapes, indices and attributes.
#include "codegen/llvm/jit.h"
#include "compile/node_kernel.h"
#include "loop/evaluate.h"
#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }
Attribute S(std::string v) { return Attribute::of_string(std::move(v)); }
Tensor ints(std::vector<int64_t> v) { return i64({static_cast<int64_t>(v.size())}, v); }

const DType kDtypes[] = {DType::F32, DType::I64, DType::F16, DType::I8, DType::Bool, DType::F64, DType::BF16};

// Compiles the case and runs it in the loop evaluator (which bounds-checks
// every access) and the JIT on each ISA the host has; expects `want` from all.
// For inputs the reference rejects (out-of-range indices), where the kernel
// clamps or skips instead.
void expect_compiled_gives(const OpCase& c, const std::vector<Tensor>& want) {
  auto g = build_op_graph(c);
  const Node& n = *g->nodes().front();
  std::vector<TensorType> out_types;
  for (Value* v : n.outputs) out_types.push_back(v->type);
  compile::NodeKernel nk = compile::compile_node(n, c.opset);
  auto make_args = [&] {
    std::vector<Tensor> args;
    for (int p : nk.param_inputs) args.push_back(c.inputs[static_cast<size_t>(p)].clone());
    for (const auto& t : out_types) args.emplace_back(t.dtype, t.dims);
    for (const auto& b : nk.scratch) args.push_back(garbage_tensor(b.dtype(), b.dims()));
    return args;
  };
  auto check = [&](const std::vector<Tensor>& args, const std::string& what) {
    for (size_t o = 0; o < want.size(); ++o) {
      SCOPED_TRACE(c.op + " " + what + " output " + std::to_string(o));
      expect_near(args[nk.param_inputs.size() + o], want[o], 0, 0);
    }
  };
  std::vector<Tensor> args = make_args();
  ASSERT_NO_THROW(loop::run_kernel(nk.kernel, args));
  check(args, "evaluator");
  for (codegen::Isa isa : {codegen::Isa::AVX512, codegen::Isa::AVX2}) {
    if (!codegen::host_supports(isa)) continue;
    codegen::JitOptions opts;
    opts.isa = isa;
    std::vector<Tensor> jargs = make_args();
    codegen::jit_compile(nk.kernel, opts)->run(jargs);
    check(jargs, std::string(codegen::isa_name(isa)));
  }
}

// Indices in [-dim, dim) (negative ones count from the end), or [0, dim).
Tensor indices(DType t, const Dims& d, int64_t dim, std::mt19937& rng, bool negative = true) {
  return random_tensor(t, d, rng, negative ? static_cast<double>(-dim) : 0.0, static_cast<double>(dim) - 1e-3);
}

TEST(CompiledTensorGather, Gather) {
  std::mt19937 rng(21);
  for (int rep = 0; rep < 10; ++rep) {
    int rank = 1 + rep % 3;
    Dims d = random_dims(rank, rng, 5);
    int64_t axis = static_cast<int64_t>(rng() % static_cast<uint64_t>(rank));
    Dims id = random_dims(rep % 3, rng, 4);  // rank 0 .. 2
    Tensor ind = indices(rep % 2 ? DType::I32 : DType::I64, id, d[static_cast<size_t>(axis)], rng);
    expect_compiled_matches({.op = "Gather", .inputs = {random_tensor(kDtypes[rep % 7], d, rng), ind},
                             .attrs = {{"axis", I(rep % 4 == 3 ? axis - rank : axis)}}});
  }
}

TEST(CompiledTensorGather, GatherElements) {
  std::mt19937 rng(22);
  for (int rep = 0; rep < 8; ++rep) {
    int rank = 1 + rep % 3;
    Dims d = random_dims(rank, rng, 5);
    int64_t axis = static_cast<int64_t>(rng() % static_cast<uint64_t>(rank));
    Dims id = d;
    for (size_t k = 0; k < id.size(); ++k)
      id[k] = static_cast<int64_t>(k) == axis ? 1 + static_cast<int64_t>(rng() % 6) : 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(d[k]));
    Tensor ind = indices(rep % 2 ? DType::I32 : DType::I64, id, d[static_cast<size_t>(axis)], rng);
    expect_compiled_matches({.op = "GatherElements", .inputs = {random_tensor(kDtypes[rep % 7], d, rng), ind},
                             .attrs = {{"axis", I(axis)}}});
  }
}

TEST(CompiledTensorGather, GatherND) {
  std::mt19937 rng(23);
  struct C {
    Dims data;
    Dims rows;  // indices dims without the last
    int64_t last, batch;
  };
  std::vector<C> cases = {{{4, 3}, {2}, 2, 0},       {{4, 3}, {2, 2}, 1, 0},    {{3, 4, 2}, {5}, 1, 0},
                          {{2, 3, 4}, {2, 3}, 1, 1}, {{2, 3, 4}, {2, 2}, 2, 1}, {{2, 3, 4, 2}, {2, 3, 2}, 1, 2},
                          {{5}, {3}, 1, 0},          {{2, 2, 3}, {}, 3, 0}};
  int k = 0;
  for (const auto& cs : cases) {
    Dims id = cs.rows;
    id.push_back(cs.last);
    // Each index column ranges over its own data axis.
    Tensor ind(DType::I64, id);
    for (int64_t i = 0; i < ind.numel(); ++i) {
      int64_t dim = cs.data[static_cast<size_t>(cs.batch + i % cs.last)];
      ind.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * dim)) - dim;
    }
    expect_compiled_matches({.op = "GatherND", .inputs = {random_tensor(kDtypes[k++ % 7], cs.data, rng), ind},
                             .attrs = {{"batch_dims", I(cs.batch)}}});
  }
}

TEST(CompiledTensorGather, Compress) {
  std::mt19937 rng(24);
  for (int rep = 0; rep < 5; ++rep) {
    Dims d = random_dims(2, rng, 5);
    bool axis = rep % 3 != 2;
    int64_t n = axis ? d[static_cast<size_t>(rep % 2)] : d[0] * d[1];
    Tensor cond = random_tensor(DType::Bool, {n - static_cast<int64_t>(rep % 2)}, rng);
    OpCase c{.op = "Compress", .inputs = {random_tensor(kDtypes[rep], d, rng), cond}, .constant_inputs = {1}};
    if (axis) c.attrs["axis"] = I(rep % 2 ? -1 : 0);
    expect_compiled_matches(c);
  }
}

TEST(CompiledTensorGather, ScatterElements) {
  std::mt19937 rng(25);
  const DType dts[] = {DType::F32, DType::F16, DType::I32, DType::Bool, DType::F64, DType::BF16, DType::U8};
  int rep = 0;
  for (const char* red : {"none", "add", "mul", "max", "min"})
    for (int r2 = 0; r2 < 3; ++r2, ++rep) {
      int rank = 1 + rep % 3;
      Dims d = random_dims(rank, rng, 4);
      int64_t axis = static_cast<int64_t>(rng() % static_cast<uint64_t>(rank));
      Dims id = d;
      for (size_t k = 0; k < id.size(); ++k)
        id[k] = static_cast<int64_t>(k) == axis ? 1 + static_cast<int64_t>(rng() % 6) : 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(d[k]));
      DType dt = dts[rep % 7];
      Tensor ind = indices(r2 % 2 ? DType::I32 : DType::I64, id, d[static_cast<size_t>(axis)], rng);
      expect_compiled_matches({.op = "ScatterElements",
                               .inputs = {random_tensor(dt, d, rng), ind, random_tensor(dt, id, rng)},
                               .attrs = {{"axis", I(axis)}, {"reduction", S(red)}}, .opset = 18},
                              {1e-5, 1e-5});
    }
  // Opset 11 (no reduction) and the deprecated Scatter.
  Tensor ind = i64({2, 2}, {1, 0, 2, -1});
  expect_compiled_matches({.op = "ScatterElements",
                           .inputs = {random_tensor(DType::F32, {3, 3}, rng), ind, random_tensor(DType::F32, {2, 2}, rng)},
                           .attrs = {{"axis", I(0)}}, .opset = 11});
  expect_compiled_matches({.op = "Scatter",
                           .inputs = {random_tensor(DType::I64, {3, 3}, rng), ind, random_tensor(DType::I64, {2, 2}, rng)},
                           .attrs = {{"axis", I(1)}}, .opset = 9});
}

TEST(CompiledTensorGather, ScatterND) {
  std::mt19937 rng(26);
  const DType dts[] = {DType::F32, DType::I64, DType::F16, DType::Bool, DType::F64, DType::I16};
  int rep = 0;
  for (const char* red : {"none", "add", "mul", "max", "min"})
    for (int r2 = 0; r2 < 2; ++r2, ++rep) {
      Dims d = random_dims(1 + rep % 3, rng, 4);
      int64_t k = 1 + static_cast<int64_t>(rng() % d.size());
      Dims id = random_dims(1 + r2, rng, 3);
      id.push_back(k);
      Tensor ind(DType::I64, id);
      for (int64_t i = 0; i < ind.numel(); ++i) {
        int64_t dim = d[static_cast<size_t>(i % k)];
        ind.data<int64_t>()[i] = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * dim)) - dim;
      }
      Dims ud(id.begin(), id.end() - 1);
      ud.insert(ud.end(), d.begin() + k, d.end());
      DType dt = dts[rep % 6];
      expect_compiled_matches({.op = "ScatterND", .inputs = {random_tensor(dt, d, rng), ind, random_tensor(dt, ud, rng)},
                               .attrs = {{"reduction", S(red)}}, .opset = 18},
                              {1e-5, 1e-5});
    }
  expect_compiled_matches({.op = "ScatterND",
                           .inputs = {random_tensor(DType::F32, {4, 3}, rng), i64({3, 1}, {1, -1, 1}),
                                      random_tensor(DType::F32, {3, 3}, rng)},
                           .opset = 11});
}

TEST(CompiledTensorGather, TensorScatter) {
  std::mt19937 rng(27);
  for (int rep = 0; rep < 6; ++rep) {
    bool circular = rep % 2;
    int64_t b = 2, h = 1 + rep % 2, smax = 5, seq = 1 + static_cast<int64_t>(rng() % 5), dd = 3;
    Dims past = {b, h, smax, dd}, upd = {b, h, seq, dd};
    std::vector<int64_t> wi;
    for (int64_t i = 0; i < b; ++i)
      wi.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(circular ? smax : smax - seq + 1)));
    OpCase c{.op = "TensorScatter",
             .inputs = {random_tensor(kDtypes[rep], past, rng), random_tensor(kDtypes[rep], upd, rng), ints(wi)},
             .attrs = {{"mode", S(circular ? "circular" : "linear")}},
             .opset = 24};
    if (rep == 4) c.inputs.pop_back();  // write_indices default to 0
    expect_compiled_matches(c);
  }
  // Sequence axis 1 of a rank-3 cache.
  expect_compiled_matches({.op = "TensorScatter",
                           .inputs = {random_tensor(DType::F32, {2, 6, 2}, rng), random_tensor(DType::F32, {2, 4, 2}, rng),
                                      ints({5, 2})},
                           .attrs = {{"axis", I(1)}, {"mode", S("circular")}}, .opset = 24});
}

// Out-of-range indices (the reference throws): gathers clamp into the axis,
// scatters skip the write, lengths are clamped; nothing is read or written
// outside a tensor (the evaluator checks every access).
TEST(CompiledTensorGather, OutOfRangeIndicesStayInBounds) {
  Tensor x = f32({5}, {10, 11, 12, 13, 14});
  expect_compiled_gives({.op = "Gather", .inputs = {x, i64({4}, {7, -9, 2, -1})}}, {f32({4}, {14, 10, 12, 14})});
  Tensor m = f32({2, 3}, {0, 1, 2, 3, 4, 5});
  expect_compiled_gives({.op = "GatherElements", .inputs = {m, i64({2, 2}, {5, -4, -1, 1})}, .attrs = {{"axis", I(1)}}},
                        {f32({2, 2}, {2, 0, 5, 4})});
  expect_compiled_gives({.op = "GatherND", .inputs = {m, i64({2, 2}, {3, 9, -3, -1})}}, {f32({2}, {5, 2})});
  expect_compiled_gives({.op = "ScatterElements", .inputs = {m, i64({1, 3}, {4, -3, 1}), f32({1, 3}, {-1, -2, -3})},
                         .attrs = {{"axis", I(0)}}},
                        {f32({2, 3}, {0, 1, 2, 3, 4, -3})});
  expect_compiled_gives({.op = "ScatterND", .inputs = {m, i64({3, 1}, {2, -1, -3}), f32({3, 3}, {7, 7, 7, 8, 8, 8, 9, 9, 9})}},
                        {f32({2, 3}, {0, 1, 2, 8, 8, 8})});
  expect_compiled_gives({.op = "ReverseSequence", .inputs = {f32({3, 2}, {0, 1, 2, 3, 4, 5}), i64({2}, {7, -1})}},
                        {f32({3, 2}, {4, 1, 2, 3, 0, 5})});
  expect_compiled_gives({.op = "TensorScatter", .inputs = {f32({1, 3, 1}, {0, 1, 2}), f32({1, 2, 1}, {8, 9}), i64({1}, {2})},
                         .opset = 24},
                        {f32({1, 3, 1}, {0, 1, 8})});
}

TEST(CompiledTensorGen, ConstantAndConstantOfShape) {
  std::mt19937 rng(28);
  for (DType dt : {DType::F32, DType::I64, DType::F16, DType::Bool, DType::U64, DType::F64}) {
    Tensor v = random_tensor(dt, {3, 4}, rng);
    expect_compiled_matches({.op = "Constant", .inputs = {}, .attrs = {{"value", Attribute::of_tensor(v)}}});
  }
  Tensor big = i64({2, 3}, {INT64_MAX, INT64_MIN, 5, 5, 5, -1});
  expect_compiled_matches({.op = "Constant", .inputs = {}, .attrs = {{"value", Attribute::of_tensor(big)}}});
  expect_compiled_matches({.op = "Constant", .inputs = {}, .attrs = {{"value_float", Attribute::of_float(2.5f)}}});
  expect_compiled_matches({.op = "Constant", .inputs = {}, .attrs = {{"value_ints", Attribute::of_ints({3, 1, 4})}}});
  expect_compiled_matches({.op = "Constant", .inputs = {},
                           .attrs = {{"value_floats", Attribute::of_floats({1.f, 1.f, -2.f, 0.5f})}}});
  expect_compiled_matches({.op = "ConstantOfShape", .inputs = {ints({2, 3})}, .opset = 9, .constant_inputs = {0}});
  for (DType dt : {DType::I32, DType::F16, DType::Bool, DType::I64}) {
    Tensor v = random_tensor(dt, {1}, rng, 1, 5);
    expect_compiled_matches({.op = "ConstantOfShape", .inputs = {ints({3, 1, 2})},
                             .attrs = {{"value", Attribute::of_tensor(v)}}, .constant_inputs = {0}});
  }
}

TEST(CompiledTensorGen, Range) {
  struct C {
    DType dt;
    double s, l, d;
  };
  for (const C& c : std::vector<C>{{DType::I64, 0, 10, 3},   {DType::I32, 5, -7, -2}, {DType::I16, 1, 2, 5},
                                   {DType::F32, 0.5, 3.2, 0.3}, {DType::F64, 10, -1, -1.25}, {DType::F32, 1, 1, 1},
                                   {DType::F16, 0, 2, 0.25}}) {
    auto scalar = [&](double v) { return Tensor::scalar<double>(v).cast(c.dt); };
    expect_compiled_matches({.op = "Range", .inputs = {scalar(c.s), scalar(c.l), scalar(c.d)},
                             .constant_inputs = {0, 1, 2}});
  }
}

TEST(CompiledTensorGen, EyeLike) {
  std::mt19937 rng(29);
  for (int64_t k : {0, 1, -2, 5, -7}) {
    Dims d = random_dims(2, rng, 6);
    expect_compiled_matches({.op = "EyeLike", .inputs = {random_tensor(DType::F32, d, rng)}, .attrs = {{"k", I(k)}}});
  }
  expect_compiled_matches({.op = "EyeLike", .inputs = {random_tensor(DType::I32, {3, 4}, rng)}});
  expect_compiled_matches({.op = "EyeLike", .inputs = {random_tensor(DType::F32, {4, 3}, rng)},
                           .attrs = {{"dtype", I(static_cast<int64_t>(DType::Bool))}, {"k", I(-1)}}});
  expect_compiled_matches({.op = "EyeLike", .inputs = {random_tensor(DType::F32, {4, 3}, rng)},
                           .attrs = {{"dtype", I(static_cast<int64_t>(DType::F16))}}});
}

TEST(CompiledTensorGen, OneHot) {
  std::mt19937 rng(30);
  for (int rep = 0; rep < 8; ++rep) {
    int64_t depth = 1 + static_cast<int64_t>(rng() % 5);
    Dims d = random_dims(rep % 3, rng, 4);
    DType it = rep % 3 == 0 ? DType::F32 : rep % 3 == 1 ? DType::I64 : DType::I32;
    Tensor ind = random_tensor(it, d, rng, static_cast<double>(-depth - 2), static_cast<double>(depth + 2));
    if (it == DType::F32 && ind.numel() > 1) {
      ind.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
      ind.data<float>()[1] = -std::numeric_limits<float>::infinity();
    }
    DType vt = kDtypes[rep % 7];
    Tensor vals = random_tensor(vt, {2}, rng);
    Tensor dep = rep % 2 ? Tensor::scalar<float>(static_cast<float>(depth)) : i64({1}, {depth});
    int64_t r = static_cast<int64_t>(d.size()) + 1;
    int64_t axis = static_cast<int64_t>(rng() % static_cast<uint64_t>(r)) - (rep % 2 ? r : 0);
    expect_compiled_matches({.op = "OneHot", .inputs = {ind, dep, vals}, .attrs = {{"axis", I(axis)}},
                             .constant_inputs = {1}});
  }
}

}  // namespace
}  // namespace tessera::testing
