// A long run's progress line on stderr (the tuner's, dataset collection's):
// on a terminal one line rewritten in place, else a line every few seconds
// (or when forced), so a log stays readable.
#pragma once

#include <chrono>
#include <string>

namespace tessera::tune {

class Progress {
 public:
  // `on` false: shows nothing. `prefix` starts every line.
  explicit Progress(bool on, std::string prefix = "");
  void show(const std::string& text, bool force = false);
  // Ends the rewritten line (a terminal); a no-op otherwise.
  void done();

 private:
  bool on_, tty_;
  std::string prefix_;
  std::chrono::steady_clock::time_point last_;
};

// "42s", "3m07s".
std::string duration_text(double seconds);

}  // namespace tessera::tune
