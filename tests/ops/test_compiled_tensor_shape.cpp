// Shape, layout, slice, concat and pad ops compiled and checked against the
// reference on seeded random shapes and attributes.
#include <numeric>

#include "ops/compiled_test_util.h"

namespace tessera::testing {
namespace {

Attribute I(int64_t v) { return Attribute::of_int(v); }
Attribute Is(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }
Attribute S(std::string v) { return Attribute::of_string(std::move(v)); }
Tensor ints(std::vector<int64_t> v) { return i64({static_cast<int64_t>(v.size())}, v); }

const DType kDtypes[] = {DType::F32, DType::I64, DType::F16, DType::I8, DType::Bool, DType::F64, DType::BF16};

TEST(CompiledTensor, Reshape) {
  std::mt19937 rng(1);
  struct C {
    Dims in;
    std::vector<int64_t> shape;
    int64_t allowzero;
  };
  std::vector<C> cases = {{{2, 3, 4}, {4, 6}, 0},        {{2, 3, 4}, {-1, 2}, 0},   {{2, 3, 4}, {0, -1}, 0},
                          {{6, 4}, {2, 3, 2, 2}, 0},     {{1, 5, 1}, {5}, 0},       {{5}, {1, 5, 1, 1}, 0},
                          {{4, 6}, {3, 8}, 0},           {{2, 0, 3}, {0, 6}, 1},    {{2, 3, 2}, {2, 0, 2}, 0},
                          {{3, 4, 5}, {5, 4, 3}, 0},     {{12}, {2, 2, 3}, 0},      {{2, 2, 3}, {12}, 0},
                          {{1}, {}, 0}};
  int k = 0;
  for (const auto& cs : cases) {
    DType dt = kDtypes[k++ % 7];
    expect_compiled_matches({.op = "Reshape", .inputs = {random_tensor(dt, cs.in, rng), ints(cs.shape)},
                             .attrs = {{"allowzero", I(cs.allowzero)}}, .opset = 14, .constant_inputs = {1}});
  }
  // Opset 1..4: the shape attribute.
  expect_compiled_matches({.op = "Reshape", .inputs = {random_tensor(DType::F32, {4, 6}, rng)},
                           .attrs = {{"shape", Is({2, -1, 3})}}, .opset = 1});
}

TEST(CompiledTensor, FlattenSqueezeUnsqueezeIdentity) {
  std::mt19937 rng(2);
  for (int64_t axis : {0, 1, 2, 3, -1, -3}) {
    Dims d = random_dims(3, rng, 5);
    expect_compiled_matches({.op = "Flatten", .inputs = {random_tensor(kDtypes[rng() % 7], d, rng)},
                             .attrs = {{"axis", I(axis)}}});
  }
  expect_compiled_matches({.op = "Squeeze", .inputs = {random_tensor(DType::F32, {1, 3, 1, 4}, rng)}});
  expect_compiled_matches({.op = "Squeeze", .inputs = {random_tensor(DType::I32, {1, 3, 1, 4}, rng)},
                           .attrs = {{"axes", Is({-2})}}, .opset = 11});
  expect_compiled_matches({.op = "Squeeze", .inputs = {random_tensor(DType::F16, {1, 3, 1, 4}, rng), ints({0, 2})},
                           .opset = 13, .constant_inputs = {1}});
  expect_compiled_matches({.op = "Unsqueeze", .inputs = {random_tensor(DType::F32, {3, 4}, rng)},
                           .attrs = {{"axes", Is({0, 3})}}, .opset = 11});
  expect_compiled_matches({.op = "Unsqueeze", .inputs = {random_tensor(DType::U8, {3, 4}, rng), ints({-1, 1})},
                           .opset = 13, .constant_inputs = {1}});
  expect_compiled_matches({.op = "Unsqueeze", .inputs = {random_tensor(DType::F64, {}, rng), ints({0})},
                           .opset = 13, .constant_inputs = {1}});
  expect_compiled_matches({.op = "Identity", .inputs = {random_tensor(DType::F32, {3, 5}, rng)}});
  expect_compiled_matches({.op = "Identity", .inputs = {random_tensor(DType::Bool, {7}, rng)}});
}

TEST(CompiledTensor, ShapeAndSize) {
  std::mt19937 rng(3);
  Tensor x = random_tensor(DType::F32, {2, 3, 4, 5}, rng);
  expect_compiled_matches({.op = "Shape", .inputs = {x}});
  for (auto [s, e] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {-3, -1}, {2, 100}, {-100, 1}, {3, 1}})
    expect_compiled_matches({.op = "Shape", .inputs = {x}, .attrs = {{"start", I(s)}, {"end", I(e)}}, .opset = 15});
  expect_compiled_matches({.op = "Shape", .inputs = {random_tensor(DType::I64, {}, rng)}});
  expect_compiled_matches({.op = "Size", .inputs = {x}});
  expect_compiled_matches({.op = "Size", .inputs = {random_tensor(DType::I8, {0, 3}, rng)}});
}

TEST(CompiledTensor, Transpose) {
  std::mt19937 rng(4);
  for (int rep = 0; rep < 8; ++rep) {
    int rank = 1 + rep % 4;
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Tensor x = random_tensor(kDtypes[rep % 7], random_dims(rank, rng, 6), rng);
    if (rep % 3 == 0)
      expect_compiled_matches({.op = "Transpose", .inputs = {x}});
    else
      expect_compiled_matches({.op = "Transpose", .inputs = {x}, .attrs = {{"perm", Is(perm)}}});
  }
}

TEST(CompiledTensor, DepthSpace) {
  std::mt19937 rng(5);
  for (int64_t bs : {1, 2, 3})
    for (const char* mode : {"DCR", "CRD"}) {
      Dims d = {2, 2 * bs * bs, 3, 2};
      expect_compiled_matches({.op = "DepthToSpace", .inputs = {random_tensor(DType::F32, d, rng)},
                               .attrs = {{"blocksize", I(bs)}, {"mode", S(mode)}}, .opset = 13});
    }
  expect_compiled_matches({.op = "DepthToSpace", .inputs = {random_tensor(DType::I16, {1, 8, 2, 3}, rng)},
                           .attrs = {{"blocksize", I(2)}}});
  for (int64_t bs : {1, 2, 3})
    expect_compiled_matches({.op = "SpaceToDepth", .inputs = {random_tensor(DType::F16, {2, 3, 2 * bs, 3 * bs}, rng)},
                             .attrs = {{"blocksize", I(bs)}}});
}

TEST(CompiledTensor, TriluAndReverseSequence) {
  std::mt19937 rng(6);
  for (int64_t k : {0, 1, -1, 3, -4, 10})
    for (int64_t upper : {0, 1}) {
      Dims d = random_dims(2 + static_cast<int>(rng() % 2), rng, 6);
      expect_compiled_matches({.op = "Trilu", .inputs = {random_tensor(kDtypes[rng() % 7], d, rng), i64({}, {k})},
                               .attrs = {{"upper", I(upper)}}, .opset = 14});
    }
  expect_compiled_matches({.op = "Trilu", .inputs = {random_tensor(DType::F32, {4, 5}, rng)}, .opset = 14});
  for (int rep = 0; rep < 4; ++rep) {
    int64_t ta = rep % 2, ba = 1 - ta;
    Dims d = random_dims(2 + rep % 3, rng, 5);
    std::vector<int64_t> lens;
    for (int64_t b = 0; b < d[static_cast<size_t>(ba)]; ++b)
      lens.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(d[static_cast<size_t>(ta)] + 1)));
    expect_compiled_matches({.op = "ReverseSequence", .inputs = {random_tensor(kDtypes[rep], d, rng), ints(lens)},
                             .attrs = {{"time_axis", I(ta)}, {"batch_axis", I(ba)}}});
  }
}

