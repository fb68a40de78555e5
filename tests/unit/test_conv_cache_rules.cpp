// The contraction rule's cache rules for blocked convolutions. Row chunks
// (knob row_chunk: row tiles a chunk, 0 for none): a convolution whose
// input rows outweigh twice the planned second-level cache (1024 channels
// on a 40x40 map: 6.5 MB), read by at least 8 passes of output blocks, and
// whose weights weigh much less takes chunks of row tiles by default, each
// within half the planned cache; one read by fewer passes, one whose rows
// are shorter (20x20: 1.6 MB), one whose input fits, and one whose weights,
// streamed again by every chunk, outweigh what chunks save (a 3x3 layer of
// 1024 channels: 1.2-2.4 MB) take none. Every chunk, with and without
// halves and with th 1 and 2, is valid exactly when the space offers it (the divisors of
// the default point's row tiles) and it divides the row tiles into several
// chunks (or is 0), and a valid one computes what the reference computes,
// on AVX-512 and AVX2 (a 1x1 convolution of 1024 channels and a padded 3x3
// one of 256). Tiles of one output block where one block's weights outweigh
// the planned second-level cache (a 5x5 convolution of 2048 channels:
// 1.6-3.3 MB a block), pairs of blocks where they do not. Chunked padding
// (knob pad_chunks, chunked_padding.h): a grouped 3x3 convolution (two
// groups of 48 channels, RegNetX-3.2GF's width) of two images whose padded
// input outweighs the planned second-level cache, with light weights, pads
// per chunk of row tiles by default, each chunk's rows within half the
// planned cache; one image of a small map (its padded input fits) and a
// dense convolution of 256 channels (weights over half the cache) do not;
// every (pad_chunks, halves, th, row_chunk) point is valid exactly when the
// rule allows it and a valid one computes what the reference computes.
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

// A blocked convolution of `channels` input channels on a size x size map to `blocks` output blocks.
RuleTester conv(int64_t b, int64_t channels, int64_t k, int64_t size = 20, int64_t blocks = 4) {
  RuleTester t("ConvBlocked", "tessera");
  t.input({1, channels / b, size, size, b}).input({blocks, channels / b, k, k, b, b}, true);
  t.attr("pads", Attribute::of_ints({k / 2, k / 2, k / 2, k / 2}));
  return t;
}

