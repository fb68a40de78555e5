// The attention model's libtorch half, libtessera_attention.so
// (attention/attention_abi.h), loaded with dlopen on first use so that only
// a process that uses the attention model loads libtorch. Looked for, in
// order: beside the program or shared library holding this code (dladdr),
// beside the executable, in the install libdir relative to the executable's
// folder (a moved install), and in the configured install libdir.
#pragma once

#include <string>
#include <vector>

#include "attention/attention_abi.h"

namespace tessera::cost {

// The module's entry points, resolved and version-checked.
struct AttentionModule {
  std::string path;  // the file loaded
  decltype(&tessera_attention_create) create;
  decltype(&tessera_attention_destroy) destroy;
  decltype(&tessera_attention_trained) trained;
  decltype(&tessera_attention_train) train;
  decltype(&tessera_attention_fine_tune) fine_tune;
  decltype(&tessera_attention_predict) predict;
  decltype(&tessera_attention_save) save;
  decltype(&tessera_attention_load) load;
};

// The module's file name.
inline constexpr const char* kAttentionModuleName = "libtessera_attention.so";

// The folders searched, in order (without duplicates).
std::vector<std::string> attention_module_dirs();

// The module in the file `path`, its version checked; an empty `path` in
// the result and the reason in `why` when it does not load.
AttentionModule load_attention_module(const std::string& path, std::string& why);

// The module, loaded once per process (thread-safe). Throws tessera::Error
// naming every path tried and why each failed when none loads.
const AttentionModule& attention_module();

}  // namespace tessera::cost