TEST(CompiledTensor, Concat) {
  std::mt19937 rng(7);
  for (int rep = 0; rep < 8; ++rep) {
    int rank = 1 + rep % 3;
    Dims base = random_dims(rank, rng, 4);
    int64_t axis = static_cast<int64_t>(rng() % static_cast<uint64_t>(rank));
    DType dt = kDtypes[rep % 7];
    std::vector<Tensor> ins;
    int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      Dims d = base;
      d[static_cast<size_t>(axis)] = static_cast<int64_t>(rng() % 4);  // may be 0
      if (i == 0) d[static_cast<size_t>(axis)] += 1;
      ins.push_back(random_tensor(dt, d, rng));
    }
    expect_compiled_matches({.op = "Concat", .inputs = ins, .attrs = {{"axis", I(rep % 2 ? axis - rank : axis)}}});
  }
}

TEST(CompiledTensor, Split) {
  std::mt19937 rng(8);
  Tensor x = random_tensor(DType::F32, {6, 4}, rng);
  expect_compiled_matches({.op = "Split", .inputs = {x}, .num_outputs = 3, .opset = 11});
  expect_compiled_matches({.op = "Split", .inputs = {x}, .attrs = {{"axis", I(-1)}, {"split", Is({1, 3})}},
                           .num_outputs = 2, .opset = 11});
  expect_compiled_matches({.op = "Split", .inputs = {random_tensor(DType::I32, {5, 3}, rng), ints({2, 0, 3})},
                           .num_outputs = 3, .opset = 13, .constant_inputs = {1}});
  expect_compiled_matches({.op = "Split", .inputs = {random_tensor(DType::F16, {2, 7}, rng)},
                           .attrs = {{"axis", I(1)}, {"num_outputs", I(3)}}, .num_outputs = 3, .opset = 18});
  expect_compiled_matches({.op = "Split", .inputs = {random_tensor(DType::Bool, {4, 2, 2}, rng)},
                           .attrs = {{"axis", I(0)}}, .num_outputs = 2, .opset = 18});
}

