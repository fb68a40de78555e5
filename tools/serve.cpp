// The request loop of `tessera serve` (see serve.h).
#include "serve.h"

#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "frontend/onnx_tensor.h"
#include "support/error.h"
#include "support/file_util.h"

namespace tessera::tools {

namespace {

void reply(std::FILE* out, const std::string& line) {
  std::fputs(line.c_str(), out);
  std::fputc('\n', out);
  std::fflush(out);
}

// The request's count N (1 to 100000), or an error naming the request.
int count_of(std::istringstream& words, const std::string& cmd, const std::string& line) {
  long n = 0;
  TESSERA_CHECK(static_cast<bool>(words >> n) && n >= 1 && n <= 100000, "'", cmd,
                "' expects a count from 1 to 100000, got '", line, "'");
  return static_cast<int>(n);
}

std::string handle(CompiledModel& m, const std::vector<Tensor>& inputs, const std::string& line) {
  std::istringstream words(line);
  std::string cmd;
  words >> cmd;
  if (cmd == "run") {
    const int n = count_of(words, cmd, line);
    std::ostringstream o;
    o << "times";
    o.precision(6);
    for (int i = 0; i < n; ++i) {
      auto a = std::chrono::steady_clock::now();
      m.run(inputs);
      o << ' ' << std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
    }
    return o.str();
  }
  if (cmd == "callers") {
    // K threads sharing the model, N runs each: the wall time of them all.
    const int k = count_of(words, cmd, line), n = count_of(words, cmd, line);
    TESSERA_CHECK(k <= 64, "'callers' expects at most 64 threads, got ", k);
    std::vector<std::string> errors(static_cast<size_t>(k));
    auto a = std::chrono::steady_clock::now();
    {
      std::vector<std::jthread> threads;
      for (int t = 0; t < k; ++t)
        threads.emplace_back([&, t] {
          try {
            for (int i = 0; i < n; ++i) m.run(inputs);
          } catch (const std::exception& e) {
            errors[static_cast<size_t>(t)] = e.what();
          }
        });
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
    for (const std::string& e : errors) TESSERA_CHECK(e.empty(), e);
    std::ostringstream o;
    o.precision(6);
    o << "elapsed " << ms;
    return o.str();
  }
  if (cmd == "profile") {
    const int n = count_of(words, cmd, line);
    std::ostringstream o;
    o << "steps";
    o.precision(6);
    for (const StepProfile& st : m.profile(inputs, n)) o << ' ' << st.seconds * 1e3;
    return o.str();
  }
  if (cmd == "save") {
    std::string dir;
    std::getline(words >> std::ws, dir);
    TESSERA_CHECK(!dir.empty(), "'save' expects a directory");
    ensure_writable_directory(dir, "'save " + dir + "'");
    std::vector<Tensor> outs = m.run(inputs);
    for (size_t i = 0; i < outs.size(); ++i) write_npy(dir + "/output_" + std::to_string(i) + ".npy", outs[i]);
    return "saved " + std::to_string(outs.size());
  }
  TESSERA_FAIL("unknown request '", cmd, "' (requests: run N, callers K N, profile N, save DIR, quit)");
}

}  // namespace

int serve_loop(CompiledModel& m, const std::vector<Tensor>& inputs, std::istream& in, std::FILE* out) {
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line.rfind("quit", 0) == 0) break;
    try {
      reply(out, handle(m, inputs, line));
    } catch (const std::exception& e) {
      std::string msg = e.what();
      for (char& ch : msg)
        if (ch == '\n') ch = ' ';
      reply(out, "error " + msg);
    }
  }
  return 0;
}

}  // namespace tessera::tools
