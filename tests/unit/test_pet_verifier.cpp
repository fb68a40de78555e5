// PET's verifier: field arithmetic, the exact evaluator against the reference
// interpreter, splitting points, known-equivalent and known-partial mutants
// checked against a brute-force float comparison of every output element, and
// a short run of the mutation test.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "interp/interpreter.h"
#include "ops/registry.h"
#include "pet/boxes.h"
#include "pet/field.h"
#include "pet/field_eval.h"
#include "pet/mutation_test.h"
#include "pet/seed_pairs.h"
#include "pet/verifier.h"
#include "support/error.h"

namespace tessera::pet {
namespace {

using V = std::vector<Value*>;
Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Attribute one(int64_t v) { return Attribute::of_int(v); }

// ------------------------------------------------------------- field

TEST(PetField, ArithmeticMatchesWideIntegers) {
  std::mt19937_64 rng(7);
  const unsigned __int128 p = field::kP;
  for (int i = 0; i < 100000; ++i) {
    const uint32_t a = static_cast<uint32_t>(rng() % field::kP), b = static_cast<uint32_t>(rng() % field::kP);
    EXPECT_EQ(field::add(a, b), static_cast<uint32_t>((static_cast<uint64_t>(a) + b) % field::kP));
    EXPECT_EQ(field::sub(a, b), static_cast<uint32_t>((static_cast<uint64_t>(a) + field::kP - b) % field::kP));
    EXPECT_EQ(field::mul(a, b), static_cast<uint32_t>((static_cast<unsigned __int128>(a) * b) % p));
    const uint64_t x = rng();
    EXPECT_EQ(field::reduce(x), static_cast<uint32_t>(x % field::kP));
    if (a) {
      EXPECT_EQ(field::mul(a, field::inv(a)), 1u);
    }
  }
  EXPECT_EQ(field::reduce(~uint64_t{0}), static_cast<uint32_t>(~uint64_t{0} % field::kP));
  EXPECT_EQ(field::from_int(-1), field::kP - 1);
  EXPECT_EQ(field::from_int(int64_t{field::kP} * 3 + 5), 5u);
  EXPECT_EQ(field::to_signed(field::from_int(-12345)), -12345);
  static_assert(field::mul(field::inv(9), 9) == 1);
}

// ------------------------------------------------ evaluator vs interpreter

// Integer-valued float inputs small enough that every float sum is exact;
// scaled by `mult` (a multiple of every divisor an average can have) so
// averages are integers too.
Tensor small_ints(const Dims& d, std::mt19937_64& rng, float mult) {
  Tensor t(DType::F32, d);
  for (float& x : t.span<float>()) x = static_cast<float>(static_cast<int>(rng() % 7) - 3) * mult;
  return t;
}

// Runs g in the interpreter and in the field evaluator on the same integer
// inputs; every output element must be the same integer.
void expect_exact(const Graph& g, float mult = 1, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> in;
  std::vector<FieldTensor> fin;
  for (const Value* v : g.inputs()) {
    in.push_back(small_ints(v->type.dims, rng, mult));
    FieldTensor f{v->type.dims, {}};
    for (float x : in.back().span<float>()) f.data.push_back(field::from_int(static_cast<int64_t>(x)));
    fin.push_back(std::move(f));
  }
  const std::vector<Tensor> want = interpret(g, in);
  FieldEvaluator ev(g, fin);
  ASSERT_EQ(ev.num_outputs(), static_cast<int>(want.size()));
  for (int o = 0; o < ev.num_outputs(); ++o) {
    const FieldTensor got = ev.output(o);
    ASSERT_EQ(got.dims, want[static_cast<size_t>(o)].dims());
    for (int64_t i = 0; i < want[static_cast<size_t>(o)].numel(); ++i) {
      const double w = want[static_cast<size_t>(o)].get_double(i);
      ASSERT_EQ(w, std::floor(w)) << "output " << o << " element " << i << " is not an integer";
      ASSERT_EQ(field::to_signed(got.data[static_cast<size_t>(i)]), static_cast<int64_t>(w))
          << "output " << o << " element " << i;
    }
  }
}

// A graph of one op on fresh inputs of the given dims (plus int constants).
template <class F>
std::unique_ptr<Graph> one_op(const std::vector<Dims>& inputs, F&& body) {
  GraphBuilder b;
  V in;
  for (const Dims& d : inputs) in.push_back(b.input(d));
  return b.finish(body(b, in));
}

TEST(PetFieldEval, ConvMatchesInterpreter) {
  struct Case { Dims x, w; AttrMap attrs; bool bias; };
  const std::vector<Case> cases = {
      {{1, 2, 7, 6}, {3, 2, 3, 3}, {{"pads", ints({1, 0, 2, 1})}, {"strides", ints({2, 1})}}, true},
      {{2, 4, 9, 9}, {4, 2, 3, 3}, {{"group", one(2)}, {"dilations", ints({2, 3})}, {"pads", ints({2, 3, 2, 3})}}, false},
      {{1, 3, 8, 7}, {2, 3, 3, 2}, {{"auto_pad", Attribute::of_string("SAME_UPPER")}, {"strides", ints({2, 2})}}, true},
      {{1, 3, 8, 7}, {2, 3, 2, 3}, {{"auto_pad", Attribute::of_string("SAME_LOWER")}}, false},
      {{1, 2, 9}, {3, 2, 4}, {{"pads", ints({2, 1})}, {"strides", ints({2})}, {"dilations", ints({2})}}, true},
      {{1, 2, 4, 5, 5}, {2, 1, 2, 3, 3}, {{"group", one(2)}, {"pads", ints({1, 1, 0, 0, 1, 2})}}, true},
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {{"group", one(6)}, {"pads", ints({1, 1, 1, 1})}}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(dims_to_string(c.x) + " * " + dims_to_string(c.w));
    std::vector<Dims> in = {c.x, c.w};
    if (c.bias) in.push_back({c.w[0]});
    expect_exact(*one_op(in, [&](GraphBuilder& b, const V& v) { return V{b.op("Conv", v, c.attrs)}; }));
  }
}

TEST(PetFieldEval, ConvTransposeMatchesInterpreter) {
  expect_exact(*one_op({{1, 2, 4, 5}, {2, 3, 3, 3}, {3}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("ConvTranspose", v, {{"strides", ints({2, 2})}, {"pads", ints({1, 0, 0, 1})}, {"output_padding", ints({1, 0})}})};
  }));
  expect_exact(*one_op({{1, 4, 3, 3}, {4, 1, 2, 2}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("ConvTranspose", v, {{"group", one(2)}, {"dilations", ints({2, 1})}})};
  }));
}

