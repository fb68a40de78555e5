// A run's private copy of the fusion profile (see profile_snapshot.h).
#include "fusion/profile_snapshot.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_set>

#include "fusion/profile_db.h"
#include "support/error.h"

namespace tessera::fusion {

namespace {

namespace fs = std::filesystem;

// An open file descriptor (and any lock on it), closed when this goes.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string errno_text() { return std::strerror(errno); }

// The whole file open as `fd`, from its start.
std::string read_all(int fd, const std::string& path) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(out.size()));
    if (n < 0 && errno == EINTR) continue;
    TESSERA_CHECK(n >= 0, "cannot read ", path, ": ", errno_text());
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

void write_all(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    TESSERA_CHECK(n > 0, "cannot write ", path, ": ", errno_text());
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// `text` up to and including its last newline: a line still being written,
// or cut short by a crash, is not an entry.
std::string complete_lines(std::string text) {
  const size_t eol = text.rfind('\n');
  text.resize(eol == std::string::npos ? 0 : eol + 1);
  return text;
}

// The complete lines of the file at `path` ("" when there is none), read
// under a shared lock: never half of another run's merge.
std::string read_lines(const std::string& path) {
  Fd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.get() < 0) {
    TESSERA_CHECK(errno == ENOENT, "cannot read ", path, ": ", errno_text());
    return "";
  }
  ::flock(f.get(), LOCK_SH);
  return complete_lines(read_all(f.get(), path));
}

// Appends to `shared`, under an exclusive lock, the lines of `added`
// (complete lines) that it does not hold already, in their order.
void merge_lines(const std::string& shared, const std::string& added) {
  if (added.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(shared).parent_path(), ec);
  Fd f(::open(shared.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  TESSERA_CHECK(f.get() >= 0, "cannot open ", shared, ": ", errno_text());
  TESSERA_CHECK(::flock(f.get(), LOCK_EX) == 0, "cannot lock ", shared, ": ", errno_text());
  const std::string have = read_all(f.get(), shared);
  const std::string_view have_view(have), added_view(added);
  std::unordered_set<std::string_view> held;
  for (size_t at = 0; at < have.size();) {
    const size_t eol = std::min(have.find('\n', at), have.size());
    held.insert(have_view.substr(at, eol - at));
    at = eol + 1;
  }
  // A line cut short by a crash ends before ours.
  std::string out = have.empty() || have.back() == '\n' ? "" : "\n";
  bool any = false;
  for (size_t at = 0; at < added.size();) {
    const size_t eol = std::min(added.find('\n', at), added.size());
    const std::string_view line = added_view.substr(at, eol - at);
    if (held.insert(line).second) {
      out.append(line);
      out += '\n';
      any = true;
    }
    at = eol + 1;
  }
  if (any) write_all(f.get(), out, shared);
}

// This machine's name as part of a file name: letters, digits and dots,
// anything else '_' (so a '-' always separates the name's fields).
std::string host_tag() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "host";
  std::string s(buf);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.') c = '_';
  return s;
}

// The start of the names of the private copies of `shared` made on this host.
std::string copy_prefix(const std::string& shared) {
  return fs::path(shared).filename().string() + ".run-" + host_tag() + "-";
}

// Merges into `shared` the copies of it that this host's processes left
// (killed before their end: the process named is gone) and removes them.
void recover_left_copies(const std::string& shared) {
  const std::string prefix = copy_prefix(shared);
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(shared).parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>-XXXXXX"
    const size_t dash = rest.find('-');
    if (dash == 0 || dash > 9 || dash == std::string::npos || rest.size() != dash + 7 ||
        rest.find_first_not_of("0123456789") != dash)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // running (or not ours to signal)
    merge_lines(shared, read_lines(it->path().string()));
    std::error_code gone;
    fs::remove(it->path(), gone);
  }
}

}  // namespace

ProfileSnapshot::ProfileSnapshot(std::string configured, const std::optional<std::string>& text)
    : path_(std::move(configured)) {
  if (!path_.empty()) return;
  private_ = true;
  shared_ = ProfileDb::default_path();
  if (!shared_.empty()) {
    try {
      recover_left_copies(shared_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warning: a fusion profile left by an interrupted run was not merged: %s\n", e.what());
    }
  }
  const std::string lines = text ? complete_lines(*text) : shared_.empty() ? std::string() : read_lines(shared_);
  int fd = -1;
  if (!shared_.empty()) {
    std::error_code ec;
    fs::create_directories(fs::path(shared_).parent_path(), ec);
    path_ = shared_ + ".run-" + host_tag() + "-" + std::to_string(::getpid()) + "-XXXXXX";
    fd = ::mkstemp(path_.data());
  }
  if (fd < 0) {  // no cache directory, or one this process cannot write into
    path_ = (fs::temp_directory_path() / ("tessera-fusion-profile-" + std::to_string(::getpid()) + "-XXXXXX")).string();
    fd = ::mkstemp(path_.data());
  }
  TESSERA_CHECK(fd >= 0, "cannot create a private copy of the fusion profile (", path_, "): ", errno_text());
  Fd f(fd);
  try {
    write_all(f.get(), lines, path_);
  } catch (...) {
    ::unlink(path_.c_str());
    throw;
  }
  copied_ = lines.size();
}

ProfileSnapshot::~ProfileSnapshot() { finish(); }

std::string ProfileSnapshot::text() const { return read_lines(path_); }

void ProfileSnapshot::finish() {
  if (!private_ || finished_) return;
  finished_ = true;
  bool merged = true;
  try {
    if (!shared_.empty()) {
      const std::string now = read_lines(path_);
      if (now.size() > copied_) merge_lines(shared_, now.substr(copied_));
    }
  } catch (const std::exception& e) {
    merged = false;
    std::fprintf(stderr, "warning: this run's fusion profile entries were not merged into %s: %s\n", shared_.c_str(),
                 e.what());
  }
  // A copy beside the shared file that could not be merged is left for the
  // next snapshot to merge; one elsewhere would never be.
  if (merged || path_.rfind(shared_ + ".run-", 0) != 0) {
    std::error_code ec;
    fs::remove(path_, ec);
  }
}

}  // namespace tessera::fusion
