// Every schedule step: the loop IR before and after it, and the same numbers
// from the evaluator (which bounds-checks every access) with and without it;
// the text form round-trips.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>


#include "jit_test_util.h"
#include "loop/evaluate.h"
#include "loop/printer.h"
#include "schedule/lower.h"
#include "schedule/schedule.h"
#include "support/error.h"
#include "te/tensor_expr.h"
#include "random_tensor.h"
#include "unit/error_message.h"

namespace tessera {
namespace {

using loop::Expr;
using schedule::Schedule;
using te::Indices;
using TE = te::Tensor;

using tessera::testing::random_f32;

// A 2-D convolution-like program: a padded input stage (inlined by default),
// a weight, and a reduction; shapes chosen so that splits leave tails.
struct Program {
  int64_t h = 9, w = 10, k = 3;
  TE x = te::placeholder({h, w}, DType::F32, "x");
  TE f = te::placeholder({k, k}, DType::F32, "f");
  TE pad = te::compute({h + 2, w + 2}, [&](const Indices& i) {
    return te::if_then_else(i[0] >= 1 && i[0] <= h && i[1] >= 1 && i[1] <= w, x(i[0] - 1, i[1] - 1),
                            te::constant(DType::F32, 0));
  }, "pad", "pad", {"y", "x"});
  TE out = te::compute({h, w}, [&](const Indices& i) {
    auto ry = te::reduce_axis(k, "ry"), rx = te::reduce_axis(k, "rx");
    return te::sum(pad(i[0] + ry.var, i[1] + rx.var) * f(ry.var, rx.var), {ry, rx});
  }, "conv", te::StageTag(te::OpClass::Conv, "conv2d"), {"y", "x"});
  Tensor xv = random_f32({h, w}, 11), fv = random_f32({k, k}, 12);

  loop::Kernel lower(const Schedule& s = {}) const { return schedule::lower("conv", {x, f}, {out}, s); }
  Tensor run(const loop::Kernel& kern) const {
    std::vector<Tensor> args{xv, fv, Tensor(DType::F32, {h, w})};
    loop::run_kernel(kern, args);
    return args[2];
  }
};

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.numel(), b.numel());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-5) << "element " << i;
}

// Lowers with the schedule, checks the numbers against the unscheduled
// program and returns the printed kernel.
std::string check_step(const Schedule& s) {
  Program p;
  loop::Kernel before = p.lower();
  loop::Kernel after = p.lower(s);
  expect_same(p.run(after), p.run(before));
  return loop::to_string(after);
}

bool has(const std::string& ir, const std::string& what) { return ir.find(what) != std::string::npos; }

TEST(ScheduleSteps, Split) {
  std::string ir = check_step(Schedule().split("conv", "x", 4));
  EXPECT_TRUE(has(ir, "for (conv.x.o, 0, 3)") && has(ir, "for (conv.x.i, 0, 4)")) << ir;
  EXPECT_TRUE(has(ir, "if (conv.x.o*4 + conv.x.i < 10)")) << "tail guard expected:\n" << ir;
  std::string exact = check_step(Schedule().split("conv", "x", 5));
  EXPECT_FALSE(has(exact, "if (conv.x.o*5")) << "no guard when the factor divides:\n" << exact;
}

// A shifted split has no tail guard: the last tile starts at 10 - 4 = 6 and
// recomputes two columns of the one before; a tile wider than the loop and
// a factor that divides it fall back to the plain split.
TEST(ScheduleSteps, SplitShift) {
  std::string ir = check_step(Schedule().split_shift("conv", "x", 4));
  EXPECT_TRUE(has(ir, "for (conv.x.o, 0, 3)") && has(ir, "min(conv.x.o*4, 6)")) << ir;
  EXPECT_FALSE(has(ir, "if (")) << "no tail guard expected:\n" << ir;
  std::string wide = check_step(Schedule().split_shift("conv", "x", 16));
  EXPECT_TRUE(has(wide, "< 10)")) << wide;
  std::string exact = check_step(Schedule().split_shift("conv", "x", 5));
  EXPECT_FALSE(has(exact, "min(")) << exact;
  // With the accumulator computed per tile (the register-tiling pattern).
  check_step(Schedule().cache_write("conv").split_shift("conv", "x", 4).compute_at("conv.local", "conv", "x.o"));
}

