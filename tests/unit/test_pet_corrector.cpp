// PET's corrector (pet/corrector.h, pet/region.h) on hand-made partially
// equivalent mutants: two images side by side along W (and H) convolved as
// one, a dilation-12 conv replaced by its centre tap, a strided conv wrong at
// its last row, a matmul wrong in some rows. The wrong boxes come from brute
// force here (the reference interpreter on random inputs, every element
// compared, then the cells of the grid of known split points that hold a
// difference); the corrected graph must equal the original on every element,
// run by the interpreter and compiled for AVX-512 and AVX2. Also: region
// back-propagation through every op it knows (mutant = the original times 0,
// random boxes), a missing box leaves its difference, no boxes leaves the
// mutant, and errors name the node or output.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "interp/interpreter.h"
#include "ops/registry.h"
#include "pet/corrector.h"
#include "pet/region.h"
#include "runtime/executor.h"
#include "support/error.h"
#include "pet_test_util.h"
#include "random_tensor.h"

namespace tessera::pet {
namespace {

using tessera::testing::random_f32;

using tessera::testing::pet::concat;
using tessera::testing::pet::conv_attrs;
using tessera::testing::pet::ints;
using tessera::testing::pet::op;
using tessera::testing::pet::pad;
using tessera::testing::pet::slice;

struct Pair {
  std::unique_ptr<Graph> original, mutant;
  std::vector<std::vector<int64_t>> cuts;  // split points of output 0, per dim (the grid of boxes)
};

std::unique_ptr<Graph> new_graph() {
  auto g = std::make_unique<Graph>();
  g->opset = 17;
  return g;
}

// Both programs read (x, w, b): x [2, 4, H, W], a 3x3 conv with pads 1.
// The mutant puts the two images side by side along `axis` (3: W, 2: H),
// convolves once and splits back: the seam rows/columns are wrong.
Pair side_by_side(int64_t axis) {
  const int64_t H = 6, W = 5, ext = axis == 3 ? W : H;
  Pair p;
  for (int m = 0; m < 2; ++m) {
    auto g = new_graph();
    Value* x = g->add_input("x", {DType::F32, {2, 4, H, W}, true});
    Value* w = g->add_input("w", {DType::F32, {8, 4, 3, 3}, true});
    Value* b = g->add_input("b", {DType::F32, {8}, true});
    if (m == 0) {
      g->add_output(op(*g, "Conv", {x, w, b}, conv_attrs({1, 1, 1, 1})));
      p.original = std::move(g);
    } else {
      Value* xs = concat(*g, {slice(*g, x, {0}, {1}, {0}), slice(*g, x, {1}, {2}, {0})}, axis);
      Value* y = op(*g, "Conv", {xs, w, b}, conv_attrs({1, 1, 1, 1}));
      g->add_output(concat(*g, {slice(*g, y, {0}, {ext}, {axis}), slice(*g, y, {ext}, {2 * ext}, {axis})}, 0));
      p.mutant = std::move(g);
    }
  }
  p.cuts = {{0, 1, 2}, {0, 8}, {0, H}, {0, W}};
  p.cuts[static_cast<size_t>(axis)] = {0, 1, ext - 1, ext};
  return p;
}

// A dilation-12 3x3 conv (pads 12) on a 16x16 map against the 1x1 conv of
// its centre tap (the weight sliced): equal where every other tap falls in
// the padding, the centre [4, 12) x [4, 12); wrong in the 8 border boxes.
Pair dilated_centre_tap() {
  Pair p;
  for (int m = 0; m < 2; ++m) {
    auto g = new_graph();
    Value* x = g->add_input("x", {DType::F32, {1, 4, 16, 16}, true});
    Value* w = g->add_input("w", {DType::F32, {8, 4, 3, 3}, true});
    Value* b = g->add_input("b", {DType::F32, {8}, true});
    if (m == 0) {
      g->add_output(op(*g, "Conv", {x, w, b}, conv_attrs({12, 12, 12, 12}, {1, 1}, {12, 12})));
      p.original = std::move(g);
    } else {
      Value* centre = slice(*g, w, {1, 1}, {2, 2}, {2, 3});
      g->add_output(op(*g, "Conv", {x, centre, b}, conv_attrs({0, 0, 0, 0})));
      p.mutant = std::move(g);
    }
  }
  p.cuts = {{0, 1}, {0, 8}, {0, 4, 12, 16}, {0, 4, 12, 16}};
  return p;
}

// A stride-2 3x3 conv (pads 1) on 9x9; the mutant drops the bottom pad
// (one output row fewer) and pads the output with a zero row: the last row
// is wrong.
Pair strided_last_row() {
  Pair p;
  for (int m = 0; m < 2; ++m) {
    auto g = new_graph();
    Value* x = g->add_input("x", {DType::F32, {1, 3, 9, 9}, true});
    Value* w = g->add_input("w", {DType::F32, {6, 3, 3, 3}, true});
    Value* b = g->add_input("b", {DType::F32, {6}, true});
    if (m == 0) {
      g->add_output(op(*g, "Conv", {x, w, b}, conv_attrs({1, 1, 1, 1}, {2, 2})));
      p.original = std::move(g);
    } else {
      Value* y = op(*g, "Conv", {x, w, b}, conv_attrs({1, 1, 0, 1}, {2, 2}));
      g->add_output(pad(*g, y, {0, 0, 0, 0, 0, 0, 1, 0}));
      p.mutant = std::move(g);
    }
  }
  p.cuts = {{0, 1}, {0, 6}, {0, 4, 5}, {0, 5}};
  return p;
}

// Transpose(A x B + bias) with A [8, 16]; the mutant's product is wrong in
// rows 2 and 6 (zeroed by a row mask), so the transposed output is wrong in
// columns 2 and 6.
Pair matmul_rows() {
  Pair p;
  for (int m = 0; m < 2; ++m) {
    auto g = new_graph();
    Value* a = g->add_input("a", {DType::F32, {8, 16}, true});
    Value* b = g->add_input("b", {DType::F32, {16, 12}, true});
    Value* bias = g->add_input("bias", {DType::F32, {12}, true});
    Value* y = op(*g, "MatMul", {a, b});
    if (m == 1) {
      std::vector<float> mask(8, 1.0f);
      mask[2] = mask[6] = 0;
      y = op(*g, "Mul", {y, g->add_constant("mask", Tensor::from<float>({8, 1}, mask))});
    }
    y = op(*g, "Add", {y, bias});
    AttrMap t;
    t["perm"] = Attribute::of_ints({1, 0});
    g->add_output(op(*g, "Transpose", {y}, t));
    (m == 0 ? p.original : p.mutant) = std::move(g);
  }
  p.cuts = {{0, 12}, {0, 2, 3, 6, 7, 8}};
  return p;
}

// --- brute force -----------------------------------------------------------

std::vector<Tensor> random_inputs(const Graph& g, uint32_t seed) {
  std::vector<Tensor> ins;
  for (const Value* v : g.inputs()) ins.push_back(random_f32(v->type.dims, seed++));
  return ins;
}

// Elements differing beyond rounding (relative to the output's scale).
bool differs(const Tensor& a, const Tensor& b, int64_t k, double tol) {
  double scale = 1;
  for (int64_t i = 0; i < b.numel(); ++i) scale = std::max(scale, std::abs(b.get_double(i)));
  return std::abs(a.get_double(k) - b.get_double(k)) > tol * scale;
}

std::vector<int64_t> unravel(int64_t k, const Dims& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = k % dims[d];
    k /= dims[d];
  }
  return idx;
}

// The cells of the grid that hold an element where the mutant differs from
// the original on some of three random inputs.
std::vector<Box> brute_force_boxes(const Pair& p) {
  const Dims& dims = p.original->outputs()[0]->type.dims;
  std::vector<std::vector<bool>> wrong;
  std::vector<Box> cells = {Box{{}, {}}};
  for (size_t d = 0; d < dims.size(); ++d) {
    std::vector<Box> next;
    for (const Box& c : cells)
      for (size_t i = 0; i + 1 < p.cuts[d].size(); ++i) {
        Box b = c;
        b.lo.push_back(p.cuts[d][i]);
        b.hi.push_back(p.cuts[d][i + 1]);
        next.push_back(b);
      }
    cells = next;
  }
  std::vector<bool> bad(cells.size(), false);
  for (uint32_t t = 0; t < 3; ++t) {
    const std::vector<Tensor> ins = random_inputs(*p.original, 100 + 10 * t);
    const Tensor want = interpret(*p.original, ins)[0], got = interpret(*p.mutant, ins)[0];
    for (int64_t k = 0; k < want.numel(); ++k)
      if (differs(got, want, k, 1e-5))
        for (size_t c = 0; c < cells.size(); ++c) bad[c] = bad[c] || cells[c].contains(unravel(k, dims));
  }
  std::vector<Box> out;
  for (size_t c = 0; c < cells.size(); ++c)
    if (bad[c]) out.push_back(cells[c]);
  return out;
}

void expect_equal(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].dims(), want[i].dims());
    for (int64_t k = 0; k < got[i].numel(); ++k)
      ASSERT_NEAR(got[i].get_double(k), want[i].get_double(k), tol * (1 + std::abs(want[i].get_double(k))))
          << "output " << i << " element " << k;
  }
}

