// PET's search after a budget cut it short (pet/search.h, pet/pet_db.h
// "cut"): a second search with the same budget measures nothing and picks
// what the first picked; a larger budget searches the rest, reusing what
// was measured; the model computes what it did (the reference interpreter).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "ops/registry.h"
#include "opt/passes.h"
#include "pet/search.h"
#include "pet_test_util.h"

namespace tessera::pet {
namespace {

using testing::pet::ModelBuilder;
using testing::pet::expect_same_outputs;
using testing::pet::random_inputs;
using testing::pet::dilation_averse;
using testing::pet::has_dilated_conv;

// `n` dilated 3x3 convs with relus between on 8x8 maps, conv i with 4 + i + 1
// outputs: n subprograms of n structures.
std::unique_ptr<Graph> dilated_chain(int n) {
  ModelBuilder b;
  Value* x = b.input("x", {1, 4, 8, 8});
  for (int i = 0; i < n; ++i)
    x = b.relu(b.conv(x, 4 + i + 1, 3, 3, {2, 2, 2, 2}, "c" + std::to_string(i), 1, 2), "r" + std::to_string(i));
  b.g->add_output(x);
  infer_graph(*b.g);
  return std::move(b.g);
}

SearchOptions options(double budget) {
  SearchOptions o;
  o.rounds = 1;
  o.max_estimate_ratio = 0;  // the fake costs decide alone
  o.stop_after_losers = 0;
  o.progress_after_seconds = 1e9;
  o.budget_seconds = budget;
  return o;
}

TEST(PetDbCut, RecordedReadBackAndCleared) {
  const std::string path = ::testing::TempDir() + "/pet_cut_db.tsv";
  std::filesystem::remove(path);
  {
    PetDb db(path);
    EXPECT_FALSE(db.cut("t:a"));
    db.record_cut("t:a", 12.5);
    db.record_cut("t:b", 60);
    db.record_cut("t:b", std::nullopt);  // searched to the end since
  }
  PetDb db(path);
  ASSERT_TRUE(db.cut("t:a"));
  EXPECT_DOUBLE_EQ(*db.cut("t:a"), 12.5);
  EXPECT_FALSE(db.cut("t:b"));
  std::filesystem::remove(path);
}

TEST(PetSearchResume, ASecondSearchWithTheSameBudgetMeasuresNothingALargerOneSearchesTheRest) {
  const std::string path = ::testing::TempDir() + "/pet_resume_db.tsv";
  std::filesystem::remove(path);
  std::unique_ptr<Graph> original = dilated_chain(6);
  const std::vector<Tensor> ins = random_inputs(*original, 4);
  int calls = 0;
  // First: every measurement takes 0.1 s, a budget of 1 s ends the search
  // after a few subprograms (each costs its original and a few candidates).
  std::unique_ptr<Graph> first = original->clone();
  SearchReport r1;
  {
    PetDb db(path);
    CostFn slow = [&](const Graph& c) {
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return dilation_averse(c);
    };
    r1 = optimize_program(*first, options(1.0), slow, db, "test");
  }
  ASSERT_TRUE(r1.budget_exhausted) << r1.to_text();
  ASSERT_LT(r1.searched, r1.subprograms);
  ASSERT_GE(r1.applied, 1) << r1.to_text();
  const int first_calls = calls;

  // Second, the same budget: nothing measured, the same choices.
  std::unique_ptr<Graph> second = original->clone();
  PetDb db2(path);
  CostFn counted = [&](const Graph& c) {
    ++calls;
    return dilation_averse(c);
  };
  const SearchReport r2 = optimize_program(*second, options(1.0), counted, db2, "test");
  EXPECT_EQ(calls, first_calls) << r2.to_text();
  EXPECT_EQ(r2.measured, 0);
  EXPECT_FALSE(r2.budget_exhausted) << r2.to_text();
  EXPECT_EQ(r2.searched, r2.subprograms);
  EXPECT_EQ(r2.left_to_larger_budget, r1.subprograms - r1.searched) << r2.to_text();
  EXPECT_EQ(r2.applied, r1.applied);
  EXPECT_EQ(structural_hash(*first), structural_hash(*second));
  EXPECT_NE(r2.to_text().find("left to a larger budget"), std::string::npos);

  // Third, a larger budget: the rest searched (measured), what was measured
  // before read from the database; every dilated conv replaced.
  std::unique_ptr<Graph> third = original->clone();
  const SearchReport r3 = optimize_program(*third, options(60), counted, db2, "test");
  EXPECT_GT(calls, first_calls) << r3.to_text();
  EXPECT_FALSE(r3.budget_exhausted);
  EXPECT_EQ(r3.left_to_larger_budget, 0);
  EXPECT_GT(r3.db_hits, 0);
  EXPECT_EQ(r3.applied, 6) << r3.to_text();
  EXPECT_FALSE(has_dilated_conv(*third));

  // Fourth, the larger budget again: everything replayed, nothing measured.
  const int third_calls = calls;
  std::unique_ptr<Graph> fourth = original->clone();
  const SearchReport r4 = optimize_program(*fourth, options(60), counted, db2, "test");
  EXPECT_EQ(calls, third_calls);
  EXPECT_EQ(r4.replayed, 6);
  EXPECT_EQ(structural_hash(*third), structural_hash(*fourth));

  // Each model still computes what the original does.
  for (Graph* g : {first.get(), second.get(), third.get()}) {
    fold_constants(*g);
    verify_graph(*g);
    expect_same_outputs(*original, *g, ins, 1e-5);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera::pet