TEST_P(ConvCacheRules, LargeInputsTakeChunksByDefault) {
  // 1024 channels on 40x40 (6.5 MB of rows, over twice the planned 1 MB
  // second-level cache) to 16 output blocks (8 passes of block pairs): chunks,
  // each within half the planned cache (a row is 160 KB: at most 3 rows).
  const std::optional<schedule::Knob> large = knob_of(conv(lanes(), 1024, 1, 40, 16), isa(), "row_chunk");
  ASSERT_TRUE(large);
  EXPECT_GE(large->default_value, 1);
  EXPECT_LE(large->default_value, 3);
  EXPECT_NE(std::find(large->values.begin(), large->values.end(), large->default_value), large->values.end());
  // The same rows read by 2 passes (4 output blocks), and 1.6 MB of rows
  // (20x20) read by 8 passes: none (ResNet-50's 1x1 layers at 224x224 ran
  // slower chunked).
  const std::optional<schedule::Knob> few = knob_of(conv(lanes(), 1024, 1, 40), isa(), "row_chunk");
  EXPECT_TRUE(!few || few->default_value == 0);
  const std::optional<schedule::Knob> short_rows = knob_of(conv(lanes(), 1024, 1, 20, 16), isa(), "row_chunk");
  EXPECT_TRUE(!short_rows || short_rows->default_value == 0);
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

// Two groups of 48 channels (RegNetX-3.2GF's group width) in blocks of `b`:
// `images` images of size x size, a 3x3 kernel of stride `stride`, padding 1.
RuleTester grouped_conv(int64_t b, int64_t images, int64_t size, int64_t stride) {
  RuleTester t("ConvBlocked", "tessera");
  const int64_t group_blocks = 48 / b;
  t.input({images, 2 * group_blocks, size, size, b}).input({2 * group_blocks, group_blocks, 3, 3, b, b}, true);
  t.input({2 * group_blocks, b}, true);
  t.attr("pads", Attribute::of_ints({1, 1, 1, 1})).attr("strides", Attribute::of_ints({stride, stride}));
  t.attr("group_div", Attribute::of_int(group_blocks)).attr("group_mul", Attribute::of_int(group_blocks));
  return t;
}

TEST_P(ConvCacheRules, LargePaddedInputsArePaddedPerChunk) {
  // 2 images of 96 channels on 48x48, stride 2: 1.8 MB padded (49x49), over
  // the planned 1 MB; 166 KB of weights.
  const RuleTester large = grouped_conv(lanes(), 2, 48, 2);
  const std::optional<schedule::Knob> pad = knob_of(large, isa(), "pad_chunks");
  ASSERT_TRUE(pad);
  EXPECT_EQ(pad->default_value, 1);
  const std::optional<schedule::Knob> chunk = knob_of(large, isa(), "row_chunk");
  const std::optional<schedule::Knob> th = knob_of(large, isa(), "th");
  ASSERT_TRUE(chunk);
  const int64_t rows = th ? th->default_value : 1;
  // The chunk's c * th output rows read 2 * c * th + 1 padded rows of 49 pixels x 96 channels.
  EXPECT_GE(chunk->default_value, 1);
  EXPECT_LE((2 * chunk->default_value * rows + 1) * 49 * 96 * 4, (1 << 20) / 2);
  const std::optional<schedule::Schedule> s = large.schedule(isa(), {});
  ASSERT_TRUE(s);
  bool padded_at = false, padded_root = false;
  for (const schedule::Directive& d : s->directives) {
    const bool pad_stage = d.stage.size() > 4 && d.stage.compare(d.stage.size() - 4, 4, ".pad") == 0;
    padded_at |= pad_stage && d.kind == schedule::DirectiveKind::ComputeAt;
    padded_root |= pad_stage && d.kind == schedule::DirectiveKind::ComputeRoot;
  }
  EXPECT_TRUE(padded_at) << schedule::to_text(*s);
  EXPECT_FALSE(padded_root) << schedule::to_text(*s);
  // One image of 24x24 (its 25x25 padded input fits) and a dense 3x3
  // convolution of 256 channels on 2 images of 40x40 (2.4 MB of weights):
  // the whole padded copy, as before.
  const std::optional<schedule::Knob> fits = knob_of(grouped_conv(lanes(), 1, 24, 2), isa(), "pad_chunks");
  EXPECT_TRUE(!fits || fits->default_value == 0);
  RuleTester heavy("ConvBlocked", "tessera");
  heavy.input({2, 256 / lanes(), 40, 40, lanes()}).input({256 / lanes(), 256 / lanes(), 3, 3, lanes(), lanes()}, true);
  heavy.attr("pads", Attribute::of_ints({1, 1, 1, 1}));
  const std::optional<schedule::Knob> dense = knob_of(heavy, isa(), "pad_chunks");
  EXPECT_TRUE(!dense || dense->default_value == 0);
}

TEST_P(ConvCacheRules, EveryPaddedChunkComputesTheConvolution) {
  // 2 images of 12x12, stride 1: 12 rows, 6 a half.
  const RuleTester t = grouped_conv(lanes(), 2, 12, 1);
  const std::string stage = t.space(isa(), "contraction").at(0).stage;
  const std::optional<schedule::Knob> knob = knob_of(t, isa(), "row_chunk");
  ASSERT_TRUE(knob);
  int valid_points = 0;
  for (int64_t pad : {0, 1})
    for (int64_t halves : {0, 1})
      for (int64_t th : {1, 2})
        for (int64_t chunk : {0, 1, 2, 3, 4, 6, 12}) {
          schedule::SchedulePoint p;
          p.stages[stage] = {{"pad_chunks", pad}, {"th", th}, {"halves", halves}, {"row_chunk", chunk}};
          const int64_t tiles = (halves ? 6 : 12) / th;
          const bool offered = std::find(knob->values.begin(), knob->values.end(), chunk) != knob->values.end();
          const bool valid = pad ? !halves && offered && chunk >= 1 && chunk <= tiles && tiles % chunk == 0
                                 : chunk == 0 || (offered && chunk < tiles && tiles % chunk == 0);
          valid_points += valid;
          EXPECT_EQ(t.check(isa(), p), valid ? std::optional<bool>(true) : std::nullopt) << p.to_text();
        }
  EXPECT_GE(valid_points, 10);
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