TEST(CompiledTensor, Slice) {
  std::mt19937 rng(9);
  // Opset 1..9: attributes.
  expect_compiled_matches({.op = "Slice", .inputs = {random_tensor(DType::F32, {5, 6}, rng)},
                           .attrs = {{"starts", Is({1, -4})}, {"ends", Is({100, -1})}}, .opset = 9});
  expect_compiled_matches({.op = "Slice", .inputs = {random_tensor(DType::F32, {5, 6}, rng)},
                           .attrs = {{"starts", Is({2})}, {"ends", Is({4})}, {"axes", Is({-1})}}, .opset = 1});
  std::uniform_int_distribution<int64_t> pos(-8, 8);
  for (int rep = 0; rep < 14; ++rep) {
    int rank = 1 + rep % 3;
    Dims d = random_dims(rank, rng, 7);
    std::vector<int64_t> starts, ends, axes, steps;
    for (int k = 0; k < rank; ++k) {
      if (rng() % 3 == 0 && rep % 2) continue;
      axes.push_back(rep % 4 == 1 ? k - rank : k);
      starts.push_back(pos(rng));
      ends.push_back(rng() % 5 == 0 ? (rng() % 2 ? INT64_MAX : INT64_MIN) : pos(rng));
      int64_t st = 1 + static_cast<int64_t>(rng() % 3);
      steps.push_back(rng() % 2 ? -st : st);
    }
    if (axes.empty()) continue;
    DType dt = kDtypes[rep % 7];
    if (rep % 5 == 0)  // axes and steps omitted
      expect_compiled_matches({.op = "Slice", .inputs = {random_tensor(dt, d, rng), ints(starts), ints(ends)},
                               .opset = 13, .constant_inputs = {1, 2}});
    else
      expect_compiled_matches({.op = "Slice",
                               .inputs = {random_tensor(dt, d, rng), ints(starts), ints(ends), ints(axes), ints(steps)},
                               .opset = 13, .constant_inputs = {1, 2, 3, 4}});
  }
  // int32 starts/ends.
  expect_compiled_matches({.op = "Slice",
                           .inputs = {random_tensor(DType::F32, {6}, rng), Tensor::from<int32_t>({1}, {5}),
                                      Tensor::from<int32_t>({1}, {0}), Tensor(), Tensor::from<int32_t>({1}, {-2})},
                           .opset = 13, .constant_inputs = {1, 2, 4}});
}