// The corrected graph against the original: interpreted, and compiled for
// each ISA the host has.
void expect_corrected(const Graph& original, std::unique_ptr<Graph> fixed) {
  const std::vector<Tensor> ins = random_inputs(original, 7);
  const std::vector<Tensor> want = interpret(original, ins);
  {
    SCOPED_TRACE("reference interpreter");
    expect_equal(interpret(*fixed, ins), want);
  }
  for (Isa isa : {Isa::AVX512, Isa::AVX2}) {
    if (!codegen::host_supports(isa)) continue;
    SCOPED_TRACE(std::string("compiled for ") + std::string(isa_name(isa)));
    runtime::ExecutorOptions o;
    o.isa = isa;
    o.fusion_profile = false;
    runtime::Executor ex(fixed->clone(), o);
    expect_equal(ex.run(ins), want);
  }
}

int products(const Graph& g) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == "Conv" || node->op_type == "MatMul";
  return n;
}

class PetCorrectorMutants : public ::testing::TestWithParam<int> {};

Pair make_pair(int which) {
  Pair p = which == 0 ? side_by_side(3) : which == 1 ? side_by_side(2) : which == 2 ? dilated_centre_tap()
         : which == 3 ? strided_last_row() : matmul_rows();
  infer_graph(*p.original);
  infer_graph(*p.mutant);
  return p;
}

