// Latency statistics against hand-computed values (linear-interpolation
// percentiles, odd and even counts, one sample), the report line, input
// errors, and the /proc/self/status peak-memory reader.
#include "runtime/latency_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "support/error.h"

namespace tessera::runtime {
namespace {

TEST(LatencyStats, OddCount) {
  // Sorted: 1 2 3 4 5 ms. p10 at index 0.4, p90 at index 3.6.
  const LatencyStats s = latency_stats({0.003, 0.001, 0.005, 0.002, 0.004});
  EXPECT_EQ(s.runs, 5);
  EXPECT_DOUBLE_EQ(s.min, 0.001);
  EXPECT_DOUBLE_EQ(s.max, 0.005);
  EXPECT_NEAR(s.mean, 0.003, 1e-15);
  EXPECT_DOUBLE_EQ(s.median, 0.003);
  EXPECT_NEAR(s.p10, 0.0014, 1e-15);
  EXPECT_NEAR(s.p90, 0.0046, 1e-15);
}

TEST(LatencyStats, EvenCount) {
  // Sorted: 10 20 30 40 s. Median at index 1.5, p10 at 0.3, p90 at 2.7.
  const LatencyStats s = latency_stats({40, 10, 30, 20});
  EXPECT_EQ(s.runs, 4);
  EXPECT_DOUBLE_EQ(s.median, 25);
  EXPECT_NEAR(s.p10, 13, 1e-12);
  EXPECT_NEAR(s.p90, 37, 1e-12);
  EXPECT_DOUBLE_EQ(s.mean, 25);
  EXPECT_DOUBLE_EQ(s.min, 10);
  EXPECT_DOUBLE_EQ(s.max, 40);
}

TEST(LatencyStats, OneSampleAndTies) {
  LatencyStats s = latency_stats({0.5});
  EXPECT_EQ(s.runs, 1);
  for (double v : {s.min, s.max, s.mean, s.median, s.p10, s.p90}) EXPECT_DOUBLE_EQ(v, 0.5);
  s = latency_stats({2, 2, 2, 7});
  EXPECT_DOUBLE_EQ(s.median, 2);
  EXPECT_DOUBLE_EQ(s.p90, 5.5);  // index 2.7: 2 + 0.7 * 5
  EXPECT_DOUBLE_EQ(s.mean, 3.25);
}

TEST(LatencyStats, Percentile) {
  // 11 samples 0..100: the p-th percentile is p itself.
  std::vector<double> x;
  for (int i = 10; i >= 0; --i) x.push_back(10.0 * i);
  for (double p : {0.0, 10.0, 25.0, 50.0, 73.0, 100.0}) EXPECT_NEAR(percentile(x, p), p, 1e-12) << p;
  EXPECT_DOUBLE_EQ(percentile({1, 2}, 50), 1.5);
  EXPECT_THROW(percentile(x, -1), Error);
  EXPECT_THROW(percentile(x, 100.5), Error);
  EXPECT_THROW(percentile({}, 50), Error);
}

TEST(LatencyStats, BadSamplesThrow) {
  EXPECT_THROW(latency_stats({}), Error);
  EXPECT_THROW(latency_stats({0.1, -0.001}), Error);
  EXPECT_THROW(latency_stats({0.1, std::nan("")}), Error);
  EXPECT_THROW(latency_stats({std::numeric_limits<double>::infinity()}), Error);
}

TEST(LatencyStats, Format) {
  LatencyStats s;
  s.runs = 50;
  s.median = 0.01234;
  s.p10 = 0.01201;
  s.p90 = 0.0132;
  EXPECT_EQ(format_latency(s), "median 12.34 ms  p10 12.01 ms  p90 13.20 ms  (50 runs)");
  s.runs = 1;
  s.median = s.p10 = s.p90 = 2.5;
  EXPECT_EQ(format_latency(s), "median 2.50 s  p10 2.50 s  p90 2.50 s  (1 run)");
  s.runs = 1000;
  s.median = 12.5e-6;
  s.p10 = 12e-6;
  s.p90 = 1.5e-3;
  EXPECT_EQ(format_latency(s), "median 12.50 us  p10 12.00 us  p90 1500.00 us  (1000 runs)");
}

TEST(LatencyStats, ParseStatus) {
  const std::string status =
      "Name:\ttessera_tests\n"
      "VmPeak:\t  900000 kB\n"
      "VmHWM:\t   123456 kB\n"
      "VmRSS:\t    65536 kB\n"
      "Threads:\t2\n";
  EXPECT_EQ(parse_status_bytes(status, "VmHWM"), int64_t{123456} * 1024);
  EXPECT_EQ(parse_status_bytes(status, "VmRSS"), int64_t{64} << 20);
  EXPECT_EQ(parse_status_bytes(status, "VmSwap"), std::nullopt);
  EXPECT_EQ(parse_status_bytes(status, "Vm"), std::nullopt);       // a prefix of a key is not the key
  EXPECT_EQ(parse_status_bytes(status, "Threads"), std::nullopt);  // no kB unit
  EXPECT_EQ(parse_status_bytes("VmHWM:\tlots kB\n", "VmHWM"), std::nullopt);
  EXPECT_EQ(parse_status_bytes("VmHWM: 12 kB", "VmHWM"), 12 * 1024);  // no final newline
  EXPECT_EQ(parse_status_bytes("", "VmHWM"), std::nullopt);
}

TEST(LatencyStats, PeakResidentGrowsWithTouchedMemory) {
  const std::optional<int64_t> before = peak_resident_bytes();
  ASSERT_TRUE(before.has_value());  // Linux
  constexpr size_t kBytes = 48 << 20;
  std::unique_ptr<char[]> block(new char[kBytes]);
  std::memset(block.get(), 1, kBytes);
  const std::optional<int64_t> after = peak_resident_bytes();
  ASSERT_TRUE(after.has_value());
  EXPECT_GE(*after, *before);
  EXPECT_GE(*after, static_cast<int64_t>(kBytes));
  EXPECT_EQ(block[kBytes - 1], 1);
}

}  // namespace
}  // namespace tessera::runtime