TEST(PetFieldEval, MatMulAndGemmMatchInterpreter) {
  for (auto [a, b] : std::vector<std::pair<Dims, Dims>>{
           {{3, 4}, {4, 5}}, {{2, 1, 3, 4}, {5, 4, 2}}, {{4}, {2, 4, 3}}, {{2, 3, 4}, {4}}, {{4}, {4}}}) {
    SCOPED_TRACE(dims_to_string(a) + " x " + dims_to_string(b));
    expect_exact(*one_op({a, b}, [](GraphBuilder& g, const V& v) { return V{g.op("MatMul", v)}; }));
  }
  expect_exact(*one_op({{4, 3}, {5, 4}, {5}}, [](GraphBuilder& g, const V& v) {
    return V{g.op("Gemm", v, {{"transA", one(1)}, {"transB", one(1)}})};
  }));
  expect_exact(*one_op({{3, 4}, {4, 2}, {3, 1}}, [](GraphBuilder& g, const V& v) { return V{g.op("Gemm", v)}; }));
}

TEST(PetFieldEval, DataMovementMatchesInterpreter) {
  const Dims x = {2, 3, 4, 5};
  auto run = [&](auto body) { expect_exact(*one_op({x}, body)); };
  run([](GraphBuilder& b, const V& v) { return V{b.op("Pad", {v[0], b.ints({0, 1, 2, 0, 1, 0, -1, 2})})}; });
  run([](GraphBuilder& b, const V& v) {  // negative steps, clamped bounds, axes
    return V{b.op("Slice", {v[0], b.ints({-1, 1, 100}), b.ints({-100, 3, 0}), b.ints({3, 1, 2}), b.ints({-2, 1, -1})})};
  });
  run([](GraphBuilder& b, const V& v) { return V{b.op("Transpose", {v[0]}, {{"perm", ints({2, 0, 3, 1})}})}; });
  run([](GraphBuilder& b, const V& v) { return V{b.op("Transpose", {v[0]})}; });
  run([](GraphBuilder& b, const V& v) { return V{b.op("Reshape", {v[0], b.ints({0, -1, 5})})}; });
  run([](GraphBuilder& b, const V& v) { return V{b.op("Flatten", {v[0]}, {{"axis", one(2)}})}; });
  run([](GraphBuilder& b, const V& v) {
    Value* u = b.op("Unsqueeze", {v[0], b.ints({0, 3})});
    return V{b.op("Squeeze", {u, b.ints({0})}), b.op("Identity", {u})};
  });
  run([](GraphBuilder& b, const V& v) { return b.ops("Split", {v[0], b.ints({1, 3, 1})}, 3, {{"axis", one(-1)}}); });
  run([](GraphBuilder& b, const V& v) { return b.ops("Split", {v[0]}, 2, {{"axis", one(2)}}); });
  run([](GraphBuilder& b, const V& v) {
    return V{b.op("Concat", {v[0], b.op("Slice", {v[0], b.ints({1}), b.ints({3}), b.ints({1})}), v[0]}, {{"axis", one(1)}})};
  });
  expect_exact(*one_op({{2, 8, 3, 2}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("DepthToSpace", {v[0]}, {{"blocksize", one(2)}}),
             b.op("DepthToSpace", {v[0]}, {{"blocksize", one(2)}, {"mode", Attribute::of_string("CRD")}})};
  }));
  expect_exact(*one_op({{2, 3, 4, 6}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("SpaceToDepth", {v[0]}, {{"blocksize", one(2)}})};
  }));
}

