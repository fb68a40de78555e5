// Boxes (pet/box.h): the regions PET's verifier reports and its corrector
// recomputes.
#include <gtest/gtest.h>

#include "pet/box.h"

namespace tessera::pet {
namespace {

Box box(std::vector<int64_t> lo, std::vector<int64_t> hi) { return Box{std::move(lo), std::move(hi)}; }

TEST(PetBox, VolumeContainsAndIntersect) {
  const Box a = box({0, 2}, {4, 6});
  EXPECT_EQ(a.volume(), 16);
  EXPECT_TRUE(a.contains({3, 5}));
  EXPECT_FALSE(a.contains({3, 6}));
  EXPECT_FALSE(a.contains({3}));
  const Box b = box({2, 0}, {8, 3});
  EXPECT_EQ(a.intersect(b), box({2, 2}, {4, 3}));
  EXPECT_TRUE(a.intersect(box({5, 0}, {6, 9})).empty());
  EXPECT_EQ(a.to_string(), "[0:4, 2:6]");
  EXPECT_EQ(whole_box({2, 3, 4}).volume(), 24);
}

TEST(PetBox, CoveredVolumeCountsOverlapsOnce) {
  // Checked against marking every element of a 10x10 grid.
  const std::vector<Box> boxes = {box({0, 0}, {4, 4}), box({2, 2}, {6, 6}), box({5, 0}, {10, 1}),
                                  box({3, 3}, {3, 9})};
  int64_t marked = 0;
  for (int64_t i = 0; i < 10; ++i)
    for (int64_t j = 0; j < 10; ++j) {
      bool in = false;
      for (const Box& b : boxes) in = in || b.contains({i, j});
      marked += in;
    }
  EXPECT_EQ(covered_volume(boxes), marked);
  EXPECT_EQ(covered_volume({}), 0);
}

}  // namespace
}  // namespace tessera::pet
