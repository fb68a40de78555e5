// Finding and loading libtessera_attention.so (see attention_module.h).
#include "cost/attention_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "support/error.h"

namespace tessera::cost {

namespace {

namespace fs = std::filesystem;

// The executable's folder (empty when /proc is not mounted).
std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// The folder of the program or shared library this code is linked into.
std::string own_object_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&attention_module_dirs), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  const fs::path p = fs::canonical(info.dli_fname, ec);
  return ec ? std::string() : p.parent_path().string();
}

}  // namespace

AttentionModule load_attention_module(const std::string& path, std::string& why) {
  AttentionModule m{};
  // RTLD_LOCAL: libtorch's symbols stay out of the global namespace.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    why = e ? e : "dlopen failed";
    return m;
  }
  auto sym = [&](const char* name) {
    void* p = dlsym(handle, name);
    if (!p && why.empty()) why = std::string("no symbol ") + name;
    return p;
  };
  auto version = reinterpret_cast<decltype(&tessera_attention_abi_version)>(sym("tessera_attention_abi_version"));
  if (version && version() != TESSERA_ATTENTION_ABI_VERSION) {
    why = "interface version " + std::to_string(version()) + ", this tessera needs " +
          std::to_string(TESSERA_ATTENTION_ABI_VERSION);
    dlclose(handle);
    return m;
  }
  m.create = reinterpret_cast<decltype(m.create)>(sym("tessera_attention_create"));
  m.destroy = reinterpret_cast<decltype(m.destroy)>(sym("tessera_attention_destroy"));
  m.trained = reinterpret_cast<decltype(m.trained)>(sym("tessera_attention_trained"));
  m.train = reinterpret_cast<decltype(m.train)>(sym("tessera_attention_train"));
  m.fine_tune = reinterpret_cast<decltype(m.fine_tune)>(sym("tessera_attention_fine_tune"));
  m.predict = reinterpret_cast<decltype(m.predict)>(sym("tessera_attention_predict"));
  m.save = reinterpret_cast<decltype(m.save)>(sym("tessera_attention_save"));
  m.load = reinterpret_cast<decltype(m.load)>(sym("tessera_attention_load"));
  if (!why.empty()) {
    dlclose(handle);
    return AttentionModule{};
  }
  m.path = path;
  return m;  // the handle stays open for the process's life
}

std::vector<std::string> attention_module_dirs() {
  std::vector<std::string> dirs;
  auto add = [&](std::string d) {
    if (d.empty()) return;
    std::error_code ec;
    const fs::path c = fs::weakly_canonical(d, ec);
    if (!ec) d = c.string();
    if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(std::move(d));
  };
  add(own_object_dir());
  const std::string exe = executable_dir();
  add(exe);
  if (!exe.empty()) add(exe + "/" + TESSERA_BIN_TO_LIBDIR);
  add(TESSERA_INSTALL_LIBDIR);
  return dirs;
}

const AttentionModule& attention_module() {
  static std::mutex mutex;
  static AttentionModule loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded.path.empty()) return loaded;
  std::string tried;
  for (const std::string& dir : attention_module_dirs()) {
    const std::string path = dir + "/" + kAttentionModuleName;
    std::string why;
    if (!fs::exists(path)) {
      why = "no such file";
    } else {
      AttentionModule m = load_attention_module(path, why);
      if (!m.path.empty()) {
        loaded = m;
        return loaded;
      }
    }
    tried += "\n  " + path + ": " + why;
  }
  TESSERA_FAIL("the attention cost model needs its libtorch module ", kAttentionModuleName,
               " (installed beside libtessera.so; built by the target tessera_attention), not loaded from:", tried);
}

}  // namespace tessera::cost
