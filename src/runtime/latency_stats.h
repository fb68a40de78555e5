// Latency statistics for benchmark reports (median and spread of per-run
// times) and the process's peak resident memory.
//
// Percentiles use linear interpolation between the closest ranks (the
// default of numpy.percentile, "type 7"): for n sorted samples x[0..n-1],
// the p-th percentile is at fractional index h = (n - 1) * p / 100, i.e.
// x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]). The median
// is the 50th percentile (the mean of the middle two for even n).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::runtime {

struct LatencyStats {
  int64_t runs = 0;
  // In seconds.
  double min = 0, max = 0, mean = 0, median = 0, p10 = 0, p90 = 0;
};

// The p-th percentile (p in [0, 100]) of the samples by linear
// interpolation; throws tessera::Error for no samples, a non-finite sample or
// p out of range.
double percentile(std::vector<double> samples, double p);

// Statistics of per-run times in seconds; throws tessera::Error when there
// are no samples or one is negative or not finite.
LatencyStats latency_stats(const std::vector<double>& seconds);

// "median 12.34 ms  p10 12.01 ms  p90 13.20 ms  (50 runs)": two decimals, in
// the unit that suits the median (s, ms or us), the same for all three.
std::string format_latency(const LatencyStats& stats);

// The peak resident set size of this process in bytes (VmHWM in
// /proc/self/status), or nullopt where that is not available.
std::optional<int64_t> peak_resident_bytes();
// The current resident set size of this process in bytes (VmRSS), or nullopt.
std::optional<int64_t> resident_bytes();

// The value of a "Key:  1234 kB" line of /proc/<pid>/status text in bytes,
// or nullopt when the key is missing or its line is malformed.
std::optional<int64_t> parse_status_bytes(std::string_view status, std::string_view key);

}  // namespace tessera::runtime
