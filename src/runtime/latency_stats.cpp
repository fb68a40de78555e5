#include "runtime/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "support/error.h"

namespace tessera::runtime {

namespace {

// Percentile of already sorted samples.
double sorted_percentile(const std::vector<double>& x, double p) {
  const double h = static_cast<double>(x.size() - 1) * p / 100.0;
  const auto lo = static_cast<size_t>(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  return x[lo] + (h - static_cast<double>(lo)) * (x[lo + 1] - x[lo]);
}

void check_samples(const std::vector<double>& samples, const char* what) {
  TESSERA_CHECK(!samples.empty(), what, ": no samples");
  for (size_t i = 0; i < samples.size(); ++i)
    TESSERA_CHECK(std::isfinite(samples[i]), what, ": sample ", i, " is ", samples[i], " (must be finite)");
}

}  // namespace

double percentile(std::vector<double> samples, double p) {
  check_samples(samples, "percentile");
  TESSERA_CHECK(p >= 0 && p <= 100, "percentile: p = ", p, " is outside [0, 100]");
  std::sort(samples.begin(), samples.end());
  return sorted_percentile(samples, p);
}

LatencyStats latency_stats(const std::vector<double>& seconds) {
  check_samples(seconds, "latency statistics");
  std::vector<double> x = seconds;
  std::sort(x.begin(), x.end());
  TESSERA_CHECK(x.front() >= 0, "latency statistics: negative time ", x.front(), " s");
  LatencyStats s;
  s.runs = static_cast<int64_t>(x.size());
  s.min = x.front();
  s.max = x.back();
  double sum = 0;
  for (double v : x) sum += v;
  s.mean = sum / static_cast<double>(x.size());
  s.median = sorted_percentile(x, 50);
  s.p10 = sorted_percentile(x, 10);
  s.p90 = sorted_percentile(x, 90);
  return s;
}

std::string format_latency(const LatencyStats& stats) {
  double scale = 1e3;
  const char* unit = "ms";
  if (stats.median >= 1.0) {
    scale = 1.0;
    unit = "s";
  } else if (stats.median < 1e-3) {
    scale = 1e6;
    unit = "us";
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "median %.2f %s  p10 %.2f %s  p90 %.2f %s  (%lld run%s)", stats.median * scale, unit,
                stats.p10 * scale, unit, stats.p90 * scale, unit, static_cast<long long>(stats.runs),
                stats.runs == 1 ? "" : "s");
  return buf;
}

std::optional<int64_t> parse_status_bytes(std::string_view status, std::string_view key) {
  size_t pos = 0;
  while (pos < status.size()) {
    size_t end = status.find('\n', pos);
    if (end == std::string_view::npos) end = status.size();
    const std::string_view line = status.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':') continue;
    std::istringstream in(std::string(line.substr(key.size() + 1)));
    long long value = -1;
    std::string unit, rest;
    if (!(in >> value >> unit) || (in >> rest) || value < 0 || unit != "kB") return std::nullopt;
    if (value > std::numeric_limits<int64_t>::max() / 1024) return std::nullopt;
    return static_cast<int64_t>(value) * 1024;
  }
  return std::nullopt;
}

namespace {

std::optional<int64_t> status_bytes(std::string_view key) {
  std::ifstream in("/proc/self/status");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_status_bytes(text.str(), key);
}

}  // namespace

std::optional<int64_t> peak_resident_bytes() { return status_bytes("VmHWM"); }

std::optional<int64_t> resident_bytes() { return status_bytes("VmRSS"); }

}  // namespace tessera::runtime
