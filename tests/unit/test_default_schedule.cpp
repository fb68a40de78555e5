// Default schedules (register-tiled contractions, generic elementwise and
// reductions) give the same numbers as the unscheduled program: the JIT of
// the scheduled kernel on each ISA against the evaluator of the plain one,
// on shapes that leave tails in every tiled dimension.
#include <gtest/gtest.h>

#include <random>

#include "jit_test_util.h"
#include "loop/evaluate.h"
#include "loop/printer.h"
#include "schedule/default_schedule.h"
#include "schedule/gemm_schedule.h"
#include "schedule/lower.h"
#include "te/tensor_expr.h"

namespace tessera {
namespace {

using TE = te::Tensor;

// The matrix product `name` of a [.., M, K] by b [K, N], or by b [.., K, N]
// batched like a.
TE matmul_of(const TE& a, const TE& b, const std::string& name, std::vector<std::string> axes = {}) {
  const int64_t k = a.shape().back();
  Dims out = a.shape();
  out.back() = b.shape().back();
  const bool batched = b.rank() == a.rank();
  return te::compute(out, [&](const te::Indices& i) {
    auto r = te::reduce_axis(k, "r");
    std::vector<loop::Expr> ai(i.begin(), i.end() - 1), bi;
    ai.push_back(r.var);
    if (batched) bi.assign(i.begin(), i.end() - 2);
    bi.push_back(r.var);
    bi.push_back(i.back());
    return te::sum(a(ai) * b(bi), {r});
  }, name, te::OpClass::MatMul, std::move(axes));
}

class DefaultSchedule : public codegen::testing::JitIsaTest {
 protected:
  schedule::TargetInfo target() const {
    schedule::TargetInfo t(Target::for_isa(GetParam()));
    t.parallel_grain = 1024;  // small shapes still take the parallel path
    t.constant_inputs = constants_;
    if (small_l2_) t.planned.l2 = small_l2_, t.planned.l3 = 1024;
    return t;
  }
  std::set<std::string> constants_;  // placeholders the schedule may treat as weights
  int64_t small_l2_ = 0;             // an L2 (bytes) small enough that small products get blocked
  // Scheduled JIT vs unscheduled evaluator, within 1e-4 of each element (plus 1e-4).
  void check(const std::vector<TE>& ins, const TE& out, const char* expect_in_schedule) {
    schedule::Schedule s = schedule::default_schedule({out}, target());
    std::string text = schedule::to_text(s);
    EXPECT_NE(text.find(expect_in_schedule), std::string::npos) << text;
    loop::Kernel plain = schedule::lower("plain", ins, {out});
    loop::Kernel tuned = schedule::lower("tuned", ins, {out}, s);
    std::mt19937 rng(5);
    std::vector<Tensor> args, want;
    for (const TE& t : ins) args.push_back(codegen::testing::random_tensor(DType::F32, numel_of(t.shape()), rng).reshaped(t.shape()));
    args.emplace_back(DType::F32, out.shape());
    for (const Tensor& t : args) want.push_back(t.clone());
    loop::run_kernel(plain, want);
    codegen::JitOptions o = options();
    codegen::jit_compile(tuned, o)->run(args);
    const Tensor& got = args.back();
    for (int64_t i = 0; i < got.numel(); ++i)
      ASSERT_NEAR(got.data<float>()[i], want.back().data<float>()[i], 1e-4 * (1 + std::fabs(want.back().data<float>()[i])))
          << "element " << i << "\n" << text << loop::to_string(tuned);
  }
};

TEST_P(DefaultSchedule, MatmulTiles) {
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{37, 45, 29}, {5, 70, 3}, {64, 64, 16}}) {
    TE a = te::placeholder({m, k}, DType::F32, "a"), b = te::placeholder({k, n}, DType::F32, "b");
    TE c = te::compute({m, n}, [&](const te::Indices& i) {
      auto r = te::reduce_axis(k, "r");
      return te::sum(a(i[0], r.var) * b(r.var, i[1]), {r});
    }, "c", te::OpClass::MatMul, {"i", "j"});
    check({a, b}, c, "cache_write c");
  }
}