TEST(ScheduleSteps, Fuse) {
  std::string ir = check_step(Schedule().fuse("conv", "y", "x"));
  EXPECT_TRUE(has(ir, "for (conv.y_x, 0, 90)")) << ir;
  EXPECT_THROW(check_step(Schedule().fuse("conv", "x", "y")), Error);   // not outer-inner
  EXPECT_THROW(check_step(Schedule().fuse("conv", "x", "ry")), Error);  // spatial with reduction
}

TEST(ScheduleSteps, Reorder) {
  std::string ir = check_step(Schedule().reorder("conv", {"ry", "rx", "y", "x"}));
  // The init gets its own spatial loops before the reduction loops.
  EXPECT_LT(ir.find("for (conv.ry"), ir.find("for (conv.y, 0, 9) {\n      for (conv.x, 0, 10) {\n        conv[conv.y*10 + conv.x] = conv")) << ir;
  EXPECT_THROW(check_step(Schedule().reorder("conv", {"y", "y"})), Error);
}

TEST(ScheduleSteps, VectorizeUnrollParallelAnnotate) {
  Program p;
  Schedule s = Schedule().split("conv", "x", 5).vectorize("conv", "x.i").unroll("conv", "rx").parallel("conv", "y");
  schedule::LowerOptions keep;
  keep.vectorize = keep.unroll = false;
  loop::Kernel k = schedule::lower("conv", {p.x, p.f}, {p.out}, s, keep);
  std::string ir = loop::to_string(k);
  EXPECT_TRUE(has(ir, "for (conv.y, 0, 9) parallel") && has(ir, "for (conv.x.i, 0, 5) vectorized") &&
              has(ir, "for (conv.rx, 0, 3) unrolled")) << ir;
  expect_same(p.run(k), p.run(p.lower()));
  EXPECT_THROW(check_step(Schedule().vectorize("conv", "nope")), Error);
  EXPECT_THROW(check_step(Schedule().parallel("conv", "ry")), Error);  // reduction loop
}

TEST(ScheduleSteps, ComputeRootMaterializesPadding) {
  std::string ir = check_step(Schedule().compute_root("pad"));
  EXPECT_TRUE(has(ir, "allocate pad: f32[132]")) << ir;
}

TEST(ScheduleSteps, ComputeAtInfersTheRegion) {
  // One output row needs rows y .. y+2 of the padded input: 3 x 12 elements.
  std::string ir = check_step(Schedule().compute_at("pad", "conv", "y"));
  EXPECT_TRUE(has(ir, "allocate pad: f32[36]")) << ir;
  // With a 4-wide column tile inside the row, the region is 3 x 6.
  std::string tiled = check_step(Schedule().split("conv", "x", 4).compute_at("pad", "conv", "x.o"));
  EXPECT_TRUE(has(tiled, "allocate pad: f32[18]")) << tiled;
  EXPECT_THROW(check_step(Schedule().compute_at("pad", "conv", "nope")), Error);
}

TEST(ScheduleSteps, ComputeInline) {
  std::string ir = check_step(Schedule().compute_root("pad").compute_inline("pad"));
  EXPECT_FALSE(has(ir, "allocate pad")) << ir;
}

TEST(ScheduleSteps, CacheWriteAccumulatesLocally) {
  std::string ir = check_step(
      Schedule().cache_write("conv").split("conv", "x", 5).compute_at("conv.local", "conv", "x.o"));
  EXPECT_TRUE(has(ir, "allocate conv.local: f32[5]")) << ir;
}

TEST(ScheduleSteps, CacheReadAndLayoutPack) {
  // The filter is copied into a packed layout [3][2][2] (dim 1 split by 2, padded).
  std::string ir = check_step(Schedule().cache_read("f", "conv").layout("f.conv", 1, 2));
  EXPECT_TRUE(has(ir, "allocate f.conv: f32[12]")) << ir;
}

