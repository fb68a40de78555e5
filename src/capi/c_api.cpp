// The C API (include/tessera/tessera.h) over capi::Session. Every entry point
// catches every exception: the status says which kind of call failed, the
// message goes to the thread's and the session's last error.
#include "tessera/tessera.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "capi/session.h"
#include "support/error.h"

struct TesseraOptions {
  tessera::capi::SessionOptions options;
};

struct TesseraSession {
  std::unique_ptr<tessera::capi::Session> session;
  // The C views of the signature (pointers into these stay valid).
  struct View {
    std::vector<int64_t> dims;
    std::vector<const char*> dim_names;
  };
  std::vector<View> input_views, output_views;
  mutable std::mutex error_mutex;
  mutable std::string last_error;
};

struct TesseraOutputs {
  std::vector<tessera::Tensor> tensors;
  std::vector<std::string> names;
};

namespace {

using tessera::capi::Session;
using tessera::capi::SessionOptions;

thread_local std::string t_last_error;

TesseraStatus fail(TesseraStatus status, const std::string& message, const TesseraSession* s = nullptr) {
  t_last_error = message;
  if (s) {
    std::lock_guard<std::mutex> lock(s->error_mutex);
    s->last_error = message;
  }
  return status;
}

// Runs body, turning exceptions into a status (`kind` for tessera's own errors).
template <class F>
TesseraStatus guarded(TesseraStatus kind, const TesseraSession* s, F&& body) {
  try {
    body();
    return TESSERA_OK;
  } catch (const std::bad_alloc&) {
    return fail(TESSERA_OUT_OF_MEMORY, "out of memory", s);
  } catch (const tessera::Error& e) {
    return fail(kind, e.what(), s);
  } catch (const std::exception& e) {  // std::invalid_argument, std::out_of_range ... from the library
    return fail(kind, e.what(), s);
  } catch (...) {
    return fail(TESSERA_INTERNAL_ERROR, "unknown exception", s);
  }
}

#define TESSERA_REQUIRE(cond, msg, s) \
  do {                                \
    if (!(cond)) return fail(TESSERA_INVALID_ARGUMENT, msg, s); \
  } while (0)

const SessionOptions& options_of(const TesseraOptions* o) {
  static const SessionOptions defaults;
  return o ? o->options : defaults;
}

TesseraSession* wrap(std::unique_ptr<Session> session) {
  auto* s = new TesseraSession;
  s->session = std::move(session);
  auto views = [](const std::vector<tessera::capi::ValueInfo>& infos, std::vector<TesseraSession::View>& out) {
    for (const auto& v : infos) {
      TesseraSession::View view;
      view.dims = v.dims;
      for (const std::string& n : v.dim_names) view.dim_names.push_back(n.c_str());
      out.push_back(std::move(view));
    }
  };
  views(s->session->inputs(), s->input_views);
  views(s->session->outputs(), s->output_views);
  return s;
}

void fill_info(const tessera::capi::ValueInfo& v, const TesseraSession::View& view, TesseraValueInfo* out) {
  out->name = v.name.c_str();
  out->dtype = static_cast<TesseraDType>(v.dtype);
  out->rank_known = v.rank_known ? 1 : 0;
  out->rank = v.dims.size();
  out->dims = view.dims.empty() ? nullptr : view.dims.data();
  out->dim_names = view.dim_names.empty() ? nullptr : view.dim_names.data();
}

}  // namespace