TEST_P(DefaultSchedule, BatchedMatmulTiles) {
  TE a = te::placeholder({3, 9, 11}, DType::F32, "a"), b = te::placeholder({3, 11, 40}, DType::F32, "b");
  TE c = matmul_of(a, b, "bmm", {"b", "i", "j"});
  // Rows inside each column panel: consecutive tiles reuse B's panel.
  check({a, b}, c, "compute_at bmm.local bmm b_j.o_i.o");
}

// Columns that are not whole tiles: the last column tile is shifted back to
// end at the edge (its columns computed twice, stored with the same values)
// instead of every tile's vectors masked, so the kernel holds no masked
// access; a B packed into column panels keeps the guard (a shifted tile
// would straddle two panels).
TEST_P(DefaultSchedule, PartialColumnTilesAreShiftedBack) {
  TE a = te::placeholder({3, 13, 11}, DType::F32, "a"), b = te::placeholder({3, 11, 45}, DType::F32, "b");
  TE c = matmul_of(a, b, "bmm", {"b", "i", "j"});
  check({a, b}, c, "split_shift bmm j ");
  std::string ir = loop::to_string(schedule::lower("k", {a, b}, {c}, schedule::default_schedule({c}, target())));
  EXPECT_EQ(ir.find(" if "), std::string::npos) << ir;
  constants_ = {"b"};
  TE a2 = te::placeholder({13, 11}, DType::F32, "a"), w = te::placeholder({11, 45}, DType::F32, "b");
  check({a2, w}, matmul_of(a2, w, "mm", {"i", "j"}), "split mm j ");
}

// A constant B [K, N] wider than a tile is packed into panels [N/nr, K, nr]
// (the reduction dim made one block, then the columns split), so each tile
// streams one contiguous panel instead of a row of B per step.
TEST_P(DefaultSchedule, ConstantMatmulOperandIsPackedIntoPanels) {
  constants_ = {"b"};
  TE a = te::placeholder({21, 19}, DType::F32, "a"), b = te::placeholder({19, 70}, DType::F32, "b");
  TE c = te::compute({21, 70}, [&](const te::Indices& i) {
    auto r = te::reduce_axis(19, "r");
    return te::sum(a(i[0], r.var) * b(r.var, i[1]), {r});
  }, "mm", te::OpClass::MatMul, {"i", "j"});
  bool avx512 = GetParam() == codegen::Isa::AVX512;
  check({a, b}, c, avx512 ? "layout b.mm 0 19\nlayout b.mm 1 32" : "layout b.mm 0 19\nlayout b.mm 1 16");
}

// Tiles of a product with a constant operand packed into column panels
// prefetch the next panel (a model's weights come from memory, and the
// panel's first tile would wait for them): each tile its share of the rows,
// one every few reduction steps; the numbers stay the plain program's.
TEST_P(DefaultSchedule, PackedPanelsArePrefetchedAhead) {
  constants_ = {"b"};
  for (auto [m, k] : {std::pair<int64_t, int64_t>{37, 40}, {19, 512}}) {
    TE a = te::placeholder({m, k}, DType::F32, "a"), b = te::placeholder({k, 70}, DType::F32, "b");
    TE c = matmul_of(a, b, "mm", {"i", "j"});
    // The rows' tiles are the tiles of one panel; k = 512 sums in blocks (r.i).
    const std::string step = k == 512 ? " r.i " : " r ";
    check({a, b}, c, ("prefetch mm.local b.mm" + step + "mm j.o_i.o ").c_str());
    std::string ir = loop::to_string(schedule::lower("k", {a, b}, {c}, schedule::default_schedule({c}, target())));
    EXPECT_NE(ir.find("prefetch(b.mm["), std::string::npos) << ir;
  }
  // An operand that is not constant is not packed, and not prefetched.
  constants_ = {};
  TE a = te::placeholder({37, 40}, DType::F32, "a"), b = te::placeholder({40, 70}, DType::F32, "b");
  EXPECT_EQ(schedule::to_text(schedule::default_schedule({matmul_of(a, b, "mm")}, target())).find("prefetch"),
            std::string::npos);
}