TEST(ScheduleSteps, PadRoundsUpTheDomain) {
  std::string ir = check_step(Schedule().compute_root("pad").pad("pad", 1, 8));
  EXPECT_TRUE(has(ir, "allocate pad: f32[176]")) << ir;  // 11 x 16
  EXPECT_THROW(check_step(Schedule().pad("conv", 1, 8)), Error);  // kernel output keeps its layout
}

TEST(ScheduleSteps, RFactorSplitsAReductionIntoLanes) {
  // rx (extent 3) into 2 lanes: "conv.rf" holds per-lane partials over rx.o
  // (2 steps, the position 3 masked off), which conv then adds up.
  std::string ir = check_step(Schedule().rfactor("conv", "rx", 2));
  EXPECT_TRUE(has(ir, "allocate conv.rf: f32[180]")) << ir;  // 9 x 10 x 2
  EXPECT_TRUE(has(ir, "for (conv.rf.rx.o, 0, 2)")) << ir;
  EXPECT_TRUE(has(ir, "for (conv.rx.lanes, 0, 2)")) << ir;
  // Placed inside the consumer's loop with the lanes vectorized: a 2-wide
  // accumulator per output element, the reduction loops outside the lanes.
  std::string at = check_step(Schedule()
                                  .rfactor("conv", "rx", 2)
                                  .compute_at("conv.rf", "conv", "x")
                                  .reorder("conv.rf", {"ry", "rx.o", "rx.lane"})
                                  .vectorize("conv.rf", "rx.lane"));
  EXPECT_TRUE(has(at, "allocate conv.rf: f32[2]")) << at;
  EXPECT_TRUE(has(at, "ramp(0, 1, 2)")) << at;
  EXPECT_THROW(check_step(Schedule().rfactor("conv", "rz", 2)), Error);   // no such axis
  EXPECT_THROW(check_step(Schedule().rfactor("pad", "rx", 2)), Error);    // not a reduction
  // A reduction with its own init (added once, by the combining stage) and a condition.
  TE x = te::placeholder({4, 11}, DType::F32, "x");
  TE y = te::compute({4}, [&](const Indices& i) {
    auto r = te::reduce_axis(11, "r");
    return loop::reduce(loop::ReduceOp::Sum, x(i[0], r.var), {r}, loop::ne(r.var % 3, 1),
                        loop::cast({DType::F32, 1}, i[0]) * 10.0f);
  }, "y", te::OpClass::Reduce, {"i"});
  Tensor xv = random_f32({4, 11}, 5);
  auto run = [&](const Schedule& sc) {
    std::vector<Tensor> args{xv, Tensor(DType::F32, {4})};
    loop::run_kernel(schedule::lower("y", {x}, {y}, sc), args);
    return args[1];
  };
  expect_same(run(Schedule().rfactor("y", "r", 4).compute_at("y.rf", "y", "i").reorder("y.rf", {"r.o", "r.lane"})
                      .vectorize("y.rf", "r.lane")),
              run(Schedule()));
}

