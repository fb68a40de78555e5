// Blocked convolutions padded along their outermost spatial axis only (the
// temporal 3x1x1 and 7x1x1 convolutions of S3D and R(2+1)D, 2-D kx1 ones as
// in Inception): the taps that fall outside the input are left out by a
// reduction condition (opexpr/expr_blocked_conv.cpp) hoisted to one test per
// tap (loop/hoist_guards.h), and the input is read as it is. Every knob of
// the contraction rule (and sampled points) against the op's reference
// kernel on AVX-512 and AVX2: padding at both ends, at the end only, strides
// in time, real channels ending inside a block, grouped windows; and the
// default schedules root no padded copy, where a (1,3,3) one does.
#include <gtest/gtest.h>

#include "codegen/llvm/jit.h"
#include "schedule/schedule.h"
#include "schedule_rule_tester.h"
#include "support/target.h"

namespace tessera {
namespace {

using testing::RuleTester;

class OuterAxisPadding : public testing::PerIsa {};

Attribute ints(std::vector<int64_t> v) { return Attribute::of_ints(std::move(v)); }

// Every knob one at a time and a few sampled points, each against the reference.
void sweep(RuleTester& t, Isa isa) {
  t.max_values(3).samples(2);
  EXPECT_GT(t.sweep(isa, "contraction"), 1);
}

// The default schedule's compute_root lines (a padded copy is one).
int rooted_copies(const RuleTester& t, Isa isa) {
  std::optional<schedule::Schedule> s = t.schedule(isa, {});
  EXPECT_TRUE(s.has_value());
  if (!s) return -1;
  int n = 0;
  for (const schedule::Directive& d : s->directives) n += d.kind == schedule::DirectiveKind::ComputeRoot;
  return n;
}

TEST_P(OuterAxisPadding, TemporalConvs) {
  const int64_t b = lanes();
  // 3x1x1, padding 1 at both ends of D = 5, three output blocks.
  RuleTester three("ConvBlocked", "tessera");
  three.input({1, 2, 5, 4, 6, b}).input({3, 2, 3, 1, 1, b, b}, true).input({3, b}, true)
      .attr("pads", ints({1, 0, 0, 1, 0, 0}));
  sweep(three, isa());
  EXPECT_EQ(rooted_copies(three, isa()), 0);
  // S3D's 7x1x1 with stride 2 in time and padding 3, D = 9 (odd).
  RuleTester seven("ConvBlocked", "tessera");
  seven.input({1, 1, 9, 3, 5, b}).input({2, 1, 7, 1, 1, b, b}, true)
      .attr("pads", ints({3, 0, 0, 3, 0, 0})).attr("strides", ints({2, 1, 1}));
  sweep(seven, isa());
  EXPECT_EQ(rooted_copies(seven, isa()), 0);
  // Padding at the end only (2 frames), dilation 2 in time, batch 2.
  RuleTester end("ConvBlocked", "tessera");
  end.input({2, 1, 6, 2, 3, b}).input({1, 1, 3, 1, 1, b, b}, true)
      .attr("pads", ints({0, 0, 0, 2, 0, 0})).attr("dilations", ints({2, 1, 1}));
  sweep(end, isa());
  EXPECT_EQ(rooted_copies(end, isa()), 0);
}

TEST_P(OuterAxisPadding, ChannelsAndGroups) {
  const int64_t b = lanes();
  // The real channels end inside the second input block (in_channels).
  RuleTester partial("ConvBlocked", "tessera");
  partial.input({1, 2, 4, 3, 4, b}).input({2, 2, 3, 1, 1, b, b}, true)
      .attr("pads", ints({1, 0, 0, 1, 0, 0})).attr("in_channels", Attribute::of_int(2 * b - 3));
  sweep(partial, isa());
  EXPECT_EQ(rooted_copies(partial, isa()), 0);
  // Grouped: each output block reads its own input block (windows of one).
  RuleTester grouped("ConvBlocked", "tessera");
  grouped.input({1, 2, 4, 3, 4, b}).input({2, 1, 3, 1, 1, b, b}, true)
      .attr("pads", ints({1, 0, 0, 1, 0, 0})).attr("group_div", Attribute::of_int(1))
      .attr("group_mul", Attribute::of_int(1));
  sweep(grouped, isa());
  EXPECT_EQ(rooted_copies(grouped, isa()), 0);
}

TEST_P(OuterAxisPadding, RowConvs2d) {
  const int64_t b = lanes();
  // Inception's 7x1, padding 3 on H = 9.
  RuleTester seven("ConvBlocked", "tessera");
  seven.input({1, 2, 9, 5, b}).input({2, 2, 7, 1, b, b}, true).input({2, b}, true).attr("pads", ints({3, 0, 3, 0}));
  sweep(seven, isa());
  EXPECT_EQ(rooted_copies(seven, isa()), 0);
  // 3x1 with stride 2 in H.
  RuleTester three("ConvBlocked", "tessera");
  three.input({1, 1, 8, 3, b}).input({1, 1, 3, 1, b, b}, true).attr("pads", ints({1, 0, 1, 0}))
      .attr("strides", ints({2, 1}));
  sweep(three, isa());
  EXPECT_EQ(rooted_copies(three, isa()), 0);
}

// Padding along a later axis still takes the padded copy (the condition
// would be tested at every row of the tile): a (1,3,3) video conv and a 1x7.
TEST_P(OuterAxisPadding, OtherAxesKeepThePaddedCopy) {
  const int64_t b = lanes();
  RuleTester spatial("ConvBlocked", "tessera");
  spatial.input({1, 1, 3, 4, 5, b}).input({1, 1, 1, 3, 3, b, b}, true).attr("pads", ints({0, 1, 1, 0, 1, 1}));
  EXPECT_EQ(rooted_copies(spatial, isa()), 1);
  RuleTester row("ConvBlocked", "tessera");
  row.input({1, 1, 4, 9, b}).input({1, 1, 1, 7, b, b}, true).attr("pads", ints({0, 3, 0, 3}));
  EXPECT_EQ(rooted_copies(row, isa()), 1);
  sweep(row, isa());
}

INSTANTIATE_TEST_SUITE_P(Jit, OuterAxisPadding, ::testing::Values(Isa::AVX512, Isa::AVX2),
                         [](const ::testing::TestParamInfo<Isa>& i) { return std::string(isa_name(i.param)); });

}  // namespace
}  // namespace tessera
