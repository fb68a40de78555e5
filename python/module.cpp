// The Python module `tessera` (its extension part, tessera._tessera): an
// InferenceSession with ONNX Runtime's calls over capi::Session, compile(),
// and the tessera.Error exception. Inputs are numpy arrays read in place
// where their dtype matches and their memory is C-contiguous and aligned
// (others are copied); outputs are numpy arrays that own the runtime's
// buffers. The GIL is released while a model runs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capi/session.h"
#include "support/error.h"

namespace py = pybind11;

namespace tessera::python {

namespace {

using capi::Session;
using capi::SessionOptions;
using capi::ValueInfo;

// numpy's dtype for an element type; throws for types numpy has not (bfloat16, strings).
py::dtype numpy_dtype(DType t, const std::string& what) {
  switch (t) {
    case DType::F32: return py::dtype("float32");
    case DType::F64: return py::dtype("float64");
    case DType::F16: return py::dtype("float16");
    case DType::I8: return py::dtype("int8");
    case DType::I16: return py::dtype("int16");
    case DType::I32: return py::dtype("int32");
    case DType::I64: return py::dtype("int64");
    case DType::U8: return py::dtype("uint8");
    case DType::U16: return py::dtype("uint16");
    case DType::U32: return py::dtype("uint32");
    case DType::U64: return py::dtype("uint64");
    case DType::Bool: return py::dtype("bool");
    default: break;
  }
  TESSERA_FAIL(what, " has element type ", capi::ort_type_name(t), ", which numpy has no dtype for");
}

// A model input or output as ONNX Runtime's NodeArg shows it.
struct NodeArg {
  std::string name;
  py::object shape;  // list of int (static) / str (a named dynamic dim) / None; None for unknown rank
  std::string type;  // "tensor(float)"
};

NodeArg node_arg(const ValueInfo& v) {
  NodeArg a{v.name, py::none(), capi::ort_value_type(v)};
  if (v.rank_known) {
    py::list shape;
    for (size_t d = 0; d < v.dims.size(); ++d) {
      if (v.dims[d] >= 0) shape.append(py::int_(v.dims[d]));
      else if (!v.dim_names[d].empty()) shape.append(py::str(v.dim_names[d]));
      else shape.append(py::none());
    }
    a.shape = shape;
  }
  return a;
}

SessionOptions session_options(std::optional<int> threads, std::optional<std::string> isa, bool fusion, bool pet,
                               std::optional<std::string> records,
                               std::optional<std::map<std::string, std::vector<int64_t>>> shapes) {
  SessionOptions o;
  o.threads = threads.value_or(0);
  TESSERA_CHECK(o.threads >= 0, "threads must be at least 0 (0 or None: all cores), got ", o.threads);
  o.isa = isa.value_or("");
  if (o.isa == "host") o.isa.clear();
  TESSERA_CHECK(o.isa.empty() || o.isa == "avx512" || o.isa == "avx2" || o.isa == "generic", "unknown isa '", o.isa,
                "' (available: host, avx512, avx2, generic)");
  o.fusion = fusion;
  o.pet = pet;
  o.records = records.value_or("");
  if (shapes)
    for (auto& [name, dims] : *shapes) o.shapes[name] = Dims(dims.begin(), dims.end());
  return o;
}

bool is_bytes_like(const py::handle& h) {
  return py::isinstance<py::bytes>(h) || py::isinstance<py::bytearray>(h) || py::isinstance<py::memoryview>(h);
}

// The bytes of a bytes, bytearray or memoryview object (a contiguous buffer).
std::pair<const void*, size_t> buffer_of(const py::handle& h, py::buffer_info& keep) {
  keep = py::reinterpret_borrow<py::buffer>(h).request();
  TESSERA_CHECK(keep.ndim <= 1 && (keep.ndim == 0 || keep.strides[0] == keep.itemsize),
                "model bytes must be a contiguous buffer");
  return {keep.ptr, static_cast<size_t>(keep.size * keep.itemsize)};
}

std::string path_of(const py::handle& h) { return py::str(py::module_::import("os").attr("fspath")(h)); }

class InferenceSession {
 public:
  InferenceSession(const py::object& model, std::optional<int> threads, std::optional<std::string> isa, bool fusion,
                   bool pet, std::optional<std::string> records,
                   std::optional<std::map<std::string, std::vector<int64_t>>> shapes) {
    SessionOptions o = session_options(threads, isa, fusion, pet, records, shapes);
    if (is_bytes_like(model)) {
      py::buffer_info keep;
      auto [data, size] = buffer_of(model, keep);
      py::gil_scoped_release unlocked;  // compiling takes a while; other Python threads go on
      session_ = Session::open_bytes(data, size, o);
    } else {
      std::string path = path_of(model);
      py::gil_scoped_release unlocked;
      session_ = Session::open(path, o);
    }
  }