TEST_P(PetCorrectorMutants, CorrectedEqualsTheOriginal) {
  const Pair p = make_pair(GetParam());
  const std::vector<Box> boxes = brute_force_boxes(p);
  ASSERT_FALSE(boxes.empty());
  const size_t expect_boxes[] = {2, 2, 8, 1, 2};
  EXPECT_EQ(boxes.size(), expect_boxes[GetParam()]);
  for (Merge merge : {Merge::Where, Merge::SliceConcat})
    for (bool batch : {true, false}) {
      SCOPED_TRACE(std::string(merge == Merge::Where ? "Where" : "Slice+Concat") + (batch ? ", batched" : ""));
      CorrectReport rep;
      auto fixed = correct(*p.original, *p.mutant, {boxes}, {merge, batch}, &rep);
      EXPECT_EQ(rep.boxes, static_cast<int>(boxes.size()));
      EXPECT_EQ(rep.elements, covered_volume(boxes));
      EXPECT_GT(rep.flops, 0);
      // Conv/MatMul nodes added: one per group of equal shapes when batched
      // (the dilated conv's 4 corners, 2 top/bottom and 2 left/right edges).
      const int want_products[] = {1, 1, 3, 1, 1};
      EXPECT_EQ(products(*fixed) - products(*p.mutant), batch ? want_products[GetParam()] : rep.boxes)
          << rep.to_string();
      if (!batch) {
        EXPECT_EQ(rep.batched_boxes, 0);
      }
      expect_corrected(*p.original, std::move(fixed));
    }
}

// Dropping one wrong box leaves a difference inside it (the corrector does
// not fix what it was not told); no boxes leaves the mutant unchanged.
TEST_P(PetCorrectorMutants, FixesOnlyTheBoxesGiven) {
  const Pair p = make_pair(GetParam());
  const std::vector<Box> boxes = brute_force_boxes(p);
  const std::vector<Tensor> ins = random_inputs(*p.original, 9);
  const Tensor want = interpret(*p.original, ins)[0];
  std::vector<Box> fewer(boxes.begin() + 1, boxes.end());
  const Tensor got = interpret(*correct(*p.original, *p.mutant, {fewer}), ins)[0];
  bool seen = false;
  for (int64_t k = 0; k < want.numel(); ++k) {
    const bool in_dropped = boxes[0].contains(unravel(k, want.dims()));
    if (differs(got, want, k, 1e-5)) {
      EXPECT_TRUE(in_dropped) << "element " << k << " differs outside the dropped box";
      seen = true;
    }
  }
  EXPECT_TRUE(seen) << "the dropped box " << boxes[0].to_string() << " shows no difference";
  auto same = correct(*p.original, *p.mutant, {{}});
  EXPECT_EQ(same->nodes().size(), p.mutant->nodes().size());
  EXPECT_EQ(structural_hash(*same), structural_hash(*p.mutant));
}

