// Blocked convolutions' spatial tiles (the contraction rule's knobs th and
// td): every (td, th, kb, mr) the space offers, on 2-D, 3-D and depthwise
// convolutions with strides, padding and odd sizes, is valid exactly when
// its accumulators fit the register budget, and then computes what the
// reference interpreter computes, on AVX-512 and AVX2; the coupled defaults
// make a one-knob move land on a fitting tile.
#include <gtest/gtest.h>

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
  // The default point is the default schedule, th=1 explicit included.
  t.expect_default_is_default(isa());
  EXPECT_EQ(schedule::to_text(*at({{"th", 1}})), schedule::to_text(*at({})));
}

INSTANTIATE_TEST_SUITE_P(Jit, ConvSpatialTiles, ::testing::Values(Isa::AVX512, Isa::AVX2),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

}  // namespace
}  // namespace tessera