  std::vector<NodeArg> get_inputs() const {
    std::vector<NodeArg> r;
    for (const ValueInfo& v : session_->inputs()) r.push_back(node_arg(v));
    return r;
  }
  std::vector<NodeArg> get_outputs() const {
    std::vector<NodeArg> r;
    for (const ValueInfo& v : session_->outputs()) r.push_back(node_arg(v));
    return r;
  }

  py::list run(const py::object& output_names, const py::dict& feed, const py::object& run_options) {
    TESSERA_CHECK(run_options.is_none(), "run_options is not supported (pass None)");
    std::vector<size_t> picked;
    if (output_names.is_none()) {
      for (size_t i = 0; i < session_->outputs().size(); ++i) picked.push_back(i);
    } else {
      for (const py::handle& n : output_names) picked.push_back(session_->output_index(py::cast<std::string>(n)));
    }
    std::vector<py::array> keep;  // the arrays the input views read, alive through the run
    std::vector<std::pair<std::string, Tensor>> named = inputs_of(feed, keep);
    std::vector<Tensor> outs;
    {
      py::gil_scoped_release unlocked;
      outs = session_->run(named);
    }
    py::list result;
    std::vector<bool> taken(outs.size(), false);
    for (size_t i : picked) {  // an output asked for twice gets two arrays of its own
      result.append(to_numpy(taken[i] ? outs[i].clone() : outs[i], session_->outputs()[i].name));
      taken[i] = true;
    }
    return result;
  }

  py::list profile(int runs, const py::object& feed) {
    TESSERA_CHECK(runs >= 1, "profile: runs must be at least 1, got ", runs);
    std::vector<py::array> keep;
    std::vector<Tensor> ins;
    if (feed.is_none()) ins = session_->model().random_inputs(0);
    else ins = session_->order_inputs(inputs_of(py::cast<py::dict>(feed), keep));
    std::vector<StepProfile> steps;
    {
      py::gil_scoped_release unlocked;
      steps = session_->model().profile(ins, runs);
    }
    py::list r;
    for (const StepProfile& s : steps) {
      py::dict d;
      d["node"] = s.node;
      d["op"] = s.op;
      d["compiled"] = s.compiled;
      d["seconds"] = s.seconds;
      d["flops"] = s.flops;
      r.append(d);
    }
    return r;
  }

  std::string report() const { return session_->model().report(); }

  void save(const std::string& path) const {
    py::gil_scoped_release unlocked;
    session_->model().save(path);
  }

 private:
  // Views over the arrays of the feed: read in place when dtype, layout and
  // alignment allow, else a C-contiguous copy (as ONNX Runtime copies).
  std::vector<std::pair<std::string, Tensor>> inputs_of(const py::dict& feed, std::vector<py::array>& keep) const {
    std::vector<std::pair<std::string, Tensor>> named;
    for (const auto& [key, value] : feed) {
      std::string name = py::cast<std::string>(key);
      const ValueInfo& info = session_->inputs()[session_->input_index(name)];
      TESSERA_CHECK(py::isinstance<py::array>(value), "input '", name, "' must be a numpy.ndarray, got ",
                    std::string(py::str(py::type::of(value).attr("__name__"))));
      py::array a = py::reinterpret_borrow<py::array>(value);
      py::dtype want = numpy_dtype(info.dtype, "input '" + name + "'");
      TESSERA_CHECK(a.dtype().equal(want), "input '", name, "' expects ", capi::ort_value_type(info), " (numpy ",
                    std::string(py::str(want)), "), got an array of ", std::string(py::str(a.dtype())));
      constexpr int kContiguousAligned = py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | 0x100;  // NPY_ARRAY_ALIGNED
      if ((a.flags() & kContiguousAligned) != kContiguousAligned)
        a = py::module_::import("numpy").attr("array")(a, py::arg("dtype") = want, py::arg("order") = "C")
                .cast<py::array>();
      Dims dims(a.shape(), a.shape() + a.ndim());
      named.emplace_back(name, Tensor::view(info.dtype, std::move(dims), const_cast<void*>(a.data())));
      keep.push_back(std::move(a));
    }
    return named;
  }

  // A numpy array owning the tensor's buffer (the tensor lives in its base capsule).
  static py::object to_numpy(Tensor t, const std::string& name) {
    if (t.dtype() == DType::String) {
      py::list items;
      for (const std::string& s : t.strings()) items.append(py::str(s));
      py::object arr = py::module_::import("numpy").attr("array")(items, py::arg("dtype") = "object");
      return arr.attr("reshape")(py::cast(t.dims()));
    }
    py::dtype dt = numpy_dtype(t.dtype(), "output '" + name + "'");
    std::vector<py::ssize_t> shape(t.dims().begin(), t.dims().end());
    std::vector<py::ssize_t> strides;
    for (int64_t s : strides_of(t.dims())) strides.push_back(static_cast<py::ssize_t>(s * dt.itemsize()));
    auto* owner = new Tensor(std::move(t));
    py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
    return py::array(dt, shape, strides, owner->raw(), base);
  }

