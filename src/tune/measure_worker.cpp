// The measurement worker and the tuner's handle on it (see measure_worker.h).
#include "tune/measure_worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <map>
#include <memory>

#include "runtime/value_oracle.h"
#include "support/error.h"
#include "support/thread_pool.h"
#include "tune/model_timer.h"
#include "tune/task_space.h"

namespace tessera::tune {

std::string WorkerConfig::to_json() const {
  nlohmann::json j = {{"model", nlohmann::json::parse(model.to_json())},
                      {"min_repeats", measure.timing.min_repeats},
                      {"max_repeats", measure.timing.max_repeats},
                      {"min_seconds", measure.timing.min_seconds},
                      {"flush_caches", measure.timing.flush_caches},
                      {"seed", measure.seed},
                      {"tolerance", measure.tolerance}};
  return j.dump();
}

WorkerConfig WorkerConfig::from_json(const std::string& text) {
  WorkerConfig c;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    c.model = ModelConfig::from_json(j.at("model").dump());
    c.measure.isa = c.model.isa;
    c.measure.timing.min_repeats = j.at("min_repeats").get<int>();
    c.measure.timing.max_repeats = j.at("max_repeats").get<int>();
    c.measure.timing.min_seconds = j.at("min_seconds").get<double>();
    c.measure.timing.flush_caches = j.at("flush_caches").get<bool>();
    c.measure.seed = j.at("seed").get<uint64_t>();
    c.measure.tolerance = j.at("tolerance").get<double>();
  } catch (const nlohmann::json::exception& e) {
    TESSERA_FAIL("measurement worker configuration: ", e.what());
  }
  return c;
}

// --- the worker -----------------------------------------------------------------

namespace {

// One task as the worker measures it: its space and its bench, made on first use.
struct WorkerTask {
  const compile::Task* task = nullptr;
  std::unique_ptr<TaskSpace> space;
  std::unique_ptr<TaskBench> bench;
};

nlohmann::json reply(const Measurement& m) {
  return {{"error", static_cast<int>(m.error)}, {"costs", m.costs}, {"baseline", m.baseline}, {"message", m.message}};
}

}  // namespace

int run_measure_worker(const std::string& config_json, std::istream& in, std::ostream& out) {
  WorkerConfig cfg;
  TuningModel model;
  try {
    cfg = WorkerConfig::from_json(config_json);
    model = open_model(cfg.model);
  } catch (const std::exception& e) {
    out << nlohmann::json{{"ready", false}, {"message", e.what()}}.dump() << "\n" << std::flush;
    return 1;
  }
  if (cfg.model.threads > 0) ThreadPool::global().set_threads(cfg.model.threads);
  runtime::ValueOracle oracle(model.executor->graph(), model.inputs);
  InputValues values = [&oracle](const Value* v) -> const Tensor* {
    try {
      return &oracle.value(v);
    } catch (const std::exception&) {
      return nullptr;  // random values then
    }
  };
  ModelTimer timer(*model.executor, model.inputs, cfg.measure.timing);
  std::map<std::string, WorkerTask> tasks;
  std::vector<std::string> keys;
  for (const runtime::TaskUse& u : model.tasks) {
    std::string key = compile::key_text(u.task->key);
    tasks[key].task = u.task.get();
    keys.push_back(key);
  }
  out << nlohmann::json{{"ready", true}, {"tasks", keys}}.dump() << "\n" << std::flush;
  const Target machine = Target::for_isa(cfg.model.isa);
  std::string fault;  // the test hook (measure_worker.h)
  if (const char* f = std::getenv("TESSERA_TUNE_FAULT"); f && std::string_view(f).rfind("wrong-output:", 0) == 0)
    fault = std::string(f).substr(13);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Measurement m;
    try {
      nlohmann::json req = nlohmann::json::parse(line);
      auto it = tasks.find(req.at("task").get<std::string>());
      TESSERA_CHECK(it != tasks.end(), "no task ", req.at("task").get<std::string>(), " in the model");
      WorkerTask& t = it->second;
      if (!t.space) t.space = std::make_unique<TaskSpace>(*t.task, machine);
      std::optional<schedule::Schedule> s = t.space->schedule_at(schedule::SchedulePoint::parse(req.at("point").get<std::string>()));
      if (!s) {
        m.error = MeasureError::Lowering;
        m.message = "the point is not valid for " + t.task->describe();
      } else {
        if (!t.bench) {
          const uint64_t key = t.task->key;
          Timer in_model = [&timer, key](const std::optional<schedule::Schedule>& sched) {
            return timer.time_task(key, sched);
          };
          t.bench = std::make_unique<TaskBench>(*t.task, cfg.measure, values, in_model);
        }
        const std::string point = req.at("point").get<std::string>();
        m = t.bench->measure(s, !fault.empty() && point.find(fault) != std::string::npos);
      }
    } catch (const std::exception& e) {
      m = Measurement{};
      m.error = MeasureError::Run;
      m.message = e.what();
    }
    out << reply(m).dump() << "\n" << std::flush;
  }
  return 0;
}

