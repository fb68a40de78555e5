// Blocked convolutions' spatial tiles (the contraction rule's knobs th and
// td): every (td, th, kb, mr) the space offers, on 2-D, 3-D and depthwise
// convolutions with strides, padding and odd sizes, is valid exactly when
// its accumulators fit the register budget, and then computes what the
// reference interpreter computes, on AVX-512 and AVX2; the coupled defaults
// make a one-knob move land on a fitting tile. By default a tile spans
// several rows (slices) only on a small map whose weights outweigh its
// activations, in whole runs of W and rows that divide the map.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/llvm/jit.h"
#include "schedule/schedule.h"
#include "schedule_rule_tester.h"
#include "support/target.h"

namespace tessera {
namespace {

using testing::RuleTester;

class ConvSpatialTiles : public testing::PerIsa {};

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

// The values the one contraction stage of `t` offers for knob `name`
// ({0}, meaning "left out", when it offers none).
std::vector<int64_t> offered(const schedule::StageSpace& st, const std::string& name) {
  for (const schedule::Knob& k : st.knobs)
    if (k.name == name) return k.values;
  return {0};
}

// Runs every (td, th, kb, mr) the stage offers: a point is valid exactly
// when th x td x mr pixels by kb blocks fit the register budget (the block
// being one vector), and a valid point matches the reference. `knobs` are
// those the space must offer. Returns the number of valid points.
int sweep_tiles(const RuleTester& t, Isa isa, const std::vector<std::string>& knobs) {
  const std::vector<schedule::StageSpace> space = t.space(isa, "contraction");
  EXPECT_EQ(space.size(), 1u);
  if (space.size() != 1) return 0;
  const schedule::StageSpace& st = space[0];
  for (const std::string& k : knobs) EXPECT_NE(offered(st, k), std::vector<int64_t>{0}) << "no knob " << k;
  const int64_t budget = Target::for_isa(isa).register_budget();
  int valid = 0;
  for (int64_t td : offered(st, "td"))
    for (int64_t th : offered(st, "th"))
      for (int64_t kb : offered(st, "kb"))
        for (int64_t mr : offered(st, "mr")) {
          schedule::SchedulePoint p;
          schedule::KnobValues& v = p.stages[st.stage];
          for (auto [name, value] : {std::pair{"td", td}, std::pair{"th", th}, std::pair{"kb", kb}, std::pair{"mr", mr}})
            if (value != 0) v[name] = value;
          const int64_t accumulators = std::max<int64_t>(td, 1) * std::max<int64_t>(th, 1) * std::max<int64_t>(kb, 1) * mr;
          std::optional<bool> ok = t.check(isa, p);
          EXPECT_EQ(ok.has_value(), accumulators <= budget) << "{" << p.to_text() << "}";
          if (!ok) continue;
          EXPECT_TRUE(*ok) << "{" << p.to_text() << "}";
          if (!*ok) return valid;
          ++valid;
        }
  return valid;
}

TEST_P(ConvSpatialTiles, Conv2d) {
  const int64_t b = lanes();
  // 5x5 (odd: th=2 and 4 shift their last tile back), four output blocks, padded.
  RuleTester a("ConvBlocked", "tessera");
  a.input({1, 2, 5, 5, b}).input({4, 2, 3, 3, b, b}, true).attr("pads", ints({1, 1, 1, 1}));
  EXPECT_GT(sweep_tiles(a, isa(), {"th", "kb", "mr"}), 20);
  // Stride 2: 9x11 -> 5x6.
  RuleTester s("ConvBlocked", "tessera");
  s.input({1, 1, 9, 11, b}).input({2, 1, 3, 3, b, b}, true).attr("pads", ints({1, 1, 1, 1}))
      .attr("strides", ints({2, 2}));
  EXPECT_GT(sweep_tiles(s, isa(), {"th", "kb", "mr"}), 20);
}

TEST_P(ConvSpatialTiles, Conv3d) {
  const int64_t b = lanes();
  // R3D-18's last stage in small: 3x3x3 on a 1x4x4 map, padded (no td on D = 1).
  RuleTester small("ConvBlocked", "tessera");
  small.input({1, 2, 1, 4, 4, b}).input({2, 2, 3, 3, 3, b, b}, true).attr("pads", ints({1, 1, 1, 1, 1, 1}));
  EXPECT_GT(sweep_tiles(small, isa(), {"th", "kb", "mr"}), 10);
  // D = 3 (odd) from a stride 2 in time, H = 6, W = 3.
  RuleTester clip("ConvBlocked", "tessera");
  clip.input({1, 1, 5, 6, 3, b}).input({2, 1, 3, 3, 3, b, b}, true).attr("pads", ints({1, 1, 1, 1, 1, 1}))
      .attr("strides", ints({2, 1, 1}));
  EXPECT_GT(sweep_tiles(clip, isa(), {"td", "th", "kb", "mr"}), 15);
}

TEST_P(ConvSpatialTiles, Depthwise) {
  const int64_t b = lanes();
  RuleTester a("DepthwiseConvBlocked", "tessera");
  a.input({1, 2, 7, 7, b}).input({2, 3, 3, b}, true).attr("pads", ints({1, 1, 1, 1}));
  EXPECT_GT(sweep_tiles(a, isa(), {"th", "mr"}), 10);
  RuleTester s("DepthwiseConvBlocked", "tessera");
  s.input({1, 1, 9, 8, b}).input({1, 3, 3, b}, true).attr("pads", ints({1, 1, 1, 1})).attr("strides", ints({2, 2}));
  EXPECT_GT(sweep_tiles(s, isa(), {"th", "mr"}), 8);
  RuleTester v("DepthwiseConvBlocked", "tessera");
  v.input({1, 1, 4, 5, 3, b}).input({1, 3, 3, 3, b}, true).attr("pads", ints({1, 1, 1, 1, 1, 1}));
  EXPECT_GT(sweep_tiles(v, isa(), {"td", "th", "mr"}), 10);
}

// Dilated depthwise convolutions (MobileNetV3's last stage at output stride
// 16): 5x5 at dilation 2 and 3x3 at dilation 4, padded to keep the odd map,
// where a tile's rows read taps in the padding on either side; and dilation
// 2 with stride 2.
TEST_P(ConvSpatialTiles, DilatedDepthwise) {
  const int64_t b = lanes();
  RuleTester five("DepthwiseConvBlocked", "tessera");
  five.input({1, 2, 9, 11, b}).input({2, 5, 5, b}, true).attr("pads", ints({4, 4, 4, 4})).attr("dilations", ints({2, 2}));
  EXPECT_GE(sweep_tiles(five, isa(), {"th", "mr"}), 20);
  RuleTester three("DepthwiseConvBlocked", "tessera");
  three.input({1, 1, 7, 13, b}).input({1, 3, 3, b}, true).attr("pads", ints({4, 4, 4, 4})).attr("dilations", ints({4, 4}));
  EXPECT_GE(sweep_tiles(three, isa(), {"th", "mr"}), 20);
  RuleTester strided("DepthwiseConvBlocked", "tessera");
  strided.input({1, 1, 11, 10, b}).input({1, 3, 3, b}, true).attr("pads", ints({2, 2, 2, 2}))
      .attr("dilations", ints({2, 2})).attr("strides", ints({2, 2}));
  EXPECT_GT(sweep_tiles(strided, isa(), {"th", "mr"}), 8);
}

// A map larger than its weights takes row halves by default; th then tiles
// each half (5 rows: th=4 shifts its last tile back inside the half). An odd
// number of rows (9) takes the knob too (its row tiles then go outermost).
// A half shorter than th is refused.
TEST_P(ConvSpatialTiles, RowHalves) {
  const int64_t b = lanes();
  for (int64_t rows : {10, 9}) {
    SCOPED_TRACE(std::to_string(rows) + " rows");
    RuleTester t("ConvBlocked", "tessera");
    t.input({1, 1, rows, 7, b}).input({2, 1, 1, 1, b, b}, true);
    const std::vector<schedule::StageSpace> space = t.space(isa(), "contraction");
    ASSERT_EQ(space.size(), 1u);
    const std::string stage = space[0].stage;
    EXPECT_EQ(offered(space[0], "th"), (std::vector<int64_t>{1, 2, 4}));
    EXPECT_EQ(offered(space[0], "halves"), (std::vector<int64_t>{0, 1}));
    for (const schedule::Knob& k : space[0].knobs) {
      if (k.name == "halves") {
        EXPECT_EQ(k.default_value, 1);
      }
    }
    for (int64_t th : {1, 2, 4})
      for (int64_t halves : {0, 1}) {
        schedule::SchedulePoint p;
        p.stages[stage] = {{"th", th}, {"halves", halves}};
        EXPECT_EQ(t.check(isa(), p), std::optional<bool>(true)) << p.to_text();
      }
  }
  RuleTester narrow("ConvBlocked", "tessera");
  narrow.input({1, 1, 6, 7, b}).input({2, 1, 1, 1, b, b}, true);
  const std::string nstage = narrow.space(isa(), "contraction").at(0).stage;
  schedule::SchedulePoint two, four;
  two.stages[nstage] = {{"th", 2}, {"halves", 1}};
  four.stages[nstage] = {{"th", 4}, {"halves", 1}};
  EXPECT_EQ(narrow.check(isa(), two), std::optional<bool>(true));
  EXPECT_EQ(narrow.check(isa(), four), std::nullopt) << "halves of 3 rows cannot hold th=4";
}

// The one-knob point {th=4} on a 4x4 map is the tile of 4x4 pixels by one
// block (16 accumulators of AVX-512's 28; AVX2's 12 take 4x2); points over
// the budget or the map are refused.
TEST_P(ConvSpatialTiles, CoupledDefaultsAndRefusals) {
  const int64_t b = lanes();
  RuleTester t("ConvBlocked", "tessera");
  t.input({1, 2, 1, 4, 4, b}).input({4, 2, 3, 3, 3, b, b}, true).attr("pads", ints({1, 1, 1, 1, 1, 1}));
  const std::string stage = t.space(isa(), "contraction").at(0).stage;
  auto at = [&](schedule::KnobValues v) {
    schedule::SchedulePoint p;
    p.stages[stage] = std::move(v);
    return t.schedule(isa(), p);
  };
  const int64_t mr = isa() == Isa::AVX512 ? 4 : 2;
  std::optional<schedule::Schedule> alone = at({{"th", 4}}), spelled = at({{"th", 4}, {"kb", 1}, {"mr", mr}});
  ASSERT_TRUE(alone && spelled);
  EXPECT_EQ(schedule::to_text(*alone), schedule::to_text(*spelled));
  // H split by 4, its rows unrolled in the accumulator and its write-back.
  const std::string text = schedule::to_text(*alone);
  for (const std::string& line : {"split " + stage + " h 4", "unroll " + stage + ".local h", "unroll " + stage + " h.i"})
    EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << " in\n" << text;
  EXPECT_FALSE(at({{"th", 4}, {"kb", 4}, {"mr", 4}})) << "64 accumulators";
  EXPECT_EQ(at({{"th", 2}, {"kb", 2}, {"mr", 4}}).has_value(), isa() == Isa::AVX512) << "16 accumulators";
  EXPECT_FALSE(at({{"td", 2}})) << "D is 1";
  EXPECT_FALSE(at({{"th", 8}})) << "H is 4";
  EXPECT_FALSE(at({{"th", 0}}));
  // The default point is the default schedule, its th explicit included.
  t.expect_default_is_default(isa());
  const std::vector<schedule::StageSpace> spaces = t.space(isa(), "contraction");
  const std::vector<int64_t> th = offered(spaces.at(0), "th");
  int64_t default_th = 0;
  for (const schedule::Knob& k : spaces.at(0).knobs)
    if (k.name == "th") default_th = k.default_value;
  ASSERT_NE(std::find(th.begin(), th.end(), default_th), th.end());
  EXPECT_EQ(schedule::to_text(*at({{"th", default_th}})), schedule::to_text(*at({})));
}

// A blocked convolution for the default-tile tests: `in` input blocks on a
// map `map` (D, H, W or H, W), `out` output blocks (depthwise: out = in),
// kernel 3 in every spatial axis (1 with `pointwise`), padded to keep the map.
struct ConvCase {
  RuleTester tester;
  Dims map;
  int64_t out_blocks = 0;
  int64_t weights = 1, activations = 0;  // elements
};
ConvCase conv_case(int64_t b, int64_t in, int64_t out, Dims map, bool depthwise = false, bool pointwise = false) {
  const int64_t k = pointwise ? 1 : 3;
  ConvCase c{RuleTester(depthwise ? "DepthwiseConvBlocked" : "ConvBlocked", "tessera"), map, depthwise ? in : out};
  Dims x{1, in}, w{depthwise ? in : out};
  if (!depthwise) w.push_back(in);
  std::vector<int64_t> pads;
  int64_t pixels = 1;
  for (int64_t m : map) x.push_back(m), w.push_back(k), pads.push_back(k / 2), pixels *= m;
  pads.insert(pads.end(), pads.begin(), pads.end());
  x.push_back(b), w.push_back(b);
  if (!depthwise) w.push_back(b);
  c.tester.input(x, false).input(w, true).attr("pads", ints(pads)).tolerance(1e-4, 1e-3);
  for (int64_t d : w) c.weights *= d;
  c.activations = pixels * b * (in + (depthwise ? in : out));
  return c;
}

// The default tile of the case's one contraction stage (knobs left out: 1).
struct DefaultTile {
  int64_t td = 1, th = 1, kb = 1, mr = 0;
};
DefaultTile default_tile(const ConvCase& c, Isa isa) {
  DefaultTile t;
  const std::vector<schedule::StageSpace> space = c.tester.space(isa, "contraction");
  EXPECT_EQ(space.size(), 1u);
  for (const schedule::Knob& k : space.at(0).knobs) {
    if (k.name == "td") t.td = k.default_value;
    if (k.name == "th") t.th = k.default_value;
    if (k.name == "kb") t.kb = k.default_value;
    if (k.name == "mr") t.mr = k.default_value;
  }
  return t;
}

// What every default tile holds: its accumulators fit the register budget,
// its rows and slices divide H and D (none computed twice), several rows or
// slices only where the weights outweigh the activations, and then whole
// runs of W and at least 16 tiles for the threads to share; and it computes
// what the reference computes.
DefaultTile expect_default_tile(const ConvCase& c, Isa isa) {
  const DefaultTile t = default_tile(c, isa);
  const int64_t w = c.map.back(), h = c.map[c.map.size() - 2], d = c.map.size() == 3 ? c.map[0] : 1;
  EXPECT_LE(t.td * t.th * t.kb * t.mr, Target::for_isa(isa).register_budget());
  EXPECT_EQ(d % t.td, 0);
  EXPECT_EQ(h % t.th, 0);
  if (t.th * t.td > 1) {
    EXPECT_GT(c.weights, c.activations);
    EXPECT_EQ(t.mr, w) << "whole runs of W";
    EXPECT_GE(c.out_blocks / t.kb * (d / t.td) * (h / t.th), 16) << "tiles";
  }
  EXPECT_EQ(c.tester.check(isa, {}), std::optional<bool>(true));
  return t;
}

TEST_P(ConvSpatialTiles, DefaultRowsWhereWeightsOutweighASmallMap) {
  const int64_t b = lanes();
  // Small maps, heavy weights, 17 output blocks (odd: one a tile, no pair to
  // keep): a run of 4 pixels fills at most a third of either budget, so the
  // tile takes rows of H or slices of D too.
  for (Dims map : {Dims{4, 4}, Dims{2, 4, 4}}) {
    SCOPED_TRACE(std::to_string(map.size()) + "-D");
    const DefaultTile t = expect_default_tile(conv_case(b, 4, 17, map), isa());
    EXPECT_GT(t.th * t.td, 1);
    EXPECT_EQ(t.kb, 1);
  }
  // The same weights on a wide map: a run of W (28) fills the budget alone.
  EXPECT_EQ(expect_default_tile(conv_case(b, 4, 17, {4, 28}), isa()).th, 1);
  // Three output blocks: rows would leave fewer than 16 tiles.
  EXPECT_EQ(expect_default_tile(conv_case(b, 4, 3, {4, 4}), isa()).th, 1);
  // A small map with light weights (1x1 from one block), and depthwise (9
  // weights a channel, 32 activations): one row.
  EXPECT_EQ(expect_default_tile(conv_case(b, 1, 17, {4, 4}, false, true), isa()).th, 1);
  const DefaultTile dw = expect_default_tile(conv_case(b, 2, 2, {4, 4}, true), isa());
  EXPECT_EQ(dw.th * dw.kb, 1);
  // Pairs of output blocks are kept unless a pair's weights outweigh the
  // planned second-level cache (384 input channels of a 3x3x3 kernel: 1.3 MB
  // a pair with AVX-512's blocks of 16, 0.7 MB with AVX2's 8); beyond it the
  // tile takes one block and all the rows that fit.
  const ConvCase deep = conv_case(b, 384 / b, 16, {1, 4, 4});
  const double pair_bytes = static_cast<double>(deep.weights) / 16 * 2 * sizeof(float);
  const DefaultTile t = expect_default_tile(deep, isa());
  if (pair_bytes > static_cast<double>(Target::for_isa(isa()).planned.l2)) {
    EXPECT_EQ(t.kb, 1);
    EXPECT_EQ(t.th * t.mr, std::min<int64_t>(16, Target::for_isa(isa()).register_budget())) << "the whole map";
  } else {
    EXPECT_EQ(t.kb, 2);
  }
}

INSTANTIATE_TEST_SUITE_P(Jit, ConvSpatialTiles, ::testing::Values(Isa::AVX512, Isa::AVX2),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

}  // namespace
}  // namespace tessera