extern "C" {

const char* tessera_version(void) { return TESSERA_VERSION; }

const char* tessera_last_error(void) { return t_last_error.c_str(); }

size_t tessera_dtype_size(TesseraDType dtype) {
  return dtype == TESSERA_STRING ? 0 : tessera::dtype_size(static_cast<tessera::DType>(dtype));
}

TesseraStatus tessera_options_create(TesseraOptions** out) {
  TESSERA_REQUIRE(out, "tessera_options_create: out is NULL", nullptr);
  *out = nullptr;
  return guarded(TESSERA_INTERNAL_ERROR, nullptr, [&] { *out = new TesseraOptions; });
}

void tessera_options_release(TesseraOptions* options) { delete options; }

TesseraStatus tessera_options_set_threads(TesseraOptions* o, int threads) {
  TESSERA_REQUIRE(o, "tessera_options_set_threads: options is NULL", nullptr);
  TESSERA_REQUIRE(threads >= 0, "threads must be at least 0 (0: all cores), got " + std::to_string(threads), nullptr);
  o->options.threads = threads;
  return TESSERA_OK;
}

TesseraStatus tessera_options_set_isa(TesseraOptions* o, const char* isa) {
  TESSERA_REQUIRE(o, "tessera_options_set_isa: options is NULL", nullptr);
  std::string name = isa ? isa : "";
  TESSERA_REQUIRE(name.empty() || name == "host" || name == "avx512" || name == "avx2" || name == "generic",
                  "unknown isa '" + name + "' (available: host, avx512, avx2, generic)", nullptr);
  o->options.isa = name == "host" ? "" : name;
  return TESSERA_OK;
}

TesseraStatus tessera_options_set_fusion(TesseraOptions* o, int enabled) {
  TESSERA_REQUIRE(o, "tessera_options_set_fusion: options is NULL", nullptr);
  o->options.fusion = enabled != 0;
  return TESSERA_OK;
}

TesseraStatus tessera_options_set_pet(TesseraOptions* o, int enabled) {
  TESSERA_REQUIRE(o, "tessera_options_set_pet: options is NULL", nullptr);
  o->options.pet = enabled != 0;
  return TESSERA_OK;
}

TesseraStatus tessera_options_set_records(TesseraOptions* o, const char* path) {
  TESSERA_REQUIRE(o, "tessera_options_set_records: options is NULL", nullptr);
  return guarded(TESSERA_INTERNAL_ERROR, nullptr, [&] { o->options.records = path ? path : ""; });
}

TesseraStatus tessera_options_set_input_shape(TesseraOptions* o, const char* input, const int64_t* dims,
                                              size_t rank) {
  TESSERA_REQUIRE(o && input, "tessera_options_set_input_shape: options or input name is NULL", nullptr);
  TESSERA_REQUIRE(dims || rank == 0, "tessera_options_set_input_shape: dims is NULL", nullptr);
  for (size_t i = 0; i < rank; ++i)
    TESSERA_REQUIRE(dims[i] >= 0, std::string("input '") + input + "': dimension " + std::to_string(i) +
                    " is negative (" + std::to_string(dims[i]) + ")", nullptr);
  return guarded(TESSERA_INTERNAL_ERROR, nullptr,
                 [&] { o->options.shapes[input] = tessera::Dims(dims, dims + rank); });
}

TesseraStatus tessera_session_create(const char* path, const TesseraOptions* options, TesseraSession** out) {
  TESSERA_REQUIRE(out, "tessera_session_create: out is NULL", nullptr);
  *out = nullptr;
  TESSERA_REQUIRE(path, "tessera_session_create: path is NULL", nullptr);
  return guarded(TESSERA_MODEL_ERROR, nullptr, [&] { *out = wrap(Session::open(path, options_of(options))); });
}

TesseraStatus tessera_session_create_from_bytes(const void* data, size_t size, const TesseraOptions* options,
                                                TesseraSession** out) {
  TESSERA_REQUIRE(out, "tessera_session_create_from_bytes: out is NULL", nullptr);
  *out = nullptr;
  TESSERA_REQUIRE(data && size > 0, "tessera_session_create_from_bytes: no bytes", nullptr);
  return guarded(TESSERA_MODEL_ERROR, nullptr,
                 [&] { *out = wrap(Session::open_bytes(data, size, options_of(options))); });
}

void tessera_session_release(TesseraSession* session) { delete session; }

const char* tessera_session_last_error(const TesseraSession* s) {
  if (!s) return "";
  std::lock_guard<std::mutex> lock(s->error_mutex);
  return s->last_error.c_str();
}

size_t tessera_session_input_count(const TesseraSession* s) { return s ? s->session->inputs().size() : 0; }
size_t tessera_session_output_count(const TesseraSession* s) { return s ? s->session->outputs().size() : 0; }

TesseraStatus tessera_session_input_info(const TesseraSession* s, size_t index, TesseraValueInfo* out) {
  TESSERA_REQUIRE(s && out, "tessera_session_input_info: session or out is NULL", s);
  TESSERA_REQUIRE(index < s->session->inputs().size(), "input index " + std::to_string(index) +
                  " out of range (the model has " + std::to_string(s->session->inputs().size()) + " inputs)", s);
  fill_info(s->session->inputs()[index], s->input_views[index], out);
  return TESSERA_OK;
}

TesseraStatus tessera_session_output_info(const TesseraSession* s, size_t index, TesseraValueInfo* out) {
  TESSERA_REQUIRE(s && out, "tessera_session_output_info: session or out is NULL", s);
  TESSERA_REQUIRE(index < s->session->outputs().size(), "output index " + std::to_string(index) +
                  " out of range (the model has " + std::to_string(s->session->outputs().size()) + " outputs)", s);
  fill_info(s->session->outputs()[index], s->output_views[index], out);
  return TESSERA_OK;
}

TesseraStatus tessera_session_run(TesseraSession* s, const TesseraInput* inputs, size_t input_count,
                                  TesseraOutputs** outputs) {
  TESSERA_REQUIRE(outputs, "tessera_session_run: outputs is NULL", s);
  *outputs = nullptr;
  TESSERA_REQUIRE(s, "tessera_session_run: session is NULL", s);
  TESSERA_REQUIRE(inputs || input_count == 0, "tessera_session_run: inputs is NULL", s);
  for (size_t i = 0; i < input_count; ++i) {
    const TesseraInput& in = inputs[i];
    std::string which = "input " + std::to_string(i) + (in.name ? std::string(" '") + in.name + "'" : "");
    TESSERA_REQUIRE(in.name, which + ": name is NULL", s);
    TESSERA_REQUIRE(in.dims || in.rank == 0, which + ": dims is NULL", s);
    TESSERA_REQUIRE(tessera_dtype_size(in.dtype) > 0, which + ": unsupported dtype code " +
                    std::to_string(static_cast<int>(in.dtype)), s);
    for (size_t d = 0; d < in.rank; ++d)
      TESSERA_REQUIRE(in.dims[d] >= 0, which + ": dimension " + std::to_string(d) + " is negative", s);
  }
  return guarded(TESSERA_RUN_ERROR, s, [&] {
    std::vector<std::pair<std::string, tessera::Tensor>> named;
    for (size_t i = 0; i < input_count; ++i) {
      const TesseraInput& in = inputs[i];
      tessera::Dims dims(in.dims, in.dims + in.rank);
      TESSERA_CHECK(in.data || tessera::numel_of(dims) == 0, "input '", in.name, "': data is NULL");
      // A view: the caller's buffer is read during the run, never written or kept.
      named.emplace_back(in.name, tessera::Tensor::view(static_cast<tessera::DType>(in.dtype), std::move(dims),
                                                        const_cast<void*>(in.data)));
    }
    auto result = std::make_unique<TesseraOutputs>();
    result->tensors = s->session->run(named);
    for (const auto& o : s->session->outputs()) result->names.push_back(o.name);
    *outputs = result.release();
  });
}

TesseraStatus tessera_session_report(const TesseraSession* s, char** out) {
  TESSERA_REQUIRE(s && out, "tessera_session_report: session or out is NULL", s);
  *out = nullptr;
  return guarded(TESSERA_INTERNAL_ERROR, s, [&] {
    std::string r = s->session->model().report();
    char* p = static_cast<char*>(std::malloc(r.size() + 1));
    if (!p) throw std::bad_alloc();
    std::memcpy(p, r.c_str(), r.size() + 1);
    *out = p;
  });
}

TesseraStatus tessera_session_save(const TesseraSession* s, const char* path) {
  TESSERA_REQUIRE(s && path, "tessera_session_save: session or path is NULL", s);
  return guarded(TESSERA_MODEL_ERROR, s, [&] { s->session->model().save(path); });
}

size_t tessera_outputs_count(const TesseraOutputs* o) { return o ? o->tensors.size() : 0; }

TesseraStatus tessera_outputs_get(const TesseraOutputs* o, size_t index, TesseraTensor* out) {
  TESSERA_REQUIRE(o && out, "tessera_outputs_get: outputs or out is NULL", nullptr);
  TESSERA_REQUIRE(index < o->tensors.size(), "output index " + std::to_string(index) + " out of range (" +
                  std::to_string(o->tensors.size()) + " outputs)", nullptr);
  const tessera::Tensor& t = o->tensors[index];
  TESSERA_REQUIRE(t.dtype() != tessera::DType::String, "output '" + o->names[index] +
                  "' is a string tensor, which the C API does not return", nullptr);
  out->name = o->names[index].c_str();
  out->dtype = static_cast<TesseraDType>(t.dtype());
  out->rank = t.dims().size();
  out->dims = t.dims().empty() ? nullptr : t.dims().data();
  out->data = t.raw();
  out->nbytes = t.nbytes();
  return TESSERA_OK;
}

void tessera_outputs_release(TesseraOutputs* outputs) { delete outputs; }

TesseraStatus tessera_compile(const char* model, const char* out_path, const TesseraOptions* options) {
  TESSERA_REQUIRE(model && out_path, "tessera_compile: model or out_path is NULL", nullptr);
  return guarded(TESSERA_MODEL_ERROR, nullptr,
                 [&] { tessera::capi::compile_to_file(model, out_path, options_of(options)); });
}

void tessera_free(void* p) { std::free(p); }

}  // extern "C"
