// A long run's progress line (see progress.h).
#include "tune/progress.h"

#include <unistd.h>

#include <cstdio>

namespace tessera::tune {

Progress::Progress(bool on, std::string prefix)
    : on_(on), tty_(on && ::isatty(2)), prefix_(std::move(prefix)),
      last_(std::chrono::steady_clock::now() - std::chrono::hours(1)) {}

void Progress::show(const std::string& text, bool force) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!tty_ && !force && std::chrono::duration<double>(now - last_).count() < 10) return;
  last_ = now;
  if (tty_) std::fprintf(stderr, "\r\033[K%s%s", prefix_.c_str(), text.c_str());
  else std::fprintf(stderr, "%s%s\n", prefix_.c_str(), text.c_str());
}

void Progress::done() {
  if (tty_) std::fputc('\n', stderr);
}

std::string duration_text(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return buf;
}

}  // namespace tessera::tune
