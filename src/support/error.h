// Tessera's error type and checking macros. Every user-facing failure is an
// Error with a message that names what went wrong and where.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace tessera {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace tessera

// Throws tessera::Error with the streamed message when cond is false.
#define TESSERA_CHECK(cond, ...)                                      \
  do {                                                                \
    if (!(cond)) throw ::tessera::Error(::tessera::detail::concat(__VA_ARGS__)); \
  } while (0)

#define TESSERA_FAIL(...) throw ::tessera::Error(::tessera::detail::concat(__VA_ARGS__))