TEST(PetFieldEval, ElementwiseAndConstantsMatchInterpreter) {
  expect_exact(*one_op({{2, 3, 4}, {3, 1}, {4}}, [](GraphBuilder& b, const V& v) {
    Value* ones = b.floats({1, 4}, {1, 1, 1, 1});
    Value* mixed = b.floats({3, 1}, {2, -1, 0});
    return V{b.op("Add", {v[0], v[1]}), b.op("Sub", {v[1], v[0]}), b.op("Mul", {v[0], v[2]}),
             b.op("Mul", {b.op("Add", {v[0], ones}), mixed})};
  }));
}

TEST(PetFieldEval, PoolsAndReductionsMatchInterpreter) {
  const float lcm = 2520;  // every window count divides it, so averages are integers
  const Dims x = {2, 3, 7, 6};
  auto run = [&](AttrMap a) {
    expect_exact(*one_op({x}, [&](GraphBuilder& b, const V& v) { return V{b.op("AveragePool", {v[0]}, a)}; }), lcm);
  };
  run({{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}});
  run({{"kernel_shape", ints({3, 3})}, {"pads", ints({1, 1, 1, 1})}, {"count_include_pad", one(1)}});
  run({{"kernel_shape", ints({3, 2})}, {"strides", ints({2, 2})}, {"ceil_mode", one(1)}, {"pads", ints({0, 1, 1, 0})}});
  run({{"kernel_shape", ints({3, 2})}, {"strides", ints({2, 2})}, {"ceil_mode", one(1)}, {"count_include_pad", one(1)},
       {"pads", ints({1, 1, 1, 0})}});
  run({{"kernel_shape", ints({2, 2})}, {"auto_pad", Attribute::of_string("SAME_UPPER")}, {"strides", ints({2, 2})}});
  expect_exact(*one_op({x}, [](GraphBuilder& b, const V& v) {
    return V{b.op("GlobalAveragePool", {v[0]}), b.op("ReduceSum", {v[0], b.ints({1, -1})}),
             b.op("ReduceSum", {v[0], b.ints({2})}, {{"keepdims", one(0)}}),
             b.op("ReduceMean", {v[0]}, {{"axes", ints({0, 2})}}), b.op("ReduceMean", {v[0]}, {{"keepdims", one(0)}})};
  }), lcm);
}