// Products too large for the caches are blocked: the reduction in blocks
// outermost (kc = 10 or 13 steps, from the 4 KiB L2 given), the register
// tiles accumulating across blocks; a reduction no block size divides is
// guarded. A's rows are packed per block when each task's rows are packed
// once (128 rows in 8 blocks), read in place when the columns are split
// among tasks (48 rows). Batched products block each batch's rows.
TEST_P(DefaultSchedule, LargeMatmulIsCacheBlocked) {
  small_l2_ = 4 * 1024;
  constants_ = {"b"};
  for (int64_t m : {48, 128})
    for (int64_t k : {40, 37}) {
      TE a = te::placeholder({m, k}, DType::F32, "a"), b = te::placeholder({k, 64}, DType::F32, "b");
      TE c = te::compute({m, 64}, [&](const te::Indices& i) {
        auto r = te::reduce_axis(k, "r");
        return te::sum(a(i[0], r.var) * b(r.var, i[1]), {r});
      }, "c", te::OpClass::MatMul, {"i", "j"});
      check({a, b}, c, "accumulate c r.i");
      const std::string text = schedule::to_text(schedule::default_schedule({c}, target()));
      EXPECT_EQ(text.find("cache_read a c\ncompute_at a.c c") != std::string::npos, m == 128) << text;
    }
  constants_ = {};
  TE a = te::placeholder({2, 24, 40}, DType::F32, "a"), b = te::placeholder({40, 64}, DType::F32, "b");
  TE c = te::compute({2, 24, 64}, [&](const te::Indices& i) {
    auto r = te::reduce_axis(40, "r");
    return te::sum(a(i[0], i[1], r.var) * b(r.var, i[2]), {r});
  }, "bmm", te::OpClass::MatMul, {"n", "i", "j"});
  check({a, b}, c, "reorder bmm r.o n");
  // Rows that are not whole tiles: the last tile guarded (not shifted back,
  // which would add rows twice); columns that are not keep the plain schedule.
  for (auto [m, n, plan] : {std::tuple<int64_t, int64_t, const char*>{37, 64, "split c i "}, {37, 70, "cache_write c"}}) {
    TE a2 = te::placeholder({m, 40}, DType::F32, "a"), b2 = te::placeholder({40, n}, DType::F32, "b");
    TE c2 = te::compute({m, n}, [&](const te::Indices& i) {
      auto r = te::reduce_axis(40, "r");
      return te::sum(a2(i[0], r.var) * b2(r.var, i[1]), {r});
    }, "c", te::OpClass::MatMul, {"i", "j"});
    check({a2, b2}, c2, plan);
  }
}

// A blocked product with an elementwise consumer (a bias and a residual
// added, as after a transformer's second MLP product): the tiles accumulate
// in place across blocks of the reduction and the consumer runs after them,
// a pass of its own; with its columns split among tasks, A is read in place
// rather than packed once per column block. Odd rows (the last tile
// guarded), K = 96 in whole blocks (6 of 16 steps with AVX-512, 3 of 32 with
// AVX2, from the 16 KiB L2 given), and a reduction no block size divides
// (101, prime).
TEST_P(DefaultSchedule, BlockedMatmulFinishesItsEpilogueAfter) {
  small_l2_ = 16 * 1024;
  constants_ = {"b", "bias"};
  const int64_t n = GetParam() == codegen::Isa::AVX512 ? 64 : 32;  // two panels of two vectors
  for (auto [m, k] : {std::pair<int64_t, int64_t>{37, 96}, {45, 101}}) {
    TE a = te::placeholder({m, k}, DType::F32, "a"), b = te::placeholder({k, n}, DType::F32, "b");
    TE bias = te::placeholder({n}, DType::F32, "bias"), res = te::placeholder({m, n}, DType::F32, "res");
    TE c = matmul_of(a, b, "mm", {"i", "j"});
    TE out = te::compute({m, n}, [&](const te::Indices& i) { return c(i[0], i[1]) + bias(i[1]) + res(i[0], i[1]); },
                         "out", te::OpClass::Elementwise);
    check({a, b, bias, res}, out, "accumulate mm r.i");
    const std::string text = schedule::to_text(schedule::default_schedule({out}, target()));
    EXPECT_EQ(text.find("cache_read a mm"), std::string::npos) << text;
    EXPECT_NE(text.find("parallel out "), std::string::npos) << text;
  }
}

