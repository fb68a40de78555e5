// The tuning report: its weighted sums and closing table (see tune_report.h).
#include "tune/tune_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tune/progress.h"

namespace tessera::tune {

std::string ms_text(double s) {
  if (!std::isfinite(s)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s * 1e3);
  return buf;
}

double TuneReport::weighted_default_ms() const {
  double s = 0;
  for (const TaskReport& t : tasks)
    if (std::isfinite(t.default_seconds)) s += t.weight * t.default_seconds * 1e3;
  return s;
}

double TuneReport::weighted_tuned_ms() const {
  double s = 0;
  for (const TaskReport& t : tasks)
    if (std::isfinite(t.default_seconds)) s += t.weight * std::min(t.best_seconds, t.default_seconds) * 1e3;
  return s;
}

namespace {

// The graph choices' lines of the closing table ("" when the model has none).
std::string graph_choice_table(const GraphPhaseResult& g) {
  if (g.choices.empty()) return "";
  std::string out;
  char line[768];
  std::snprintf(line, sizeof line, "graph choices (%s, %d measured, %d from records, %d errors; guard: %d comparisons, %d dropped):\n",
                duration_text(g.seconds).c_str(), g.measured, g.reused, g.errors, g.guard_comparisons, g.guard_dropped);
  out += line;
  for (const GraphChoiceReport& c : g.choices) {
    const std::string tuned = c.tuned_tile < 0 ? "estimate" : winograd_tile_name(c.tuned_tile);
    std::snprintf(line, sizeof line, "  winograd %-48s %2d conv(s): %s -> %s, model %s -> %s ms (tried: %s)\n",
                  c.geometry.c_str(), c.convs, c.estimated.c_str(), tuned.c_str(),
                  c.default_ms > 0 ? ms_text(c.default_ms * 1e-3).c_str() : "-",
                  c.default_ms > 0 ? ms_text(c.tuned_ms * 1e-3).c_str() : "-", c.tried.empty() ? "nothing" : c.tried.c_str());
    out += line;
  }
  return out;
}

}  // namespace

std::string report_table(const TuneReport& r) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%-4s %-60s %6s %8s %7s %12s %12s %7s %7s\n", "#", "task", "weight", "measured",
                "ranked", "default ms", "tuned ms", "speedup", "errors");
  out += line;
  for (size_t i = 0; i < r.tasks.size(); ++i) {
    const TaskReport& t = r.tasks[i];
    std::string desc = t.description.size() > 60 ? t.description.substr(0, 57) + "..." : t.description;
    if (!t.skipped.empty()) {
      std::snprintf(line, sizeof line, "%-4zu %-60s %6d  not tuned: %s\n", i + 1, desc.c_str(), t.weight, t.skipped.c_str());
      out += line;
      continue;
    }
    const double best = std::min(t.best_seconds, t.default_seconds);
    std::snprintf(line, sizeof line, "%-4zu %-60s %6d %8d %7d %12s %12s %6.2fx %7d\n", i + 1, desc.c_str(), t.weight,
                  t.measured + t.reused, t.ranked, ms_text(t.default_seconds).c_str(), ms_text(best).c_str(),
                  std::isfinite(best) && best > 0 ? t.default_seconds / best : 1.0, t.errors);
    out += line;
  }
  std::snprintf(line, sizeof line, "sum of weight x task time: default %.3f ms, tuned %.3f ms (%.2fx)\n",
                r.weighted_default_ms(), r.weighted_tuned_ms(),
                r.weighted_tuned_ms() > 0 ? r.weighted_default_ms() / r.weighted_tuned_ms() : 1.0);
  out += line;
  if (r.model_default_ms > 0) {
    std::snprintf(line, sizeof line,
                  "model end to end (median, interleaved): default %.3f ms, tuned %.3f ms (%.2fx); outputs differ by %.2g "
                  "(relative)\n",
                  r.model_default_ms, r.model_tuned_ms, r.model_default_ms / r.model_tuned_ms, r.output_difference);
    out += line;
  }
  if (r.guard_choices > 0) {
    std::snprintf(line, sizeof line,
                  "model guard: kept %d of %d tuned tasks' schedules (%d model comparisons; model with them %.3fx the "
                  "default's time)\n",
                  r.guard_choices - r.guard_dropped, r.guard_choices, r.guard_comparisons, r.guard_ratio);
    out += line;
  }
  out += graph_choice_table(r.graph);
  if (const PrequentialTally& p = r.prequential; p.rounds > 0) {
    std::snprintf(line, sizeof line,
                  "pre-trained model: of %lld pairs of measurements, fine-tuned online ordered %.3f right, as loaded "
                  "%.3f; the model as loaded ranked %d of %d rounds\n",
                  p.pairs, p.pairs ? p.online_right / static_cast<double>(p.pairs) : 0.0,
                  p.pairs ? p.loaded_right / static_cast<double>(p.pairs) : 0.0, p.loaded_ranked, p.rounds);
    out += line;
  }
  std::snprintf(line, sizeof line, "search %s: %d measured, %d from records, %d errors, %d worker restarts\n",
                duration_text(r.search_seconds).c_str(), r.measured, r.reused, r.errors, r.worker_restarts);
  out += line;
  return out;
}

}  // namespace tessera::tune
