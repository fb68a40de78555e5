// Per-store features of hand-written loop nests (value_features.h), each
// expected value worked out by hand from the loop nest in the comments; the
// column tables; the TenSet metrics added for learned models (top-k
// recall, network top-k score, pair counts, TenSet's per-task pairwise
// average and its bootstrap interval) on hand-made cases; and the dataset
// splits and cross-validation folds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "cost/dataset_split.h"
#include "cost/program_features.h"
#include "cost/ranking_metrics.h"
#include "cost/value_features.h"
#include "support/error.h"

namespace tessera::cost {
namespace {

using namespace loop;

HardwareDesc line64() {
  HardwareDesc hw;
  hw.line_bytes = 64;
  return hw;
}

// C[i, j] += A[i, k] * B[k, j], C 4x8, A 4x16, B 16x8 (f32), loops i(4) j(8) k(16), k innermost.
Kernel matmul() {
  Buffer A("A", DType::F32, {4, 16}), B("B", DType::F32, {16, 8}), C("C", DType::F32, {4, 8});
  Var i("i"), j("j"), k("k");
  Expr c_idx = i * 8 + j;
  Stmt s = store(C, load(C, c_idx) + load(A, i * 16 + k) * load(B, k * 8 + j), c_idx);
  Stmt body = for_loop(i, int_imm(0), int_imm(4), ForKind::Serial,
                       for_loop(j, int_imm(0), int_imm(8), ForKind::Serial,
                                for_loop(k, int_imm(0), int_imm(16), ForKind::Serial, s)));
  return Kernel{"matmul", {A, B}, {C}, body};
}

TEST(ValueFeatures, MatmulRowByHand) {
  ValueFeatures vf = value_features(matmul(), line64());
  ASSERT_EQ(vf.rows.size(), 1u);
  EXPECT_EQ(vf.stores[0], "C");
  const std::vector<double>& r = vf.rows[0];
  ASSERT_EQ(r.size(), static_cast<size_t>(kValueFeatureCount));
  const double runs = 4 * 8 * 16;  // 512 executions of the store
  // One multiply-add per execution, nothing else.
  EXPECT_EQ(r[column(ValueHead::FloatMad)], runs);
  for (ValueHead h : {ValueHead::FloatAdd, ValueHead::FloatMul, ValueHead::FloatDiv, ValueHead::FloatCmp,
                      ValueHead::FloatMath, ValueHead::IntOps, ValueHead::SelectOps})
    EXPECT_EQ(r[column(h)], 0) << value_feature_columns()[column(h)].name;
  EXPECT_EQ(r[column(ValueHead::VecLanes)], 1);
  EXPECT_EQ(r[column(ValueHead::VecNum)], 0);
  EXPECT_EQ(r[column(ValueHead::VecProd)], 1);
  EXPECT_EQ(r[column(ValueHead::ParallelLen)], 0);

  // Buffers by bytes: C (read and written: 2 x 512 x 4 bytes), then A and B
  // (512 x 4 each), tied, so by lines: B moves 8 elements (32 bytes) per k,
  // half a line, A one element: B first.
  auto at = [&](int slot, BufferFeature f) { return r[column(slot, f)]; };
  // C: read-write; 32 distinct elements, 128 bytes, 2 lines; k does not move
  // it: each of its two accesses fetches one line per run of the k loop
  // (512 / 16 runs); reuse over k (16), nothing between reuses but the
  // current element of each buffer (3 x 4 bytes).
  EXPECT_EQ(at(0, BufferFeature::IsReadWrite), 1);
  EXPECT_EQ(at(0, BufferFeature::IsRead), 0);
  EXPECT_EQ(at(0, BufferFeature::Bytes), 2 * runs * 4);
  EXPECT_EQ(at(0, BufferFeature::UniqueBytes), 32 * 4);
  EXPECT_EQ(at(0, BufferFeature::Lines), 2 * (runs / 16) * 1);
  EXPECT_EQ(at(0, BufferFeature::UniqueLines), 2);
  EXPECT_EQ(at(0, BufferFeature::ReuseLoop), 1);
  EXPECT_EQ(at(0, BufferFeature::ReuseCount), 16);
  EXPECT_EQ(at(0, BufferFeature::ReuseDistIter), 1);
  EXPECT_EQ(at(0, BufferFeature::ReuseDistBytes), 3 * 4);
  EXPECT_EQ(at(0, BufferFeature::BytesPerReuse), 2 * runs * 4 / 16);
  EXPECT_EQ(at(0, BufferFeature::UniqueLinesPerReuse), 2.0 / 16);
  EXPECT_EQ(at(0, BufferFeature::Stride), 1);  // j, the innermost loop that moves it
  // B: read; all 128 elements (512 bytes, 8 lines); per access half a line
  // (32-byte stride under a 64-byte line); reuse over i (4), 8 x 16
  // iterations apart, in which C's row (8 x 4), A's row (16 x 4) and all of
  // B (512) are touched.
  EXPECT_EQ(at(1, BufferFeature::IsRead), 1);
  EXPECT_EQ(at(1, BufferFeature::Bytes), runs * 4);
  EXPECT_EQ(at(1, BufferFeature::UniqueBytes), 512);
  EXPECT_EQ(at(1, BufferFeature::UniqueLines), 8);
  EXPECT_EQ(at(1, BufferFeature::Lines), runs * 32 / 64);
  EXPECT_EQ(at(1, BufferFeature::ReuseCount), 4);
  EXPECT_EQ(at(1, BufferFeature::ReuseDistIter), 8 * 16);
  EXPECT_EQ(at(1, BufferFeature::ReuseDistBytes), 32 + 64 + 512);
  EXPECT_EQ(at(1, BufferFeature::LinesPerReuse), runs * 32 / 64 / 4);
  EXPECT_EQ(at(1, BufferFeature::Stride), 8);
  // A: read; 64 elements (256 bytes, 4 lines); one element per k: 4 bytes
  // of a 64-byte line per access; reuse over j (8), 16 iterations apart, in
  // which C's element (4), A's row (64) and B's column (16 elements 32 bytes
  // apart, 64 bytes) are touched.
  EXPECT_EQ(at(2, BufferFeature::IsRead), 1);
  EXPECT_EQ(at(2, BufferFeature::UniqueBytes), 256);
  EXPECT_EQ(at(2, BufferFeature::UniqueLines), 4);
  EXPECT_EQ(at(2, BufferFeature::Lines), runs * 4 / 64);
  EXPECT_EQ(at(2, BufferFeature::ReuseCount), 8);
  EXPECT_EQ(at(2, BufferFeature::ReuseDistIter), 16);
  EXPECT_EQ(at(2, BufferFeature::ReuseDistBytes), 4 + 64 + 64);
  EXPECT_EQ(at(2, BufferFeature::Stride), 1);
  // No fourth buffer.
  EXPECT_EQ(at(3, BufferFeature::Bytes), 0);
  EXPECT_EQ(at(3, BufferFeature::ReuseNone), 0);

  // Arithmetic intensity, 2 flops per execution: k alone 2 x 16 / 132
  // bytes; j and k 2 x 128 / 608; all loops 2 x 512 / (128 + 256 + 512).
  const double l0 = 32.0 / 132, l1 = 256.0 / 608, l2 = 1024.0 / 896;
  EXPECT_DOUBLE_EQ(r[intensity_column(0)], l0);
  EXPECT_DOUBLE_EQ(r[intensity_column(9)], l2);
  // Sample 3 sits at level 3 x 2 / 9 = 2/3: between k alone and j, k.
  EXPECT_DOUBLE_EQ(r[intensity_column(3)], l0 + (l1 - l0) * 2.0 / 3);
  EXPECT_DOUBLE_EQ(r[intensity_column(6)], l1 + (l2 - l1) * 1.0 / 3);

  EXPECT_EQ(r[column(ValueTail::IsAlloc)], 0);
  EXPECT_EQ(r[column(ValueTail::OuterProd)], runs);
  EXPECT_EQ(r[column(ValueTail::NumLoops)], 3);
  EXPECT_EQ(r[column(ValueTail::InnermostExtent)], 16);
}

// parallel i(4): allocate T[8]; T[0:8] = exp(X[8i : 8i+8]); Y[8i : 8i+8] = T[0:8] * 2; then, outside
// the loop, Z[0] = Y[0] (a second store accessing Y: serial reuse).
TEST(ValueFeatures, AnnotationsAllocationAndSerialReuseByHand) {
  Buffer X("X", DType::F32, {32}), Y("Y", DType::F32, {32}), Z("Z", DType::F32, {1}), T("T", DType::F32, {});
  Var i("i");
  Expr row = ramp(i * 8, int_imm(1), 8), tmp = ramp(int_imm(0), int_imm(1), 8);
  Stmt loop = for_loop(i, int_imm(0), int_imm(4), ForKind::Parallel,
                       allocate(T, int_imm(8),
                                block({store(T, call("exp", {load(X, row)}), tmp),
                                       store(Y, load(T, tmp) * broadcast(float_imm(2.0), 8), row)})));
  Stmt body = block({loop, store(Z, load(Y, int_imm(0)), int_imm(0))});
  ValueFeatures vf = value_features(Kernel{"k", {X}, {Y, Z}, body}, line64());
  ASSERT_EQ(vf.rows.size(), 3u);
  EXPECT_EQ(vf.stores, (std::vector<std::string>{"T", "Y", "Z"}));
  const std::vector<double>& t = vf.rows[0];
  EXPECT_EQ(t[column(ValueHead::FloatMath)], 8 * 4);  // 8 lanes of exp, 4 times
  EXPECT_EQ(t[column(ValueHead::VecLanes)], 8);
  EXPECT_EQ(t[column(ValueHead::ParallelNum)], 1);
  EXPECT_EQ(t[column(ValueHead::ParallelProd)], 4);
  EXPECT_EQ(t[column(ValueHead::ParallelLen)], 4);
  EXPECT_EQ(t[column(ValueTail::IsAlloc)], 1);
  EXPECT_EQ(t[column(ValueTail::AllocBytes)], 32);
  EXPECT_EQ(t[column(ValueTail::AllocOuterProd)], 4);
  EXPECT_EQ(t[column(ValueTail::AllocInnerProd)], 1);
  // Buffers of T's store: X read and T written, 4 x 32 bytes each; X moves
  // 8 elements (32 bytes) per i, half a line per access (2 lines in all),
  // while T's index does not use i: one line per run of the i loop (1). So
  // X first. X: stride 1 between lanes, 128 distinct bytes, read by this
  // store only (no reuse); T: reused over i (4).
  EXPECT_EQ(t[column(0, BufferFeature::IsRead)], 1);
  EXPECT_EQ(t[column(0, BufferFeature::Bytes)], 4 * 32);
  EXPECT_EQ(t[column(0, BufferFeature::Lines)], 4 * 32.0 / 64);
  EXPECT_EQ(t[column(0, BufferFeature::UniqueBytes)], 128);
  EXPECT_EQ(t[column(0, BufferFeature::Stride)], 1);
  EXPECT_EQ(t[column(0, BufferFeature::ReuseNone)], 1);
  EXPECT_EQ(t[column(1, BufferFeature::IsWrite)], 1);
  EXPECT_EQ(t[column(1, BufferFeature::Lines)], 1);
  EXPECT_EQ(t[column(1, BufferFeature::ReuseLoop)], 1);
  EXPECT_EQ(t[column(1, BufferFeature::ReuseCount)], 4);
  const std::vector<double>& y = vf.rows[1];
  EXPECT_EQ(y[column(ValueHead::FloatMul)], 8 * 4);
  EXPECT_EQ(y[column(ValueTail::IsAlloc)], 0);
  // Y's store: Y (2 lines, as X above) before T (1); Y moves with i, and
  // the store of Z reads Y: serial reuse by two stores.
  EXPECT_EQ(y[column(0, BufferFeature::IsWrite)], 1);
  EXPECT_EQ(y[column(0, BufferFeature::ReuseSerial)], 1);
  EXPECT_EQ(y[column(0, BufferFeature::ReuseCount)], 2);
  EXPECT_EQ(y[column(1, BufferFeature::IsRead)], 1);
  const std::vector<double>& z = vf.rows[2];
  EXPECT_EQ(z[column(ValueTail::NumLoops)], 0);
  EXPECT_EQ(z[column(ValueTail::OuterProd)], 1);
  EXPECT_EQ(z[column(ValueHead::ParallelNum)], 0);
  // No loops: one access of 4 bytes, one line each; no float work: intensity 0.
  EXPECT_EQ(z[column(0, BufferFeature::Lines)], 1);
  EXPECT_EQ(z[intensity_column(0)], 0);
}

TEST(ValueFeatures, ColumnTablesMatchTheRows) {
  const auto& cols = value_feature_columns();
  ASSERT_EQ(cols.size(), static_cast<size_t>(kValueFeatureCount));
  std::set<std::string> names;
  for (const ColumnDoc& c : cols) {
    EXPECT_FALSE(c.doc.empty()) << c.name;
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate column " << c.name;
  }
  EXPECT_EQ(cols[column(2, BufferFeature::Stride)].name, "b2_stride");
  EXPECT_EQ(cols[intensity_column(4)].name, "ai_curve_4");
  EXPECT_EQ(cols[column(ValueTail::InnermostExtent)].name, "innermost_extent");
  EXPECT_EQ(hardware_features(line64()).size(), hardware_feature_columns().size());

  Kernel k = matmul();
  std::vector<float> row = program_features(Candidate{&k, nullptr}, line64(), 1);
  ASSERT_EQ(row.size(), program_feature_columns().size());
  // The sum over the one store, log-compressed: slog(512) = log2(513).
  EXPECT_FLOAT_EQ(row[column(ValueHead::FloatMad)], static_cast<float>(std::log2(513.0)));
  EXPECT_EQ(row.back(), 1);  // n_stores
  EXPECT_EQ(program_feature_columns().back().name, "n_stores");
}

TEST(RankingMetrics, TopKRecallByHand) {
  // Group 0: measured order 0,1,2,3; predicted order 1,0,3,2. Group 1 (2
  // candidates): the prediction reversed.
  CostGroups y{{1, 2, 3, 4}, {1, 2}}, p{{2, 1, 4, 3}, {2, 1}};
  // k = 1: group 0 picks 1 (best is 0): 0; group 1 picks 1: 0.
  EXPECT_DOUBLE_EQ(top_k_recall(y, p, 1), 0);
  // k = 2: group 0 {0,1} vs {1,0}: 1; group 1: both: 1.
  EXPECT_DOUBLE_EQ(top_k_recall(y, p, 2), 1);
  // k = 3: group 0 {0,1,2} vs {1,0,3}: 2/3, weight 4; group 1 (k cut to 2): 1, weight 2.
  EXPECT_DOUBLE_EQ(top_k_recall(y, p, 3), (2.0 / 3 * 4 + 1 * 2) / 6);
  EXPECT_THROW(top_k_recall(y, p, 0), Error);
}

TEST(RankingMetrics, ScoresBecomeCostsInTheSameOrder) {
  // Scores (higher = faster) that order the candidates as the measured costs
  // do rank them perfectly once made costs, and exactly wrong if taken as costs.
  CostGroups y{{1, 3, 2}, {5, 4}};
  const std::vector<double> s0{0.9, -2, 0.5}, s1{1, 7};
  EXPECT_EQ(costs_from_scores(s0), (std::vector<double>{-0.9, 2, -0.5}));
  EXPECT_DOUBLE_EQ(pairwise_accuracy(y, {costs_from_scores(s0), costs_from_scores(s1)}), 1);
  EXPECT_DOUBLE_EQ(pairwise_accuracy(y, {s0, s1}), 0);
}

TEST(RankingMetrics, NetworkTopKScoreByHand) {
  // Task A (runs twice): predicted first is the 2-second candidate, best 1;
  // its first two by prediction cost 2 and 3. Task B (once): predicted first is its best, 4.
  CostGroups y{{1, 2, 3}, {4, 5}}, p{{3, 1, 2}, {0, 1}};
  std::vector<double> w{2, 1};
  EXPECT_DOUBLE_EQ(network_top_k_score(y, p, w, 1), (2 * 1 + 4.0) / (2 * 2 + 4.0));
  EXPECT_DOUBLE_EQ(network_top_k_score(y, p, w, 2), (2 * 1 + 4.0) / (2 * 2 + 4.0));
  EXPECT_DOUBLE_EQ(network_top_k_score(y, p, w, 3), 1);
  EXPECT_THROW(network_top_k_score(y, p, {1}, 1), Error);
}

TEST(RankingMetrics, PairsPerTaskAverageAndIntervalByHand) {
  // Group 0: 4 candidates, one tie (costs 2 and 2): 5 pairs; the prediction
  // orders (0,1) (0,2) (0,3) (1,3) right and (2,3)... worked pair by pair below.
  // y = {1, 2, 2, 3}, p = {1, 3, 2, 2}:
  //   (0,1) 1<2, 1<3 right; (0,2) 1<2, 1<2 right; (0,3) 1<3, 1<2 right;
  //   (1,2) tie in y: not a pair; (1,3) 2<3, 3>2 wrong; (2,3) 2<3, p tie: half.
  //   3.5 of 5.
  // Group 1: 2 candidates reversed: 0 of 1. Group 2: one candidate: no pair.
  CostGroups y{{1, 2, 2, 3}, {1, 2}, {7}}, p{{1, 3, 2, 2}, {2, 1}, {0}};
  EXPECT_EQ(comparable_pairs(y), 6);
  EXPECT_DOUBLE_EQ(pairwise_accuracy(y, p), 3.5 / 6);
  // TenSet: per group, weighted by its size, over groups with a pair: (4 × 0.7 + 2 × 0) / 6.
  EXPECT_DOUBLE_EQ(per_task_pairwise_accuracy(y, p), 4 * 0.7 / 6);
  const Interval ci = pairwise_interval(y, p, 0.95, 500, 3);
  // Resampled groups can only give accuracies between the groups' own (0 and 0.7).
  EXPECT_GE(ci.low, 0.0);
  EXPECT_LE(ci.high, 0.7);
  EXPECT_LT(ci.low, ci.high);
  EXPECT_EQ(pairwise_interval(y, p, 0.95, 500, 3).low, ci.low);  // deterministic
  // Every group right: no spread to resample.
  CostGroups same{{1, 2, 3}, {4, 5}};
  const Interval exact = pairwise_interval(same, same);
  EXPECT_DOUBLE_EQ(exact.low, 1);
  EXPECT_DOUBLE_EQ(exact.high, 1);
  EXPECT_THROW(pairwise_interval(y, p, 1.5), Error);
}

std::vector<SplitItem> split_items() {
  std::vector<SplitItem> items;
  for (int t = 0; t < 10; ++t)
    for (const char* target : {"avx2-t1", "avx2-t2"})
      for (int c = 0; c < 20; ++c)
        items.push_back({"task" + std::to_string(t), target, t < 3 ? std::vector<std::string>{"resnet", "vgg"}
                                                                     : std::vector<std::string>{"vgg"}});
  return items;
}

TEST(DatasetSplit, EachSplitHoldsOutWhatItSays) {
  const std::vector<SplitItem> items = split_items();
  SplitOptions o;
  o.split = Split::WithinTask;
  o.test_share = 0.1;
  std::vector<bool> t = test_items(items, o);
  // 2 of every (task, target) group's 20 candidates.
  for (size_t g = 0; g < items.size(); g += 20)
    EXPECT_EQ(std::count(t.begin() + static_cast<long>(g), t.begin() + static_cast<long>(g) + 20, true), 2) << g;
  EXPECT_EQ(test_items(items, o), t);  // deterministic
  o.seed = 2;
  EXPECT_NE(test_items(items, o), t);

  o.split = Split::ByTask;
  o.test_share = 0.2;
  t = test_items(items, o);
  std::set<std::string> held, kept;
  for (size_t i = 0; i < items.size(); ++i) (t[i] ? held : kept).insert(items[i].task);
  EXPECT_EQ(held.size(), 2u);
  for (const std::string& h : held) EXPECT_EQ(kept.count(h), 0u) << h;

  o.split = Split::ByTarget;
  o.held_out = "avx2-t2";
  t = test_items(items, o);
  for (size_t i = 0; i < items.size(); ++i) EXPECT_EQ(t[i], items[i].target == "avx2-t2");
  o.held_out = "avx512-t1";
  EXPECT_THROW(test_items(items, o), Error);

  o.split = Split::ByNetwork;
  o.held_out = "resnet";
  t = test_items(items, o);
  EXPECT_EQ(std::count(t.begin(), t.end(), true), 3 * 2 * 20);  // tasks 0-2 are in resnet
  EXPECT_EQ(parse_split("by-network"), Split::ByNetwork);
  EXPECT_THROW(parse_split("random"), Error);
}

TEST(DatasetSplit, FoldsJudgeEveryCandidateOnce) {
  std::vector<SplitItem> items = split_items();
  items.push_back({"lone", "avx2-t1", {}});  // a group of one
  for (int c = 0; c < 7; ++c) items.push_back({"seven", "avx2-t1", {}});
  const std::vector<int> f = within_task_folds(items, 5, 1);
  ASSERT_EQ(f.size(), items.size());  // one fold per candidate: each is judged exactly once
  std::map<std::pair<std::string, std::string>, std::vector<int>> per_group;  // fold sizes
  for (size_t i = 0; i < items.size(); ++i) {
    ASSERT_GE(f[i], 0);
    ASSERT_LT(f[i], 5);
    auto& sizes = per_group[{items[i].task, items[i].target}];
    sizes.resize(5);
    ++sizes[static_cast<size_t>(f[i])];
  }
  for (const auto& [key, sizes] : per_group) {
    const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
    EXPECT_LE(*hi - *lo, 1) << key.first << " on " << key.second;
  }
  EXPECT_EQ(per_group.at({"task0", "avx2-t1"}), (std::vector<int>{4, 4, 4, 4, 4}));
  EXPECT_EQ(per_group.at({"seven", "avx2-t1"}), (std::vector<int>{2, 2, 1, 1, 1}));
  EXPECT_EQ(within_task_folds(items, 5, 1), f);  // deterministic
  EXPECT_NE(within_task_folds(items, 5, 2), f);
  EXPECT_THROW(within_task_folds(items, 1, 1), Error);
}

}  // namespace
}  // namespace tessera::cost