std::string mutant_name(const ::testing::TestParamInfo<int>& i) {
  static const char* const names[] = {"TwoImagesAlongW", "TwoImagesAlongH", "DilatedCentreTap", "StridedLastRow",
                                      "MatMulRows"};
  return names[i.param];
}
INSTANTIATE_TEST_SUITE_P(Pet, PetCorrectorMutants, ::testing::Range(0, 5), mutant_name);

}  // namespace
}  // namespace tessera::pet

namespace tessera::pet {
namespace {

// Region back-propagation through every op the corrector knows: the
// "mutant" is the original times 0 (wrong everywhere), so the corrected
// graph must hold the original's values exactly in the boxes given and 0
// elsewhere.
std::unique_ptr<Graph> many_ops(bool zero) {
  auto g = new_graph();
  Value* x = g->add_input("x", {DType::F32, {2, 4, 10, 10}, true});
  Value* y = g->add_input("y", {DType::F32, {1, 8, 6, 6}, true});
  Value* w = g->add_input("w", {DType::F32, {6, 2, 3, 3}, true});
  Value* b = g->add_input("b", {DType::F32, {6}, true});
  Value* gb = g->add_input("gb", {DType::F32, {36, 5}, true});
  Value* gc = g->add_input("gc", {DType::F32, {5}, true});
  Value* scale = g->add_input("scale", {DType::F32, {8, 1, 1}, true});
  Value* wt = g->add_input("wt", {DType::F32, {8, 2, 3, 3}, true});
  std::vector<Value*> outs;
  // Pad, grouped strided conv with asymmetric pads, pools.
  Value* c = op(*g, "Conv", {pad(*g, x, {0, 0, 1, 1, 0, 0, 2, 2}), w, b},
                conv_attrs({1, 0, 0, 1}, {2, 2}, {1, 1}, 2));
  AttrMap avg;
  avg["kernel_shape"] = Attribute::of_ints({3, 3});
  avg["pads"] = Attribute::of_ints({1, 1, 1, 1});
  Value* a = op(*g, "AveragePool", {c}, avg);
  AttrMap mp;
  mp["kernel_shape"] = Attribute::of_ints({2, 2});
  mp["strides"] = Attribute::of_ints({2, 2});
  outs.push_back(op(*g, "MaxPool", {a}, mp));
  // Split, Transpose, Reshape, Slice with negative and non-unit steps.
  AttrMap sp;
  sp["axis"] = Attribute::of_int(1);
  Node* split = g->add_node("Split", {y, ints(*g, {3, 5})}, {"s0", "s1"}, sp);
  AttrMap perm;
  perm["perm"] = Attribute::of_ints({0, 2, 3, 1});
  outs.push_back(op(*g, "Reshape", {op(*g, "Transpose", {split->outputs[0]}, perm), ints(*g, {1, 36, 3})}));
  outs.push_back(op(*g, "Slice", {split->outputs[1], ints(*g, {5, 0}), ints(*g, {-7, 6}), ints(*g, {2, 3}),
                                  ints(*g, {-1, 2})}));
  AttrMap blk;
  blk["blocksize"] = Attribute::of_int(2);
  outs.push_back(op(*g, "DepthToSpace", {y}, blk));
  outs.push_back(op(*g, "SpaceToDepth", {y}, blk));
  outs.push_back(op(*g, "GlobalAveragePool", {y}));
  AttrMap keep;
  keep["keepdims"] = Attribute::of_int(0);
  outs.push_back(op(*g, "ReduceSum", {y, ints(*g, {1})}, keep));
  outs.push_back(op(*g, "Gemm", {op(*g, "Reshape", {y, ints(*g, {8, 36})}), gb, gc}));
  outs.push_back(op(*g, "Sub", {op(*g, "Mul", {y, scale}), y}));
  AttrMap ct;
  ct["strides"] = Attribute::of_ints({2, 2});
  outs.push_back(op(*g, "ConvTranspose", {y, wt}, ct));
  outs.push_back(concat(*g, {split->outputs[1], y}, 1));
  for (Value* o : outs)
    g->add_output(zero ? op(*g, "Mul", {o, g->add_constant(g->unique_name("zero"), Tensor::scalar<float>(0))}) : o);
  infer_graph(*g);
  return g;
}

// Random disjoint boxes: cells of a random grid, each taken with probability 0.4.
std::vector<Box> random_boxes(const Dims& dims, std::mt19937& rng) {
  std::vector<Box> cells = {Box{{}, {}}};
  for (int64_t n : dims) {
    std::vector<int64_t> cuts = {0, n};
    for (int k = 0; k < 2; ++k) cuts.push_back(std::uniform_int_distribution<int64_t>(0, n)(rng));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<Box> next;
    for (const Box& c : cells)
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        Box b = c;
        b.lo.push_back(cuts[i]);
        b.hi.push_back(cuts[i + 1]);
        next.push_back(b);
      }
    cells = next;
  }
  std::vector<Box> out;
  for (const Box& c : cells)
    if (std::bernoulli_distribution(0.4)(rng)) out.push_back(c);
  return out;
}

TEST(PetCorrector, RestrictsEveryOpItKnows) {
  auto original = many_ops(false), mutant = many_ops(true);
  const std::vector<Tensor> ins = random_inputs(*original, 3);
  const std::vector<Tensor> want = interpret(*original, ins);
  std::mt19937 rng(5);
  for (int round = 0; round < 6; ++round)
    for (Merge merge : {Merge::Where, Merge::SliceConcat}) {
      std::vector<std::vector<Box>> boxes;
      for (const Value* o : original->outputs()) boxes.push_back(random_boxes(o->type.dims, rng));
      auto fixed = correct(*original, *mutant, boxes, {merge, round % 2 == 0});
      const std::vector<Tensor> got = interpret(*fixed, ins);
      for (size_t k = 0; k < got.size(); ++k)
        for (int64_t e = 0; e < got[k].numel(); ++e) {
          bool in = false;
          for (const Box& b : boxes[k]) in = in || b.contains(unravel(e, got[k].dims()));
          const double expect = in ? want[k].get_double(e) : 0.0;
          ASSERT_NEAR(got[k].get_double(e), expect, 1e-5 * (1 + std::abs(expect)))
              << "round " << round << ", output " << k << " element " << e;
        }
    }
}

// Overlapping boxes (a wrong box given twice, and a box over two others):
// the Slice+Concat merge needs disjoint boxes, so that output is merged by
// Where instead; the result is still the original.
TEST(PetCorrector, OverlappingBoxes) {
  const Pair p = make_pair(2);
  std::vector<Box> boxes = brute_force_boxes(p);
  boxes.push_back(boxes[0]);
  boxes.push_back(Box{{0, 0, 0, 0}, {1, 8, 16, 6}});
  expect_corrected(*p.original, correct(*p.original, *p.mutant, {boxes}));
}

TEST(PetCorrector, BoxThroughReshape) {
  // [4, 6] -> [2, 2, 6]: rows 1..3 of the input are a box; [24] -> [4, 6]
  // with a box of two half rows is not one.
  EXPECT_EQ(box_through_reshape({4, 6}, {2, 2, 6}, Box{{0, 1, 0}, {1, 2, 6}}), (Box{{1, 0}, {2, 6}}));
  EXPECT_EQ(box_through_reshape({4, 6}, {24}, Box{{6}, {18}}), (Box{{1, 0}, {3, 6}}));
  EXPECT_FALSE(box_through_reshape({24}, {4, 6}, Box{{0, 0}, {2, 3}}).has_value());
  EXPECT_EQ(box_through_reshape({24}, {4, 6}, Box{{1, 0}, {3, 6}}), (Box{{6}, {18}}));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PetCorrector, ErrorsNameTheNodeOrOutput) {
  Pair p = make_pair(3);
  // An op it cannot restrict: a Relu after the conv of the original.
  auto relu = p.original->clone();
  Value* r = relu->add_node("Relu", {relu->outputs()[0]}, {"r"}, {}, "the_relu")->outputs[0];
  relu->mutable_outputs()[0] = r;
  infer_graph(*relu);
  const Box last{{0, 0, 4, 0}, {1, 6, 5, 5}};
  std::string e = error_of([&] { correct(*relu, *p.mutant, {{last}}); });
  EXPECT_NE(e.find("the_relu"), std::string::npos) << e;
  EXPECT_NE(e.find("Relu"), std::string::npos) << e;
  // Boxes outside the output or of the wrong rank name the output.
  const std::string out = p.original->outputs()[0]->name;
  e = error_of([&] { correct(*p.original, *p.mutant, {{Box{{0, 0, 4, 0}, {1, 6, 6, 5}}}}); });
  EXPECT_NE(e.find("output 0 ('" + out + "')"), std::string::npos) << e;
  e = error_of([&] { correct(*p.original, *p.mutant, {{Box{{0, 0}, {1, 6}}}}); });
  EXPECT_NE(e.find("output 0 ('" + out + "')"), std::string::npos) << e;
  // Mismatched signatures.
  Pair q = make_pair(0);
  e = error_of([&] { correct(*p.original, *q.mutant, {{}}); });
  EXPECT_NE(e.find("input 0"), std::string::npos) << e;
}

}  // namespace
}  // namespace tessera::pet