TEST(CompiledTensor, Pad) {
  std::mt19937 rng(10);
  std::uniform_int_distribution<int64_t> pad(-1, 3);
  for (const char* mode : {"constant", "reflect", "edge", "wrap"})
    for (int rep = 0; rep < 4; ++rep) {
      int rank = 1 + rep % 3;
      Dims d = random_dims(rank, rng, 5);
      for (auto& v : d) v += 1;
      std::vector<int64_t> pads;
      bool constant = std::string(mode) == "constant";
      for (int k = 0; k < 2 * rank; ++k) pads.push_back(constant ? pad(rng) : std::max<int64_t>(0, pad(rng)));
      DType dt = kDtypes[(rep + 1) % 7];
      OpCase c{.op = "Pad", .inputs = {random_tensor(dt, d, rng), ints(pads)}, .attrs = {{"mode", S(mode)}},
               .opset = 19, .constant_inputs = {1}};
      if (constant && rep % 2) c.inputs.push_back(random_tensor(dt, {}, rng));
      expect_compiled_matches(c);
    }
  // Opset 18 axes input.
  expect_compiled_matches({.op = "Pad",
                           .inputs = {random_tensor(DType::F32, {3, 4, 2}, rng), ints({2, 1, 0, 3}),
                                      Tensor::scalar<float>(1.5f), ints({-1, 0})},
                           .opset = 18, .constant_inputs = {1, 3}});
  expect_compiled_matches({.op = "Pad", .inputs = {random_tensor(DType::F32, {3, 4}, rng), ints({0, 2, 1, 3}),
                                                   Tensor(), ints({1, -2})},
                           .attrs = {{"mode", S("reflect")}}, .opset = 18, .constant_inputs = {1, 3}});
  // Opset 2 / 1 attributes.
  expect_compiled_matches({.op = "Pad", .inputs = {random_tensor(DType::F32, {3, 4}, rng)},
                           .attrs = {{"pads", Is({1, 2, 0, 1})}, {"value", Attribute::of_float(-2.5f)}}, .opset = 2});
  expect_compiled_matches({.op = "Pad", .inputs = {random_tensor(DType::I32, {3, 4}, rng)},
                           .attrs = {{"paddings", Is({0, 1, 2, 0})}, {"value", Attribute::of_float(7.f)}}, .opset = 1});
  expect_compiled_matches({.op = "Pad", .inputs = {random_tensor(DType::F16, {5}, rng)},
                           .attrs = {{"pads", Is({4, 6})}, {"mode", S("reflect")}}, .opset = 2});
}

TEST(CompiledTensor, CenterCropPadExpandTile) {
  std::mt19937 rng(11);
  for (int rep = 0; rep < 5; ++rep) {
    Dims d = random_dims(3, rng, 6);
    std::vector<int64_t> shape;
    for (int k = 0; k < 3; ++k) shape.push_back(1 + static_cast<int64_t>(rng() % 7));
    expect_compiled_matches({.op = "CenterCropPad", .inputs = {random_tensor(kDtypes[rep], d, rng), ints(shape)},
                             .opset = 18, .constant_inputs = {1}});
  }
  expect_compiled_matches({.op = "CenterCropPad", .inputs = {random_tensor(DType::F32, {4, 5, 3}, rng), ints({2, 8})},
                           .attrs = {{"axes", Is({-1, 0})}}, .opset = 18, .constant_inputs = {1}});
  for (int rep = 0; rep < 5; ++rep) {
    Dims d = random_dims(1 + rep % 3, rng, 4);
    for (auto& v : d)
      if (rng() % 2) v = 1;
    std::vector<int64_t> shape;
    if (rep % 2) shape.push_back(3);
    for (int64_t v : d) shape.push_back(v == 1 ? 1 + static_cast<int64_t>(rng() % 4) : (rng() % 2 ? v : 1));
    expect_compiled_matches({.op = "Expand", .inputs = {random_tensor(kDtypes[rep + 1], d, rng), ints(shape)},
                             .constant_inputs = {1}});
  }
  for (int rep = 0; rep < 4; ++rep) {
    Dims d = random_dims(1 + rep % 3, rng, 4);
    std::vector<int64_t> reps;
    for (size_t k = 0; k < d.size(); ++k) reps.push_back(static_cast<int64_t>(rng() % 4));
    expect_compiled_matches({.op = "Tile", .inputs = {random_tensor(kDtypes[rep + 2], d, rng), ints(reps)},
                             .constant_inputs = {1}});
  }
  expect_compiled_matches({.op = "Tile", .inputs = {random_tensor(DType::F32, {2, 3}, rng), Tensor::scalar<float>(3.f),
                                                    Tensor::scalar<float>(1.f)},
                           .opset = 1, .constant_inputs = {1, 2}});
}

}  // namespace
}  // namespace tessera::testing