TEST_P(DefaultSchedule, PaddedConvTiles) {
  int64_t C = 3, K = 6, H = 7, W = 20;
  TE x = te::placeholder({1, C, H, W}, DType::F32, "x"), w = te::placeholder({K, C, 3, 3}, DType::F32, "w");
  TE p = te::compute({1, C, H + 2, W + 2}, [&](const te::Indices& i) {
    return te::if_then_else(i[2] >= 1 && i[2] <= H && i[3] >= 1 && i[3] <= W, x(i[0], i[1], i[2] - 1, i[3] - 1),
                            te::constant(DType::F32, 0));
  }, "pad", "pad", {"n", "c", "h", "w"});
  TE y = te::compute({1, K, H, W}, [&](const te::Indices& i) {
    auto rc = te::reduce_axis(C, "rc"), ry = te::reduce_axis(3, "ry"), rx = te::reduce_axis(3, "rx");
    return te::sum(p(i[0], rc.var, i[2] + ry.var, i[3] + rx.var) * w(i[1], rc.var, ry.var, rx.var), {rc, ry, rx});
  }, "conv", te::StageTag(te::OpClass::Conv, "conv2d"), {"n", "k", "h", "w"});
  check({x, w}, y, "compute_root pad");
}

// Output channels in whole vectors: tiles of output pixels along the width by
// channels, the accumulator laid out channels-innermost; strided, narrow and
// with a width tail the tile rows do not divide.
TEST_P(DefaultSchedule, ChannelVectorizedConvTiles) {
  for (auto [K, W, stride] : {std::tuple<int64_t, int64_t, int64_t>{48, 7, 2}, {64, 31, 1}, {32, 3, 2}, {70, 5, 1}}) {
    int64_t C = 5, H = 4, IH = (H - 1) * stride + 3, IW = (W - 1) * stride + 3;
    TE x = te::placeholder({1, C, IH, IW}, DType::F32, "x"), w = te::placeholder({K, C, 3, 3}, DType::F32, "w");
    TE y = te::compute({1, K, H, W}, [&](const te::Indices& i) {
      auto rc = te::reduce_axis(C, "rc"), ry = te::reduce_axis(3, "ry"), rx = te::reduce_axis(3, "rx");
      return te::sum(x(i[0], rc.var, i[2] * stride + ry.var, i[3] * stride + rx.var) * w(i[1], rc.var, ry.var, rx.var),
                     {rc, ry, rx});
    }, "conv", te::StageTag(te::OpClass::Conv, "conv2d"), {"n", "k", "h", "w"});
    check({x, w}, y, "layout conv.local 1");
  }
}