TEST(PetFieldEval, RefusesWhatIsNotMultiLinear) {
  auto relu = one_op({{1, 4}}, [](GraphBuilder& b, const V& v) {
    b.graph().add_node("Relu", {v[0]}, {"y"}, {}, "r1");
    return V{b.graph().find_value("y")};
  });
  try {
    FieldEvaluator ev(*relu, 1);
    FAIL() << "Relu was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "pet: Relu 'r1' is not multi-linear");
  }
  auto half = one_op({{1, 4}}, [](GraphBuilder& b, const V& v) { return V{b.op("Mul", {v[0], b.floats({1}, {0.5f})})}; });
  try {
    FieldEvaluator ev(*half, 1);
    FAIL() << "a constant 0.5 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Mul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not an integer"), std::string::npos) << e.what();
  }
  auto gemm = one_op({{2, 3}, {3, 2}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("Gemm", v, {{"alpha", Attribute::of_float(2)}})};
  });
  EXPECT_THROW(FieldEvaluator(*gemm, 1), Error);
  // The verifier reports them as Different with the reason, never throws.
  const VerifyResult r = verify(*relu, *relu);
  EXPECT_EQ(r.verdict, Verdict::Different);
  EXPECT_NE(r.reason.find("not multi-linear"), std::string::npos) << r.reason;
  auto other = one_op({{1, 5}}, [](GraphBuilder& b, const V& v) { return V{b.op("Identity", {v[0]})}; });
  EXPECT_EQ(verify(*relu, *other).verdict, Verdict::Different);
  // A padding value other than 0, and a shape that is not a constant.
  auto pad1 = one_op({{1, 4}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("Pad", {v[0], b.ints({0, 1, 0, 1}), b.floats({}, {1.0f})})};
  });
  const VerifyResult rp = verify(*pad1, *pad1);
  EXPECT_EQ(rp.verdict, Verdict::Different);
  EXPECT_NE(rp.reason.find("Pad"), std::string::npos) << rp.reason;
  GraphBuilder b;
  Value* x = b.input({2, 6});
  Value* shape = b.graph().add_input("shape", TensorType{DType::I64, {2}});
  auto dyn = b.finish({b.op("Reshape", {x, shape})});
  dyn->outputs()[0]->type = TensorType{DType::F32, {3, 4}};
  const VerifyResult rd = verify(*dyn, *dyn);
  EXPECT_EQ(rd.verdict, Verdict::Different);
  EXPECT_NE(rd.reason.find("Reshape"), std::string::npos) << rd.reason;
}

// --------------------------------------------------------- split points

TEST(PetBoxes, ConvWithPaddingHasNineSpatialBoxes) {
  auto g = one_op({{1, 2, 8, 8}, {3, 2, 3, 3}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("Conv", v, {{"pads", ints({1, 1, 1, 1})}})};
  });
  const Splits s = infer_splitting_points(*g)[0];
  EXPECT_EQ(dim_points(s[0]), (Points{0, 1}));
  EXPECT_EQ(dim_points(s[1]), (Points{0, 3}));
  EXPECT_EQ(dim_points(s[2]), (Points{0, 1, 7, 8}));
  EXPECT_EQ(dim_points(s[3]), (Points{0, 1, 7, 8}));
  EXPECT_EQ(box_count(s), 9);
}

