// The contraction rule's cache rules for blocked convolutions. Row chunks
// (knob row_chunk: row tiles a chunk, 0 for none): a convolution whose
// input rows outweigh half the planned second-level cache (1024 channels on
// a 20x20 map: 1.6 MB, 0.8 MB a half) and its weights much less takes
// chunks of row tiles by default, the most whose rows fit (80 KB a row: 5
// of a half's 10); one whose input fits takes none, nor one whose weights,
// streamed again by every chunk, outweigh what chunks save (a 3x3 layer of
// 1024 channels: 1.2-2.4 MB). Every chunk, with and without halves and with
// th 1 and 2, is valid exactly when the space offers it (the divisors of
// the default point's row tiles) and it divides the row tiles into several
// chunks (or is 0), and a valid one computes what the reference computes,
// on AVX-512 and AVX2 (a 1x1 convolution of 1024 channels and a padded 3x3
// one of 256). Tiles of one output block where one block's weights outweigh
// the planned second-level cache (a 5x5 convolution of 2048 channels:
// 1.6-3.3 MB a block), pairs of blocks where they do not.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "codegen/llvm/jit.h"
#include "schedule/schedule.h"
#include "schedule_rule_tester.h"
#include "support/target.h"

namespace tessera {
namespace {

using testing::RuleTester;

class ConvCacheRules : public testing::PerIsa {};

// The knob of the one contraction stage of `t` named `name`; null when it offers none.
std::optional<schedule::Knob> knob_of(const RuleTester& t, Isa isa, const std::string& name) {
  const std::vector<schedule::StageSpace> space = t.space(isa, "contraction");
  EXPECT_EQ(space.size(), 1u);
  for (const schedule::Knob& k : space.at(0).knobs)
    if (k.name == name) return k;
  return std::nullopt;
}

// A blocked convolution of `channels` input channels on a size x size map to 4 output blocks.
RuleTester conv(int64_t b, int64_t channels, int64_t k, int64_t size = 20) {
  RuleTester t("ConvBlocked", "tessera");
  t.input({1, channels / b, size, size, b}).input({4, channels / b, k, k, b, b}, true);
  t.attr("pads", Attribute::of_ints({k / 2, k / 2, k / 2, k / 2}));
  return t;
}

TEST_P(ConvCacheRules, LargeInputsTakeChunksByDefault) {
  const std::optional<schedule::Knob> large = knob_of(conv(lanes(), 1024, 1), isa(), "row_chunk");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->default_value, 5);
  EXPECT_EQ(large->values, (std::vector<int64_t>{0, 1, 2, 5}));
  const std::optional<schedule::Knob> small = knob_of(conv(lanes(), 64, 1), isa(), "row_chunk");
  EXPECT_TRUE(!small || small->default_value == 0);
  const std::optional<schedule::Knob> heavy = knob_of(conv(lanes(), 1024, 3), isa(), "row_chunk");
  EXPECT_TRUE(!heavy || heavy->default_value == 0);
}

TEST_P(ConvCacheRules, EveryChunkComputesTheConvolution) {
  for (int64_t k : {1, 3}) {
    SCOPED_TRACE("kernel " + std::to_string(k));
    const RuleTester t = conv(lanes(), k == 1 ? 1024 : 256, k);
    const std::string stage = t.space(isa(), "contraction").at(0).stage;
    const std::optional<schedule::Knob> knob = knob_of(t, isa(), "row_chunk");
    ASSERT_TRUE(knob);
    for (int64_t halves : {0, 1})
      for (int64_t th : {1, 2})
        for (int64_t chunk : {0, 1, 2, 4, 5, 10}) {
          schedule::SchedulePoint p;
          p.stages[stage] = {{"th", th}, {"halves", halves}, {"row_chunk", chunk}};
          const int64_t tiles = (halves ? 10 : 20) / th;
          const bool offered = std::find(knob->values.begin(), knob->values.end(), chunk) != knob->values.end();
          const bool valid = chunk == 0 || (offered && chunk < tiles && tiles % chunk == 0);
          EXPECT_EQ(t.check(isa(), p), valid ? std::optional<bool>(true) : std::nullopt) << p.to_text();
        }
  }
}

TEST_P(ConvCacheRules, StreamedWeightsTakeOneBlockATile) {
  RuleTester streamed = conv(lanes(), 2048, 5, 6);
  streamed.tolerance(1e-4, 1e-3);  // sums of 51,200 products, in blocks against the reference's one chain
  const std::optional<schedule::Knob> one = knob_of(streamed, isa(), "kb");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->default_value, 1);
  EXPECT_EQ(streamed.check(isa(), {}), std::optional<bool>(true));
  const std::optional<schedule::Knob> pair = knob_of(conv(lanes(), 256, 3, 6), isa(), "kb");
  ASSERT_TRUE(pair);
  EXPECT_EQ(pair->default_value, 2);
}

INSTANTIATE_TEST_SUITE_P(Jit, ConvCacheRules, ::testing::Values(Isa::AVX512, Isa::AVX2),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

}  // namespace
}  // namespace tessera