TEST(ScheduleSteps, AccumulateHoldsElementsAcrossReductionBlocks) {
  // ry split in blocks of 2 (the last one guarded), the blocks outermost;
  // inside, tiles of 4 columns (the last partial: its updates run on
  // clamped columns, its read and write-back are guarded) accumulate rx and
  // ry.i in conv.acc, read from conv after the first block.
  Schedule blocked = Schedule()
                         .split("conv", "ry", 2)
                         .split("conv", "x", 4)
                         .reorder("conv", {"ry.o", "y", "x.o", "ry.i", "rx", "x.i"})
                         .accumulate("conv", "ry.i");
  std::string ir = check_step(blocked);
  EXPECT_TRUE(has(ir, "allocate conv.acc: f32[4]")) << ir;
  EXPECT_TRUE(has(ir, "conv.ry.o == 0")) << ir;
  EXPECT_TRUE(has(ir, "min(")) << ir;
  // The init (0) is the sum's identity: each block starts from it and joins
  // the partial result at the write-back; the elements are prefetched when
  // the block starts.
  EXPECT_TRUE(has(ir, "prefetch(conv[")) << ir;
  EXPECT_TRUE(has(ir, "conv.acc[") && has(ir, "+ conv.acc[")) << ir;
  std::string vec = check_step(Schedule(blocked).vectorize("conv", "x.i"));
  EXPECT_TRUE(has(vec, "prefetch(conv[")) << vec;  // lanes clamped: one line each
  // Without reduction loops outside, each element starts from the init.
  std::string tile = check_step(Schedule().split("conv", "x", 4).reorder("conv", {"y", "x.o", "ry", "rx", "x.i"})
                                    .accumulate("conv", "ry"));
  EXPECT_TRUE(has(tile, "allocate conv.acc: f32[4]") && !has(tile, "conv.ry == 0")) << tile;
  // Every spatial loop inside: the accumulator covers them all (9 x 10).
  std::string whole = check_step(Schedule().split("conv", "ry", 2).reorder("conv", {"ry.o", "ry.i", "y", "x", "rx"})
                                     .accumulate("conv", "ry.i"));
  EXPECT_TRUE(has(whole, "allocate conv.acc: f32[90]")) << whole;
  // A shifted split would add its recomputed elements twice; spatial loops
  // are not accumulate loops.
  EXPECT_THROW(check_step(Schedule().split("conv", "ry", 2).split_shift("conv", "x", 4)
                              .reorder("conv", {"ry.o", "y", "x.o", "ry.i", "rx", "x.i"})
                              .accumulate("conv", "ry.i")),
               Error);
  EXPECT_THROW(check_step(Schedule().accumulate("conv", "x")), Error);
}

// With only reduction loops outside the accumulate loop, the elements start
// from the init once before them and every block adds into them: no select
// on the first block, no prefetch; the numbers are the select's, bit for bit
// (each block still summed from 0); each block ends by keeping the total in
// memory (keep_in_memory: no registers for it beside the block's
// accumulators). Tiles of 4 columns leave a partial one (its elements
// guarded), ry's blocks of 2 a partial block.
TEST(ScheduleSteps, AccumulateStartsTheTotalBeforeItsBlocks) {
  Program p;
  auto blocks = [](std::vector<std::string> order) {
    return Schedule().split("conv", "ry", 2).split("conv", "x", 4).reorder("conv", order).accumulate("conv", "ry.i");
  };
  const Schedule inside = blocks({"y", "x.o", "ry.o", "ry.i", "rx", "x.i"});
  const Schedule outside = blocks({"ry.o", "y", "x.o", "ry.i", "rx", "x.i"});  // spatial loops between: the select
  for (const Schedule& s : {inside, Schedule(inside).vectorize("conv", "x.i")}) {
    std::string ir = check_step(s);
    EXPECT_FALSE(has(ir, "prefetch(") || has(ir, "conv.ry.o == 0")) << ir;
    EXPECT_LT(ir.find("conv["), ir.find("for (conv.ry.o")) << "the total starts before the blocks\n" << ir;
    EXPECT_TRUE(has(ir, "allocate conv.acc: f32[4]")) << ir;
    // The last statement of each block, after its write-back into conv.
    const size_t kept = ir.find("keep_in_memory(conv[0])");
    EXPECT_NE(kept, std::string::npos) << ir;
    EXPECT_LT(ir.find("for (conv.ry.o"), kept) << ir;
    EXPECT_LT(ir.rfind("conv[", kept - 1), kept) << ir;
  }
  EXPECT_TRUE(has(check_step(outside), "conv.ry.o == 0"));
  EXPECT_FALSE(has(check_step(outside), "keep_in_memory("));  // the select's form keeps nothing
  // A spatial loop of one iteration among the reduce loops (y split by 9:
  // the tile covers every row) still lets the total start once.
  const Schedule rows = Schedule().split("conv", "ry", 2).split("conv", "x", 4).split("conv", "y", 9)
                            .reorder("conv", {"x.o", "ry.o", "y.o", "ry.i", "rx", "y.i", "x.i"})
                            .accumulate("conv", "ry.i");
  std::string rows_ir = check_step(rows);
  EXPECT_FALSE(has(rows_ir, "prefetch(") || has(rows_ir, "conv.ry.o == 0")) << rows_ir;
  EXPECT_TRUE(has(rows_ir, "allocate conv.acc: f32[36]")) << rows_ir;
  Tensor b = p.run(p.lower(outside));
  for (const Schedule& s : {inside, rows}) {
    Tensor a = p.run(p.lower(s));
    EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), sizeof(float) * static_cast<size_t>(a.numel())), 0);
  }
}