TEST(PetBoxes, ConcatOffsetsAndReshapes) {
  auto g = one_op({{2, 3}, {2, 4}}, [](GraphBuilder& b, const V& v) {
    Value* c = b.op("Concat", {v[0], v[1]}, {{"axis", one(1)}});
    return V{c, b.op("Reshape", {v[0], b.ints({3, 2})}), b.op("Reshape", {c, b.ints({14})}),
             b.op("Reshape", {c, b.ints({7, 2})})};
  });
  const auto s = infer_splitting_points(*g);
  EXPECT_EQ(dim_points(s[0][1]), (Points{0, 3, 7}));
  EXPECT_EQ(dim_points(s[1][0]), (Points{0, 3}));  // a reshape of an input reads it at its own flat index
  // [2, 7] -> [14]: the atoms (2, 7) with 7 split at 3; flattened, every row.
  ASSERT_EQ(s[2][0].size(), 2u);
  EXPECT_EQ(s[2][0][1], (Atom{7, {0, 3, 7}}));
  EXPECT_EQ(dim_points(s[2][0]), (Points{0, 3, 7, 10, 14}));
  // [2, 7] -> [7, 2]: no common factors: the conservative rule, the merged
  // points {0, 3, 7, 10, 14} as digits of (7, 2): rows 5 and 6 (flat 10..13)
  // stay in one piece.
  EXPECT_EQ(dim_points(s[3][0]), (Points{0, 1, 2, 3, 4, 5, 7}));
  EXPECT_EQ(dim_points(s[3][1]), (Points{0, 1, 2}));
}

TEST(PetBoxes, AtomBoxesMapToContiguousBoxes) {
  // H = 8 as atoms (4, 2): the box a in [1, 3), i in [0, 2) is rows 2..5 (one
  // box); a in [1, 3), i in [1, 2) is rows 3 and 5 (two boxes).
  Splits s = {{Atom{1, {0, 1}}}, {Atom{4, {0, 1, 3, 4}}, Atom{2, {0, 1, 2}}}};
  EXPECT_EQ(box_count(s), 6);
  const std::vector<Box> whole = to_boxes(s, AtomBox{{0, 1, 0}, {1, 3, 2}});
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0], (Box{{0, 2}, {1, 6}}));
  const std::vector<Box> odd = to_boxes(s, AtomBox{{0, 1, 1}, {1, 3, 2}});
  ASSERT_EQ(odd.size(), 2u);
  EXPECT_EQ(odd[0], (Box{{0, 3}, {1, 4}}));
  EXPECT_EQ(odd[1], (Box{{0, 5}, {1, 6}}));
  const auto pos = box_positions(s, AtomBox{{0, 1, 0}, {1, 3, 2}});
  EXPECT_EQ(pos, (std::vector<std::vector<int64_t>>{{0, 2}, {0, 4}, {0, 3}}));
}

// ------------------------------------- known mutants against brute force

// Checks verify() on a pair against brute force: the union of the wrong boxes
// is exactly the set of elements that differ in floats.
VerifyResult check_against_brute_force(const Graph& orig, const Graph& mut) {
  const VerifyResult r = verify(orig, mut);
  EXPECT_NE(r.verdict, Verdict::Different) << r.reason;
  const FloatDiff bf = brute_force_diff(orig, mut, 99);
  const auto mask = wrong_mask(r, bf.dims);
  for (size_t o = 0; o < bf.dims.size(); ++o) {
    std::vector<char> want(mask[o].size(), 0);
    for (int64_t i : bf.differing[o]) want[static_cast<size_t>(i)] = 1;
    int64_t extra = 0, missed = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      extra += mask[o][i] && !want[i];
      missed += !mask[o][i] && want[i];
      if (mask[o][i] != want[i] && extra + missed < 4) ADD_FAILURE() << "element " << i << " wrong box " << int(mask[o][i]);
    }
    EXPECT_EQ(extra, 0) << "output " << o << ": in wrong boxes but equal in floats";
    EXPECT_EQ(missed, 0) << "output " << o << ": differing in floats but in no wrong box";
  }
  return r;
}