// --- the tuner's side -----------------------------------------------------------

MeasureWorker::MeasureWorker(std::string exe, WorkerConfig config, double candidate_seconds, bool show_worker_errors)
    : exe_(std::move(exe)), config_(std::move(config)), candidate_seconds_(candidate_seconds),
      show_errors_(show_worker_errors) {}

MeasureWorker::~MeasureWorker() { stop(); }

void MeasureWorker::stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  if (to_ >= 0) ::close(to_);
  pid_ = -1;
  to_ = from_ = -1;
  buffer_.clear();
}

void MeasureWorker::start() {
  int fds[2];
  TESSERA_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0,
                "cannot start a measurement worker: socketpair: ", std::strerror(errno));
  const std::string json = config_.to_json();
  const char* argv[] = {exe_.c_str(), "tune-worker", json.c_str(), nullptr};
  const int quiet = show_errors_ ? -1 : ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::dup2(fds[1], 0);
    ::dup2(fds[1], 1);
    if (quiet >= 0) ::dup2(quiet, 2);
    ::execv(argv[0], const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(fds[1]);
  if (quiet >= 0) ::close(quiet);
  TESSERA_CHECK(pid > 0, "cannot start a measurement worker: fork: ", std::strerror(errno));
  pid_ = pid;
  to_ = from_ = fds[0];
  if (started_once_) ++restarts_;
  started_once_ = true;
  std::string line;
  if (read_line(line, 1800) != Read::Line) {
    stop();
    TESSERA_FAIL("the measurement worker (", exe_, " tune-worker) did not start");
  }
  nlohmann::json ready;
  try {
    ready = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception&) {
    stop();
    TESSERA_FAIL("the measurement worker wrote '", line, "' instead of its ready line");
  }
  if (!ready.value("ready", false)) {
    stop();
    TESSERA_FAIL("the measurement worker cannot open the model: ", ready.value("message", std::string("?")));
  }
  tasks_.clear();
  for (const auto& k : ready.at("tasks")) tasks_.insert(k.get<std::string>());
}

MeasureWorker::Read MeasureWorker::read_line(std::string& line, double deadline_s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return Read::Line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
    if (left <= 0) return Read::Timeout;
    pollfd p{from_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return Read::Timeout;
    if (r < 0) return Read::End;
    char buf[4096];
    ssize_t n = ::read(from_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Read::End;
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

bool MeasureWorker::has_task(const std::string& task_key) {
  if (pid_ < 0) start();
  return tasks_.count(task_key) != 0;
}

Measurement MeasureWorker::measure(const std::string& task_key, const std::string& point) {
  if (pid_ < 0) start();
  TESSERA_CHECK(tasks_.count(task_key), "the measurement worker has no task ", task_key,
                " (it opened the model differently from the tuner)");
  std::string req = nlohmann::json{{"task", task_key}, {"point", point}}.dump() + "\n";
  Measurement m;
  for (size_t off = 0; off < req.size();) {
    ssize_t n = ::send(to_, req.data() + off, req.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      stop();
      m.error = MeasureError::Run;
      m.message = "the measurement worker stopped reading";
      return m;
    }
    off += static_cast<size_t>(n);
  }
  std::string line;
  if (Read r = read_line(line, candidate_seconds_); r != Read::Line) {
    int status = 0;
    if (r == Read::End && ::waitpid(pid_, &status, 0) == pid_) {
      pid_ = -1;
      m.error = MeasureError::Run;
      m.message = WIFSIGNALED(status) ? std::string("the candidate crashed the worker (") + strsignal(WTERMSIG(status)) + ")"
                                      : "the worker exited (status " + std::to_string(WEXITSTATUS(status)) + ")";
    } else {
      m.error = MeasureError::Timeout;
      m.message = "no result within " + std::to_string(candidate_seconds_) + " s";
    }
    stop();
    return m;
  }
  try {
    nlohmann::json j = nlohmann::json::parse(line);
    m.error = static_cast<MeasureError>(j.at("error").get<int>());
    m.costs = j.at("costs").get<std::vector<double>>();
    m.baseline = j.at("baseline").get<std::vector<double>>();
    m.message = j.at("message").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    m = Measurement{};
    m.error = MeasureError::Run;
    m.message = std::string("unreadable answer from the worker: ") + e.what();
  }
  return m;
}

}  // namespace tessera::tune
