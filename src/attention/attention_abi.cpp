// The C entry points of libtessera_attention.so (attention_abi.h): each
// checks its arguments, runs with torch's threads set for the call, and turns
// every exception into a code and a message.
#include "attention/attention_abi.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>

#include "attention/attention_fit.h"
#include "attention/attention_net.h"

struct tessera_attention_model {
  tessera::attention::Net net{nullptr};
  std::string base;  // the weights the last train or load left, for fine-tuning to start from
  std::string layout;
};

namespace {

using tessera::attention::Net;

// Torch's intra-op threads set for a scope, given back at its end.
struct TorchThreads {
  int before;
  explicit TorchThreads(int n) : before(torch::get_num_threads()) { torch::set_num_threads(std::max(1, n)); }
  ~TorchThreads() { torch::set_num_threads(before); }
};

struct Failure {
  int32_t code;
  std::string message;
};

void write_error(char* error, size_t size, const std::string& message) {
  if (!error || size == 0) return;
  const size_t n = std::min(size - 1, message.size());
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

// Runs `body`, the code of what it throws (FAILED for any exception) with its message in `error`.
template <typename F>
int32_t guarded(char* error, size_t error_size, F&& body) {
  try {
    body();
    return TESSERA_ATTENTION_OK;
  } catch (const Failure& f) {
    write_error(error, error_size, f.message);
    return f.code;
  } catch (const c10::Error& e) {
    write_error(error, error_size, std::string("libtorch: ") + e.what_without_backtrace());
  } catch (const std::exception& e) {
    write_error(error, error_size, e.what());
  } catch (...) {
    write_error(error, error_size, "an unknown exception");
  }
  return TESSERA_ATTENTION_FAILED;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw Failure{TESSERA_ATTENTION_FAILED, what};
}

void check_programs(const tessera_attention_programs* p, bool training) {
  require(p && p->count >= 0 && p->features > 0 && p->hardware_width > 0, "no programs or no widths given");
  require(p->count == 0 || (p->row_counts && p->rows && p->hardware), "a program array is missing");
  require(!training || p->count == 0 || (p->groups && p->labels), "training needs group ids and labels");
  for (int64_t i = 0; i < p->count; ++i)
    require(p->row_counts[i] > 0, "program " + std::to_string(i) + " has no store rows");
}

void check_options(const tessera_attention_options* o) {
  require(o && o->dim > 0 && o->heads > 0 && o->dim % o->heads == 0,
          "the width must be a positive multiple of the heads");
  require(o->epochs >= 0 && o->group_batch > 0 && o->batch > 0, "epochs, group_batch and batch must be positive");
}

}  // namespace

extern "C" {

int32_t tessera_attention_abi_version(void) { return TESSERA_ATTENTION_ABI_VERSION; }

tessera_attention_model* tessera_attention_create(void) {
  try {
    return new tessera_attention_model;
  } catch (...) {
    return nullptr;
  }
}

void tessera_attention_destroy(tessera_attention_model* model) { delete model; }

int32_t tessera_attention_trained(const tessera_attention_model* model) { return model && !model->net.is_empty(); }

int32_t tessera_attention_train(tessera_attention_model* model, const tessera_attention_programs* programs,
                                const tessera_attention_options* options, char* error, size_t error_size) {
  return guarded(error, error_size, [&] {
    require(model != nullptr, "no model");
    check_programs(programs, true);
    check_options(options);
    const tessera::attention::Groups groups = tessera::attention::groups_of(*programs);
    TorchThreads threads(options->threads);
    torch::manual_seed(options->seed);
    Net net(programs->features, programs->hardware_width, options->dim, options->heads);
    tessera::attention::fit_scaling(net, groups);
    tessera::attention::fit(net, groups, *options);
    model->net = net;
    model->layout.clear();  // the base's own: it is never a file
    model->base = tessera::attention::serialize(net, model->layout);
  });
}

int32_t tessera_attention_fine_tune(tessera_attention_model* model, const tessera_attention_programs* programs,
                                    const tessera_attention_options* options, char* error, size_t error_size) {
  return guarded(error, error_size, [&] {
    require(model && !model->base.empty(), "the model is neither trained nor loaded");
    check_programs(programs, true);
    check_options(options);
    const tessera::attention::Groups groups = tessera::attention::groups_of(*programs);
    TorchThreads threads(options->threads);
    Net net{nullptr};
    std::string why;
    require(tessera::attention::deserialize(model->base, model->layout, programs->features, programs->hardware_width,
                                            net, why) == tessera::attention::LoadResult::ok,
            "the starting weights do not fit these programs' widths " + why);
    tessera::attention::fit(net, groups, *options);
    model->net = net;
  });
}

int32_t tessera_attention_predict(const tessera_attention_model* model, const tessera_attention_programs* programs,
                                  int32_t threads, float* scores, char* error, size_t error_size) {
  return guarded(error, error_size, [&] {
    require(model && !model->net.is_empty(), "the model is neither trained nor loaded");
    check_programs(programs, false);
    require(programs->count == 0 || scores, "no array for the scores");
    require(programs->features == model->net->store1->options.in_features() &&
                programs->hardware_width == model->net->hw1->options.in_features(),
            "the programs' widths are not the model's");
    TorchThreads set(threads);
    torch::NoGradGuard no_grad;
    Net net = model->net;  // (a handle: the model's network, not a copy)
    net->eval();
    constexpr int64_t kChunk = 512;
    const std::vector<tessera::attention::ProgramView> views = tessera::attention::views_of(*programs);
    for (int64_t at = 0; at < programs->count; at += kChunk) {
      const int64_t end = std::min(programs->count, at + kChunk);
      std::vector<const tessera::attention::ProgramView*> chunk;
      for (int64_t i = at; i < end; ++i) chunk.push_back(&views[static_cast<size_t>(i)]);
      const tessera::attention::Batch b =
          tessera::attention::batch_of(chunk, programs->features, programs->hardware_width);
      const torch::Tensor s = net->forward(b.x, b.mask, b.hw).contiguous();
      std::copy_n(s.data_ptr<float>(), end - at, scores + at);
    }
  });
}

int32_t tessera_attention_save(const tessera_attention_model* model, const char* layout, tessera_attention_writer write,
                               void* context, char* error, size_t error_size) {
  return guarded(error, error_size, [&] {
    require(model && !model->net.is_empty(), "the model is not trained");
    require(layout && write, "no layout or writer given");
    const std::string bytes = tessera::attention::serialize(model->net, layout);
    write(context, bytes.data(), bytes.size());
  });
}

int32_t tessera_attention_load(tessera_attention_model* model, const char* bytes, size_t size, const char* layout,
                               int64_t features, int64_t hardware_width, char* error, size_t error_size) {
  return guarded(error, error_size, [&] {
    require(model && (bytes || size == 0) && layout, "no model, bytes or layout given");
    std::string data(bytes, size), why;
    Net net{nullptr};
    switch (tessera::attention::deserialize(data, layout, features, hardware_width, net, why)) {
      case tessera::attention::LoadResult::ok:
        break;
      case tessera::attention::LoadResult::not_a_model:
        throw Failure{TESSERA_ATTENTION_NOT_A_MODEL, why};
      case tessera::attention::LoadResult::other_layout:
        throw Failure{TESSERA_ATTENTION_OTHER_LAYOUT, "made for another feature layout"};
    }
    net->eval();
    model->net = net;
    model->base = std::move(data);
    model->layout = layout;
  });
}

}  // extern "C"