TEST(PetVerifier, SeedFamiliesGetTheirVerdictAndExactBoxes) {
  std::mt19937_64 rng(2024);
  for (const std::string& f : seed_families())
    for (int rep = 0; rep < 3; ++rep) {
      SCOPED_TRACE(f);
      SeedPair p = seed_pair(f, rng);
      const VerifyResult r = check_against_brute_force(*p.original, *p.mutant);
      EXPECT_EQ(r.verdict, p.expected) << verdict_name(r.verdict) << " " << r.reason;
      if (p.expected == Verdict::Equivalent) {
        EXPECT_EQ(r.wrong_boxes(), 0);
      }
    }
}

TEST(PetVerifier, SideBySideBatchIsWrongExactlyInTheSeamColumns) {
  // Two images of [2, 3, 6, 5] convolved side by side as one [1, 3, 6, 10].
  const int64_t C = 3, M = 2, H = 6, W = 5;
  auto orig = one_op({{2, C, H, W}, {M, C, 3, 3}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("Conv", v, {{"pads", ints({1, 1, 1, 1})}})};
  });
  auto mut = one_op({{2, C, H, W}, {M, C, 3, 3}}, [&](GraphBuilder& b, const V& v) {
    Value* t = b.op("Transpose", {v[0]}, {{"perm", ints({1, 2, 0, 3})}});
    Value* c = b.op("Conv", {b.op("Reshape", {t, b.ints({1, C, H, 2 * W})}), v[1]}, {{"pads", ints({1, 1, 1, 1})}});
    return V{b.op("Transpose", {b.op("Reshape", {c, b.ints({M, H, 2, W})})}, {{"perm", ints({2, 0, 1, 3})}})};
  });
  const VerifyResult r = check_against_brute_force(*orig, *mut);
  ASSERT_EQ(r.verdict, Verdict::Partial);
  EXPECT_EQ(r.outputs[0].wrong_elements, 2 * M * H);  // one column per image
  for (const Box& b : r.outputs[0].wrong) {
    EXPECT_EQ(b.hi[3] - b.lo[3], 1);
    EXPECT_EQ(b.lo[3], b.lo[0] == 0 ? W - 1 : 0) << b.to_string();
  }
}

TEST(PetVerifier, DilatedConvVsCentreTapIsWrongInTheBorderBoxes) {
  // dilation 12 on 16x16: the off-centre taps read inside only where h < 4 or
  // h >= 12 (likewise w), so exactly the 8x8 centre is right.
  auto orig = one_op({{1, 2, 16, 16}, {3, 2, 3, 3}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("Conv", v, {{"dilations", ints({12, 12})}, {"pads", ints({12, 12, 12, 12})}})};
  });
  auto mut = one_op({{1, 2, 16, 16}, {3, 2, 3, 3}}, [](GraphBuilder& b, const V& v) {
    return V{b.op("Conv", {v[0], b.op("Slice", {v[1], b.ints({1, 1}), b.ints({2, 2}), b.ints({2, 3})})})};
  });
  const VerifyResult r = check_against_brute_force(*orig, *mut);
  ASSERT_EQ(r.verdict, Verdict::Partial);
  EXPECT_EQ(r.outputs[0].wrong_elements, 3 * (16 * 16 - 8 * 8));
  EXPECT_EQ(r.outputs[0].wrong.size(), 8u);  // the 3x3 grid of spatial boxes minus the centre
}

TEST(PetVerifier, SignatureMismatchIsDifferent) {
  auto a = one_op({{1, 4}}, [](GraphBuilder& b, const V& v) { return V{b.op("Identity", {v[0]})}; });
  auto c = one_op({{4, 1}}, [](GraphBuilder& b, const V& v) { return V{b.op("Identity", {v[0]})}; });
  const VerifyResult r = verify(*a, *c);
  EXPECT_EQ(r.verdict, Verdict::Different);
  EXPECT_NE(r.reason.find("input 0"), std::string::npos) << r.reason;
}