// Every block is summed from the combiner's identity (a sum from 0, a max
// from -inf) and joins the partial result at the write-back, prefetched at
// the block's start; a reduction whose init is not the identity (1.5 for a
// sum, 0.25 for a max) joins the init there on the first block. Each block's
// terms then round off among themselves, not against the running total.
TEST(ScheduleSteps, AccumulateByInitAndCombiner) {
  const int64_t h = 5, w = 7, k = 9;
  TE x = te::placeholder({h, k, w}, DType::F32, "x");
  Tensor xv = random_f32({h, k, w}, 21);
  for (auto [op, init] : {std::pair<loop::ReduceOp, double>{loop::ReduceOp::Sum, 1.5}, {loop::ReduceOp::Max, 0.25},
                          {loop::ReduceOp::Max, -std::numeric_limits<double>::infinity()}}) {
    TE out = te::compute({h, w}, [&](const Indices& i) {
      auto r = te::reduce_axis(k, "r");
      return loop::reduce(op, x(i[0], r.var, i[1]), {r}, {}, te::constant(DType::F32, init));
    }, "red", te::OpClass::Reduce, {"y", "x"});
    auto run = [&](const Schedule& s) {
      std::vector<Tensor> args{xv, Tensor(DType::F32, {h, w})};
      loop::run_kernel(schedule::lower("red", {x}, {out}, s), args);
      return args[1];
    };
    Schedule blocked = Schedule().split("red", "r", 4).split("red", "x", 4)
                           .reorder("red", {"r.o", "y", "x.o", "r.i", "x.i"}).accumulate("red", "r.i");
    expect_same(run(blocked), run(Schedule()));
    std::string ir = loop::to_string(schedule::lower("red", {x}, {out}, blocked));
    EXPECT_TRUE(has(ir, "prefetch(red[")) << ir;
    const std::string identity = op == loop::ReduceOp::Sum ? "red.acc[red.x.i] = 0.0f" : "red.acc[red.x.i] = -inff";
    EXPECT_TRUE(has(ir, identity)) << ir;
    if (std::isfinite(init)) {
      EXPECT_TRUE(has(ir, init == 1.5 ? "1.5f" : "0.25f")) << "the init joins at the write-back\n" << ir;
    }
    // The blocks innermost among the loops outside: the total starts from
    // the init before them, with the same bits; a max from -inf keeps the
    // select (maxnum(-inf, NaN) would not be the block's NaN).
    Schedule inside = Schedule().split("red", "r", 4).split("red", "x", 4)
                          .reorder("red", {"y", "x.o", "r.o", "r.i", "x.i"}).accumulate("red", "r.i");
    Tensor a = run(inside), b = run(blocked);
    EXPECT_EQ(std::memcmp(a.data<float>(), b.data<float>(), sizeof(float) * static_cast<size_t>(a.numel())), 0);
    std::string in_ir = loop::to_string(schedule::lower("red", {x}, {out}, inside));
    EXPECT_EQ(has(in_ir, "red.r.o == 0"), !std::isfinite(init)) << in_ir;
    EXPECT_EQ(has(in_ir, "prefetch("), !std::isfinite(init)) << in_ir;
  }
}

