// A wall-clock stopwatch on the monotonic clock: the one way the project
// times a phase (PET's search, timing a compiled graph), instead of each file
// spelling out steady_clock and duration<double> again.
#pragma once

#include <chrono>

namespace tessera {

class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;

  Stopwatch() : start_(Clock::now()) {}

  // Seconds since construction or the last restart().
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  // Starts again from now; returns the seconds of the lap that ended.
  double restart() {
    const Clock::time_point now = Clock::now();
    const double s = std::chrono::duration<double>(now - start_).count();
    start_ = now;
    return s;
  }

 private:
  Clock::time_point start_;
};

// Adds the seconds a scope takes to `total` when it ends (a phase's share of
// a report: `{ ScopedSeconds t(report.verify_seconds); verify(...); }`).
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double& total) : total_(total) {}
  ~ScopedSeconds() { total_ += watch_.seconds(); }
  ScopedSeconds(const ScopedSeconds&) = delete;
  ScopedSeconds& operator=(const ScopedSeconds&) = delete;

 private:
  double& total_;
  Stopwatch watch_;
};

}  // namespace tessera