  std::unique_ptr<Session> session_;
};

void compile(const py::object& model, const py::object& out_path,
             std::optional<std::map<std::string, std::vector<int64_t>>> shapes, std::optional<int> threads,
             std::optional<std::string> isa, bool fusion, bool pet, std::optional<std::string> records) {
  SessionOptions o = session_options(threads, isa, fusion, pet, records, shapes);
  std::string out = path_of(out_path);
  if (is_bytes_like(model)) {
    py::buffer_info keep;
    auto [data, size] = buffer_of(model, keep);
    py::gil_scoped_release unlocked;
    capi::compile_bytes_to_file(data, size, out, o);
  } else {
    std::string path = path_of(model);
    py::gil_scoped_release unlocked;
    capi::compile_to_file(path, out, o);
  }
}

}  // namespace

}  // namespace tessera::python

PYBIND11_MODULE(_tessera, m) {
  using namespace tessera::python;
  m.doc() = "Tessera's Python module: compile ONNX models to native x86 code and run them "
            "(ONNX Runtime's InferenceSession calls).";
  m.attr("__version__") = TESSERA_VERSION;
  py::register_exception<tessera::Error>(m, "Error", PyExc_RuntimeError);

  py::class_<NodeArg>(m, "NodeArg", "A model input or output: name, shape and type, as ONNX Runtime's NodeArg.")
      .def_readonly("name", &NodeArg::name, "The value's name in the model.")
      .def_readonly("shape", &NodeArg::shape,
                    "Dimensions: an int for a static one, the model's name (str) for a dynamic one "
                    "(None when it has no name); None when even the rank is unknown.")
      .def_readonly("type", &NodeArg::type, "ONNX Runtime's type string, e.g. 'tensor(float)'.")
      .def("__repr__", [](const NodeArg& a) {
        return "NodeArg(name='" + a.name + "', type='" + a.type + "', shape=" + std::string(py::repr(a.shape)) + ")";
      });

  py::class_<InferenceSession>(m, "InferenceSession",
                               "A model compiled to native code, run like onnxruntime.InferenceSession.\n\n"
                               "path_or_bytes: an ONNX file, 'zoo:NAME' (an embedded model), a .tsr artifact "
                               "written by tessera.compile, or the bytes of an ONNX model or artifact.\n"
                               "threads: threads for parallel kernels (None: all cores).\n"
                               "isa: 'avx512', 'avx2', 'generic' or None/'host' (the best this CPU has).\n"
                               "fusion: DNNFusion's fused kernels. pet: PET's mutant search (slow first compile).\n"
                               "records: a tuning records file from `tessera tune`.\n"
                               "shapes: {input: dims} fixing dynamic input shapes (not for artifacts).\n"
                               "One session may be run from many threads at once; the GIL is released while "
                               "it compiles and runs.")
      .def(py::init<const py::object&, std::optional<int>, std::optional<std::string>, bool, bool,
                    std::optional<std::string>, std::optional<std::map<std::string, std::vector<int64_t>>>>(),
           py::arg("path_or_bytes"), py::arg("threads") = py::none(), py::arg("isa") = py::none(),
           py::arg("fusion") = true, py::arg("pet") = false, py::arg("records") = py::none(),
           py::arg("shapes") = py::none())
      .def("get_inputs", &InferenceSession::get_inputs, "The model's inputs (NodeArg), in model order.")
      .def("get_outputs", &InferenceSession::get_outputs, "The model's outputs (NodeArg), in model order.")
      .def("run", &InferenceSession::run, py::arg("output_names"), py::arg("input_feed"),
           py::arg("run_options") = py::none(),
           "Runs the model. output_names: the outputs wanted, in that order (None: all). input_feed: "
           "{input name: numpy.ndarray} for every input; an array of the input's dtype that is C-contiguous "
           "and aligned is read in place, other layouts are copied, another dtype raises tessera.Error. "
           "Returns a list of numpy arrays that own their data.")
      .def("profile", &InferenceSession::profile, py::arg("runs") = 10, py::arg("input_feed") = py::none(),
           "Runs the model `runs` times and returns each step of its plan with its median time: a list of "
           "dicts {node, op, compiled, seconds, flops} in plan order. input_feed: as for run (None: seeded "
           "random inputs, which needs static input shapes).")
      .def("report", &InferenceSession::report,
           "The compiled and reference steps with reasons, and the activation memory per input signature.")
      .def("save", &InferenceSession::save, py::arg("path"),
           "Writes the compiled model (with every signature compiled so far) to a .tsr artifact.");

  m.def("compile", &compile, py::arg("model"), py::arg("out_path"), py::arg("shapes") = py::none(),
        py::arg("threads") = py::none(), py::arg("isa") = py::none(), py::arg("fusion") = true,
        py::arg("pet") = false, py::arg("records") = py::none(),
        "Compiles a model (an ONNX file, 'zoo:NAME' or ONNX bytes) and writes a .tsr artifact that "
        "InferenceSession loads without compiling again. shapes: {input: dims} fixing dynamic inputs; "
        "when every input shape is static the kernels are compiled now, else on the first run.");
}