TEST(ScheduleSteps, PrepackHoistsConstantOnlyStages) {
  // The filter is constant: its packed copy moves to a prepack kernel run once;
  // the main kernel takes the packed buffer as an extra input.
  Program p;
  Schedule s = Schedule().cache_read("f", "conv").layout("f.conv", 1, 2);
  schedule::LowerOptions o;
  o.constant_inputs = {false, true};
  schedule::LoweredKernels lk = schedule::lower_with_prepack("conv", {p.x, p.f}, {p.out}, s, o);
  ASSERT_TRUE(lk.prepack.has_value());
  ASSERT_EQ(lk.prepack->inputs.size(), 1u);
  EXPECT_EQ(lk.prepack->inputs[0].name(), "f");
  ASSERT_EQ(lk.main.inputs.size(), 3u);
  EXPECT_TRUE(lk.main.inputs[2].same_as(lk.prepack->outputs[0]));
  EXPECT_EQ(loop::to_string(lk.main).find("allocate f.conv"), std::string::npos) << loop::to_string(lk.main);
  Tensor packed(DType::F32, lk.prepack->outputs[0].dims());
  std::vector<Tensor> pargs{p.fv, packed};
  loop::run_kernel(*lk.prepack, pargs);
  std::vector<Tensor> args{p.xv, p.fv, packed, Tensor(DType::F32, {p.h, p.w})};
  loop::run_kernel(lk.main, args);
  expect_same(args[3], p.run(p.lower()));
  // Without constant inputs nothing is hoisted.
  EXPECT_FALSE(schedule::lower_with_prepack("conv", {p.x, p.f}, {p.out}, s, {}).prepack.has_value());
}

// Schedules are untrusted input (artifacts, tuning records): factors far
// beyond their loops, bodies unrolled into thousands of copies and absurd
// numbers are errors naming the step, never a kernel that runs for hours.
TEST(ScheduleSteps, HostileFactorsAreRefused) {
  Program p;
  auto lower_error = [&](const Schedule& s) { return testing::error_of([&] { p.lower(s); }); };
  // A split of a 3-step reduction by a million: a million guarded iterations
  // per output element.
  std::string err = lower_error(Schedule().split("conv", "ry", 1000000));
  EXPECT_NE(err.find("split conv ry 1000000: the loops of conv would run 270000000 iterations over a domain of 810"),
            std::string::npos)
      << err;
  // A split of a loop of extent 1 (the outer loop of another) by 4096.
  err = lower_error(Schedule().split("conv", "x", 16).split("conv", "x.o", 4096));
  EXPECT_NE(err.find("split conv x.o 4096: the loops of conv would run 5308416"), std::string::npos) << err;
  // 64 x 9 x 3 x 3 unrolled copies of the body.
  err = lower_error(Schedule().split("conv", "x", 64).unroll("conv", "x.i").unroll("conv", "y").unroll("conv", "ry")
                     .unroll("conv", "rx"));
  EXPECT_NE(err.find("unroll conv rx: the unrolled and vectorized loops of conv would copy its body 5184 times"),
            std::string::npos)
      << err;
  err = lower_error(Schedule().rfactor("conv", "rx", 100000));
  EXPECT_NE(err.find("more partial results than the axis has elements (3)"), std::string::npos) << err;
  // The defaults' partial tiles stay allowed: a tile wider than the loop.
  EXPECT_EQ(lower_error(Schedule().split("conv", "x", 64).vectorize("conv", "x.i").unroll("conv", "ry")), "");
  // Numbers no loop has are refused when the text is parsed.
  err = testing::error_of([] { schedule::parse_schedule("split conv x 1000000000\n"); });
  EXPECT_NE(err.find("schedule line 1: 1000000000 is out of range (0 to 16777216)"), std::string::npos) << err;
  EXPECT_THROW(schedule::parse_schedule("split conv x -4\n"), Error);
}