// A blocked convolution ([N, Kb, H, W, b]) tiles output pixels along the
// width by the block's lanes, its write-back (here with a clamp epilogue)
// unrolled so the accumulators stay in registers; its padded input is
// materialized in rows of whole vectors, the leaky ReLU before it computed
// inside that copy (its guards test pixels, alike in every lane).
TEST_P(DefaultSchedule, BlockedConvTilesPixelsByLanes) {
  const int64_t b = GetParam() == codegen::Isa::AVX512 ? 16 : 8, Cb = 2, Kb = 1, H = 2, W = 17;
  TE x = te::placeholder({1, Cb, H, W, b}, DType::F32, "x");
  TE w = te::placeholder({Kb, Cb, 3, 3, b, b}, DType::F32, "w");
  TE relu = te::compute({1, Cb, H, W, b}, [&](const te::Indices& i) {  // leaky: a select, not a cheap prologue
    loop::Expr v = x(i[0], i[1], i[2], i[3], i[4]);
    return loop::select(v < 0.0f, v * 0.125f, v);
  }, "relu", te::OpClass::Elementwise, {"n", "c", "h", "w", "l"});
  TE p = te::compute({1, Cb, H + 2, W + 2, b}, [&](const te::Indices& i) {
    return te::if_then_else(i[2] >= 1 && i[2] <= H && i[3] >= 1 && i[3] <= W,
                            relu(i[0], i[1], i[2] - 1, i[3] - 1, i[4]), te::constant(DType::F32, 0));
  }, "pad", "pad", {"n", "c", "h", "w", "lane"});
  TE y = te::compute({1, Kb, H, W, b}, [&](const te::Indices& i) {
    auto rb = te::reduce_axis(Cb, "rb"), ri = te::reduce_axis(b, "ri"), ry = te::reduce_axis(3, "ry"),
         rx = te::reduce_axis(3, "rx");
    return te::sum(w(i[1], rb.var, ry.var, rx.var, ri.var, i[4]) * p(i[0], rb.var, i[2] + ry.var, i[3] + rx.var, ri.var),
                   {rb, ri, ry, rx});
  }, "conv", te::OpClass::ConvBlocked, {"n", "kb", "h", "w", "kc"});
  TE out = te::compute({1, Kb, H, W, b}, [&](const te::Indices& i) {
    return loop::min(y(i[0], i[1], i[2], i[3], i[4]), te::constant(DType::F32, 6));
  }, "clamp", te::OpClass::Elementwise, {"n", "kb", "h", "w", "kc"});
  std::string split = "split clamp kc " + std::to_string(b);
  check({x, w}, out, split.c_str());
  std::string text = schedule::to_text(schedule::default_schedule({out}, target()));
  for (const char* s : {"unroll clamp w.i", "vectorize clamp kc.i", "compute_root pad", "vectorize pad lane.i"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  EXPECT_EQ(text.find("compute_root relu"), std::string::npos) << text;
}

// A blocked depthwise convolution reads its padded input in place (a masked
// vector load per tap) instead of copying the image, a clamp before it
// recomputed per tap; a prologue with a call (a sigmoid) is copied once.
TEST_P(DefaultSchedule, DepthwiseBlockedConvReadsPaddingInPlace) {
  const int64_t b = GetParam() == codegen::Isa::AVX512 ? 16 : 8, Cb = 2, H = 6, W = 19;
  TE x = te::placeholder({1, Cb, H, W, b}, DType::F32, "x");
  TE w = te::placeholder({Cb, 3, 3, b}, DType::F32, "w");
  for (bool call : {false, true}) {
    SCOPED_TRACE(call ? "sigmoid" : "clamp");
    TE pre = te::compute({1, Cb, H, W, b}, [&](const te::Indices& i) -> loop::Expr {
      loop::Expr v = x(i[0], i[1], i[2], i[3], i[4]);
      if (call) return loop::call("sigmoid", {v});
      return loop::select(v < 0.0f, te::constant(DType::F32, 0), loop::select(v > 6.0f, te::constant(DType::F32, 6), v));
    }, "pre", te::OpClass::Elementwise, {"n", "c", "h", "w", "l"});
    TE p = te::compute({1, Cb, H + 2, W + 2, b}, [&](const te::Indices& i) {
      return te::if_then_else(i[2] >= 1 && i[2] <= H && i[3] >= 1 && i[3] <= W,
                              pre(i[0], i[1], i[2] - 1, i[3] - 1, i[4]), te::constant(DType::F32, 0));
    }, "pad", "pad", {"n", "c", "h", "w", "lane"});
    TE y = te::compute({1, Cb, H, W, b}, [&](const te::Indices& i) {
      auto ry = te::reduce_axis(3, "ry"), rx = te::reduce_axis(3, "rx");
      return te::sum(w(i[1], ry.var, rx.var, i[4]) * p(i[0], i[1], i[2] + ry.var, i[3] + rx.var, i[4]), {ry, rx});
    }, "dw", te::OpClass::DepthwiseConvBlocked, {"n", "kb", "h", "w", "kc"});
    check({x, w}, y, "vectorize dw kc.i");
    std::string text = schedule::to_text(schedule::default_schedule({y}, target()));
    EXPECT_EQ(text.find("compute_root pad") != std::string::npos, call) << text;
  }
}

// A reduction over a blocked image's plane (a global average pool): the
// output's lanes are vectors, the reduction loops around them.
TEST_P(DefaultSchedule, PlaneReductionKeepsLanesAsVectors) {
  const int64_t b = GetParam() == codegen::Isa::AVX512 ? 16 : 8;
  TE x = te::placeholder({1, 3, 7, 9, 2 * b}, DType::F32, "x");
  TE y = te::compute({1, 3, 1, 1, 2 * b}, [&](const te::Indices& i) {
    auto rh = te::reduce_axis(7, "rh"), rw = te::reduce_axis(9, "rw");
    return te::sum(x(i[0], i[1], rh.var, rw.var, i[4]), {rh, rw});
  }, "gap", te::OpClass::Reduce, {"n", "c", "h", "w", "l"});
  check({x}, y, "reorder gap n_c_h_w l.o rh rw l.i");
  EXPECT_NE(schedule::to_text(schedule::default_schedule({y}, target())).find("vectorize gap l.i"), std::string::npos);
}

// Window reductions (pools) are tiled like contractions: a register tile
// of output pixels, the window loops outside it.
TEST_P(DefaultSchedule, PoolTiles) {
  int64_t C = 3, H = 5, W = 23;
  TE x = te::placeholder({1, C, 2 * H + 1, 2 * W + 1}, DType::F32, "x");
  TE y = te::compute({1, C, H, W}, [&](const te::Indices& i) {
    auto ry = te::reduce_axis(3, "ry"), rx = te::reduce_axis(3, "rx");
    return te::max_of(x(i[0], i[1], i[2] * 2 + ry.var, i[3] * 2 + rx.var), {ry, rx});
  }, "pool", te::OpClass::Pool, {"n", "c", "h", "w"});
  check({x}, y, "cache_write pool");
}

// An average pool over the blocked layout ([N, Cb, H, W, b], a window of 1
// along the lanes) sums in F64 as the reference does: still tiled, the
// F64 sums in registers and the division fused into the tile's write-back.
TEST_P(DefaultSchedule, F64AveragePoolTiles) {
  TE x = te::placeholder({1, 2, 9, 11, 16}, DType::F32, "x");
  TE sum = te::compute({1, 2, 7, 9, 16}, [&](const te::Indices& i) {
    auto ry = te::reduce_axis(3, "ry"), rx = te::reduce_axis(3, "rx");
    return te::sum(loop::cast({DType::F64, 1}, x(i[0], i[1], i[2] + ry.var, i[3] + rx.var, i[4])), {ry, rx});
  }, "sum", te::OpClass::Pool, {"n", "c", "h", "w", "l"});
  TE avg = te::compute({1, 2, 7, 9, 16}, [&](const te::Indices& i) {
    return loop::cast({DType::F32, 1}, sum(i[0], i[1], i[2], i[3], i[4]) / loop::make_const({DType::F64, 1}, 9.0));
  }, "avg", te::OpClass::Elementwise, {"n", "c", "h", "w", "l"});
  check({x}, avg, "compute_at sum avg");
}

TEST_P(DefaultSchedule, ElementwiseAndRowReduction) {
  TE x = te::placeholder({13, 37}, DType::F32, "x");
  TE e = te::compute({13, 37}, [&](const te::Indices& i) { return loop::call("exp", {x(i[0], i[1])}) * 0.5f; }, "e");
  check({x}, e, "vectorize e");
  // Reading another shape (a row broadcast) with rows that are not whole
  // vectors: rows split into vectors (tail masked), not fused across rows.
  TE b = te::placeholder({37}, DType::F32, "b");
  TE y = te::compute({13, 37}, [&](const te::Indices& i) { return x(i[0], i[1]) + b(i[1]); }, "y", te::OpClass::Elementwise,
                     {"i", "j"});
  check({x, b}, y, "vectorize y j.i");
  // Equal shapes read in place stay fused, even with short rows.
  TE z = te::compute({13, 37}, [&](const te::Indices& i) { return x(i[0], i[1]) * 2.0f; }, "z", te::OpClass::Elementwise,
                     {"i", "j"});
  check({x}, z, "fuse z i j");
  TE s = te::compute({13}, [&](const te::Indices& i) {
    auto r = te::reduce_axis(37, "r");
    return te::sum(x(i[0], r.var), {r});
  }, "s", te::OpClass::Reduce);
  check({x}, s, "rfactor s r");  // a row reduction: per-lane partials, vectorized
  TE m = te::compute({37}, [&](const te::Indices& i) {  // down the columns: not a row reduction
    auto r = te::reduce_axis(13, "r");
    return te::max_of(x(r.var, i[0]), {r});
  }, "m", te::OpClass::Reduce);
  EXPECT_EQ(schedule::to_text(schedule::default_schedule({m}, target())).find("rfactor"), std::string::npos);
  check({x}, m, "");
}

// Rows of a large product come in equal blocks: a count of them that is
// raised to eight tasks and to a multiple of four (so two or four threads
// share them evenly) rather than split by columns, which would pack A's
// block once per column block. A product whose rows fit one block keeps it
// and splits its columns instead.
TEST(GemmBlocks, RowsInEqualBalancedBlocks) {
  auto blocks = [](Dims a, int64_t n) {
    TE c = matmul_of(te::placeholder(a, DType::F32, "a"), te::placeholder({a.back(), n}, DType::F32, "b"), "c");
    schedule::GemmTile tile{a.size() - 2, a.size() - 1, 8, 32};
    auto b = schedule::gemm_blocks(c.stage(), tile, kReferenceCaches);
    EXPECT_TRUE(b.has_value());
    return b.value_or(schedule::GemmBlocks{});
  };
  // 192 row tiles, kc 768: an L2 of A is 42 row tiles, 5 blocks; made 8 of 24.
  schedule::GemmBlocks b = blocks({1536, 1536}, 1536);
  EXPECT_EQ(b.kc, 768);
  EXPECT_EQ(b.mb, 24);
  EXPECT_EQ(b.nb, 48);  // all panels: no column split
  b = blocks({2560, 2560}, 2560);  // 320 row tiles, kc 640: 51 per L2, 7 blocks; 8 of 40
  EXPECT_EQ(b.kc, 640);
  EXPECT_EQ(b.mb, 40);
  EXPECT_EQ(b.nb, 80);
  b = blocks({2400, 1024}, 1024);  // 300 row tiles, 32 per L2: 10 blocks; 12 of 25
  EXPECT_EQ(b.mb, 25);
  b = blocks({4096, 4096}, 4096);  // 16 blocks of 32 already
  EXPECT_EQ(b.mb, 32);
  b = blocks({4, 1536, 1536}, 1536);  // 4 batches: 5 blocks each, made 8 (32 tasks)
  EXPECT_EQ(b.mb, 24);
  b = blocks({64, 8192}, 1024);  // 8 row tiles in one block: the 32 panels split in 8
  EXPECT_EQ(b.mb, 8);
  EXPECT_EQ(b.nb, 4);
}

// With the reference caches (1 MiB of L2), a product whose A and a panel of
// B outgrow L2 is blocked, however little of the last level A takes: ViT's
// second MLP product (197 x 3072 by 3072 x 768; BERT's, 128 rows), whose
// plain schedule streamed all of A from the last level for each of its 24
// panels. Its first (K = 768: A and a panel in 703 KiB) keeps the plain
// schedule. A's rows fit one block, the 24 panels split in 8 column blocks:
// A is not packed (it would be, once per block, 8 times).
TEST(GemmBlocks, LongReductionOverFewRowsIsBlocked) {
  auto product = [](Dims a, int64_t n) {
    return matmul_of(te::placeholder(a, DType::F32, "a"), te::placeholder({a.back(), n}, DType::F32, "b"), "c");
  };
  const schedule::GemmTile tile{1, 2, 8, 32};
  for (int64_t rows : {197, 128}) {
    TE fc2 = product({1, rows, 3072}, 768);
    auto b = schedule::gemm_blocks(fc2.stage(), tile, kReferenceCaches);
    ASSERT_TRUE(b.has_value()) << rows;
    EXPECT_EQ(b->kc, 1024);
    EXPECT_EQ(b->nb, 3);
    EXPECT_FALSE(schedule::gemm_packs_a(fc2.stage(), tile, *b));
    EXPECT_FALSE(schedule::gemm_blocks(product({1, rows, 768}, 3072).stage(), tile, kReferenceCaches).has_value());
  }
  TE square = product({1, 1536, 1536}, 1536);
  EXPECT_TRUE(schedule::gemm_packs_a(square.stage(), tile, *schedule::gemm_blocks(square.stage(), tile, kReferenceCaches)));
}

INSTANTIATE_TEST_SUITE_P(Jit, DefaultSchedule, ::testing::Values(codegen::Isa::AVX512, codegen::Isa::AVX2),
                         codegen::testing::isa_param_name);

}  // namespace
}  // namespace tessera
