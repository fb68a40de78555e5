// The message of the tessera::Error a call throws, for tests that check what
// an error says (it must name the node, file or input and the problem).
#pragma once

#include <string>

#include "support/error.h"

namespace tessera::testing {

// The message of the Error `f` throws ("" when it does not throw).
template <class F>
std::string error_of(F f) {
  try {
    f();
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace tessera::testing