TEST(PetVerifier, MutationTestAcceptsNothingBruteForceRejects) {
  const MutationCounts c = run_mutation_test(1000, 11);
  std::printf("%s", format_counts(c).c_str());
  EXPECT_EQ(c.corrupted, 1000);
  EXPECT_EQ(c.accepted_with_difference, 0);
  EXPECT_GT(c.brute_differs, 800);
}

}  // namespace
}  // namespace tessera::pet

namespace tessera::pet {
namespace {

// The budget case of the brief: a 3x3 conv 256->256 on 56x56 and an R/T
// mutant of it. Prints what verify() takes; the bound is loose (a shared
// 2-core machine), the report quotes the printed times.
TEST(PetVerifier, TypicalCnnSubprogramVerifiesQuickly) {
  const int64_t C = 256, H = 56;
  auto time_verify = [](const Graph& a, const Graph& b, const char* what) {
    const auto t0 = std::chrono::steady_clock::now();
    const VerifyResult r = verify(a, b);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("verify %s: %s, %lld boxes, %lld positions, %.1f ms\n", what, verdict_name(r.verdict).c_str(),
                static_cast<long long>(r.outputs.empty() ? 0 : r.outputs[0].boxes), static_cast<long long>(r.positions), ms);
    return std::make_pair(r, ms);
  };
  auto conv = [&](AttrMap attrs) {
    return one_op({{1, C, H, H}, {C, C, 3, 3}}, [&](GraphBuilder& b, const V& v) { return V{b.op("Conv", v, attrs)}; });
  };
  // D2H: the dilated conv on the four phases (reshape + transpose to batch, conv, inverse).
  auto dilated = conv({{"dilations", ints({2, 2})}, {"pads", ints({2, 2, 2, 2})}});
  auto phases = one_op({{1, C, H, H}, {C, C, 3, 3}}, [&](GraphBuilder& b, const V& v) {
    Value* r = b.op("Reshape", {v[0], b.ints({1, C, H / 2, 2, H / 2, 2})});
    Value* t = b.op("Transpose", {r}, {{"perm", ints({3, 5, 0, 1, 2, 4})}});
    Value* c = b.op("Conv", {b.op("Reshape", {t, b.ints({4, C, H / 2, H / 2})}), v[1]}, {{"pads", ints({1, 1, 1, 1})}});
    Value* t2 = b.op("Transpose", {b.op("Reshape", {c, b.ints({2, 2, 1, C, H / 2, H / 2})})}, {{"perm", ints({2, 3, 4, 0, 5, 1})}});
    return V{b.op("Reshape", {t2, b.ints({1, C, H, H})})};
  });
  const auto [d2h, d2h_ms] = time_verify(*dilated, *phases, "D2H 256->256 56x56");
  EXPECT_EQ(d2h.verdict, Verdict::Equivalent);
  EXPECT_LT(d2h_ms, 3000);
  // A regular conv vs its transposed-spatial twin: Transpose H<->W, conv with
  // the kernel transposed, Transpose back.
  auto plain = conv({{"pads", ints({1, 1, 1, 1})}});
  auto twin = one_op({{1, C, H, H}, {C, C, 3, 3}}, [&](GraphBuilder& b, const V& v) {
    Value* xt = b.op("Transpose", {v[0]}, {{"perm", ints({0, 1, 3, 2})}});
    Value* wt = b.op("Transpose", {v[1]}, {{"perm", ints({0, 1, 3, 2})}});
    Value* y = b.op("Conv", {xt, wt}, {{"pads", ints({1, 1, 1, 1})}});
    return V{b.op("Transpose", {y}, {{"perm", ints({0, 1, 3, 2})}})};
  });
  const auto [rt, rt_ms] = time_verify(*plain, *twin, "conv vs transposed twin 256->256 56x56");
  EXPECT_EQ(rt.verdict, Verdict::Equivalent);
  EXPECT_LT(rt_ms, 3000);
}

}  // namespace
}  // namespace tessera::pet