// A prefetch step whose loops are not nested as it says (its reduction loop
// inside the target's loop), or whose tiles ahead are 0, is an error naming
// the step.
TEST(ScheduleSteps, PrefetchNeedsItsLoops) {
  Program p;
  auto lower_error = [&](const Schedule& s) { return testing::error_of([&] { p.lower(s); }); };
  std::string err = lower_error(Schedule().prefetch("conv", "f", "rz", "conv", "y", 4, 2));
  EXPECT_NE(err.find("prefetch conv f rz conv y 4 2: no loop rz of conv inside loop y of conv"), std::string::npos)
      << err;
  // Where they are: at the start of every second ry step, the row of f of
  // step (ry's 2-block start + y mod 4 mod 2), clamped to f; it computes
  // nothing (the evaluator skips it).
  loop::Kernel k = p.lower(Schedule().prefetch("conv", "f", "ry", "conv", "y", 4, 2));
  const std::string ir = loop::to_string(k);
  EXPECT_NE(ir.find("for (conv.ry, 0, 3) {\n        if (conv.ry%2 == 0) {\n"
                    "          prefetch(f[max(min((conv.ry - conv.ry%2 + conv.y%2)*3, 8), 0)])"),
            std::string::npos)
      << ir;
  expect_same(p.run(k), p.run(p.lower()));
  err = lower_error(Schedule().prefetch("conv", "f", "ry", "conv", "y", 0, 2));
  EXPECT_NE(err.find("the tiles ahead and the spread must be at least 1"), std::string::npos) << err;
  err = lower_error(Schedule().prefetch("conv", "nothing", "ry", "conv", "y", 4, 2));
  EXPECT_NE(err.find("no stage 'nothing'"), std::string::npos) << err;
}

TEST(ScheduleText, RoundTrips) {
  Schedule s = Schedule()
                   .split("conv", "x", 16)
                   .fuse("conv", "y", "x.o")
                   .reorder("conv", {"y_x.o", "ry", "rx", "x.i"})
                   .vectorize("conv", "x.i")
                   .unroll("conv", "rx")
                   .parallel("conv", "y_x.o")
                   .compute_at("pad", "conv", "y_x.o")
                   .compute_inline("a")
                   .compute_root("b")
                   .cache_write("conv")
                   .cache_read("f", "conv")
                   .layout("f.conv", 1, 16)
                   .pad("pad", 1, 8)
                   .rfactor("conv", "rx", 16)
                   .split_shift("conv", "y", 4)
                   .accumulate("conv", "rx.i")
                   .prefetch("conv", "f.conv", "rx", "out", "y_x.o", 25, 16);
  std::string text = schedule::to_text(s);
  EXPECT_NE(text.find("prefetch conv f.conv rx out y_x.o 25 16\n"), std::string::npos) << text;
  EXPECT_EQ(schedule::parse_schedule(text), s);
  EXPECT_NE(text.find("compute_at pad conv y_x.o\n"), std::string::npos) << text;
  EXPECT_EQ(schedule::parse_schedule("# comment\n\nsplit a b 4  # tail\n"), Schedule().split("a", "b", 4));
  EXPECT_THROW(schedule::parse_schedule("splat a b 4"), Error);
  EXPECT_THROW(schedule::parse_schedule("split a b"), Error);
  EXPECT_THROW(schedule::parse_schedule("split a b four"), Error);
  EXPECT_THROW(schedule::parse_schedule("reorder a"), Error);
}

class ScheduleJit : public codegen::testing::JitIsaTest {};

TEST_P(ScheduleJit, TiledConvMatchesEvaluator) {
  Program p;
  Schedule s = Schedule()
                   .cache_write("conv")
                   .split("conv", "x", 4)
                   .parallel("conv", "y")
                   .compute_at("conv.local", "conv", "x.o")
                   .compute_at("pad", "conv", "y");
  loop::Kernel k = p.lower(s);
  codegen::testing::expect_jit_matches(k, {p.xv, p.fv, Tensor(DType::F32, {p.h, p.w})}, options());
  expect_same(p.run(k), p.run(p.lower()));
}

INSTANTIATE_TEST_SUITE_P(Jit, ScheduleJit, ::testing::Values(codegen::Isa::AVX512, codegen::Isa::AVX2),
                         codegen::testing::isa_param_name);

}  // namespace
}  // namespace tessera
