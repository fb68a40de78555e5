// ONNX ModelProto -> Graph. Every problem is an Error naming the node, op and
// opset; nothing is skipped silently.
#include "frontend/onnx_import.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <regex>
#include <set>
#include <unordered_map>

#include "frontend/onnx_tensor.h"
#include "ops/registry.h"
#include "support/checked_int.h"
#include "support/error.h"
#include "support/file_util.h"
#include "support/memory_trace.h"

namespace tessera {

namespace {

// The newest opset of the conformance data; the oldest accepted is decided per
// op by its registry entry (min_opset).
constexpr int64_t kMaxOpset = 28;

// Frees a TensorProto's element storage (clearing a field keeps its capacity).
void free_data(onnx::TensorProto& t) {
  std::string().swap(*t.mutable_raw_data());
  onnx::TensorProto empty;
  t.mutable_float_data()->Swap(empty.mutable_float_data());
  t.mutable_int32_data()->Swap(empty.mutable_int32_data());
  t.mutable_int64_data()->Swap(empty.mutable_int64_data());
  t.mutable_double_data()->Swap(empty.mutable_double_data());
  t.mutable_uint64_data()->Swap(empty.mutable_uint64_data());
}

struct Importer {
  std::string base_dir;
  int64_t opset = 0;
  const ImportOptions* opts = nullptr;  // its initializer_data: the top-level graph's

  std::string node_label(const onnx::NodeProto& n, int index) const {
    std::string name = n.name().empty() ? "#" + std::to_string(index) : n.name();
    return n.op_type() + " node '" + name + "' (opset " + std::to_string(opset) + ")";
  }

  TensorType type_from_proto(const onnx::TypeProto& tp, const std::string& what) {
    if (tp.value_case() == onnx::TypeProto::VALUE_NOT_SET) {  // allowed for subgraph inputs/outputs
      TensorType unknown;
      unknown.rank_known = false;
      return unknown;
    }
    TESSERA_CHECK(tp.has_tensor_type(), "value '", what, "' is not a tensor (",
                  tp.has_sequence_type() ? "sequence" : tp.has_optional_type() ? "optional"
                  : tp.has_map_type()     ? "map"
                  : tp.has_sparse_tensor_type() ? "sparse tensor" : "unknown",
                  " types are not supported)");
    const auto& tt = tp.tensor_type();
    TensorType t;
    TESSERA_CHECK(tt.elem_type() == 0 || dtype_supported(tt.elem_type()), "value '", what, "' has element type ",
                  onnx_type_name(tt.elem_type()), " which Tessera does not support");
    t.dtype = static_cast<DType>(tt.elem_type());
    if (!tt.has_shape()) {
      t.rank_known = false;
      return t;
    }
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        TESSERA_CHECK(d.dim_value() >= 0 && d.dim_value() < (int64_t{1} << 40), "value '", what,
                      "' has invalid dimension ", d.dim_value());
        t.dims.push_back(d.dim_value());
      } else {
        t.dims.push_back(-1);
      }
    }
    return t;
  }

  Attribute attr_from_proto(const onnx::AttributeProto& a, const std::string& label, Graph& outer) {
    using K = Attribute::Kind;
    Attribute r;
    std::string what = label + " attribute '" + a.name() + "'";
    switch (a.type()) {
      case onnx::AttributeProto::FLOAT: r.kind = K::Float; r.f = a.f(); break;
      case onnx::AttributeProto::INT: r.kind = K::Int; r.i = a.i(); break;
      case onnx::AttributeProto::STRING: r.kind = K::String; r.s = a.s(); break;
      case onnx::AttributeProto::TENSOR: r.kind = K::Tensor; r.t = tensor_from_proto(a.t(), base_dir, what); break;
      case onnx::AttributeProto::GRAPH: r.kind = K::Graph; r.g = import_graph(a.g(), &outer); break;
      case onnx::AttributeProto::FLOATS: r.kind = K::Floats; r.floats.assign(a.floats().begin(), a.floats().end()); break;
      case onnx::AttributeProto::INTS: r.kind = K::Ints; r.ints.assign(a.ints().begin(), a.ints().end()); break;
      case onnx::AttributeProto::STRINGS: r.kind = K::Strings; r.strings.assign(a.strings().begin(), a.strings().end()); break;
      case onnx::AttributeProto::TENSORS:
        r.kind = K::Tensors;
        for (const auto& t : a.tensors()) r.tensors.push_back(tensor_from_proto(t, base_dir, what));
        break;
      case onnx::AttributeProto::GRAPHS:
        r.kind = K::Graphs;
        for (const auto& g : a.graphs()) r.graphs.push_back(import_graph(g, &outer));
        break;
      default:
        TESSERA_FAIL(what, " has unsupported attribute type ", static_cast<int>(a.type()),
                     a.type() == onnx::AttributeProto::UNDEFINED && !a.ref_attr_name().empty()
                         ? " (reference attributes belong to functions)" : "");
    }
    return r;
  }

  // Orders node indices so producers come first; throws on a cycle.
  std::vector<int> topo_order(const onnx::GraphProto& gp, const std::set<std::string>& outer_defined) {
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < gp.node_size(); ++i)
      for (const auto& o : gp.node(i).output())
        if (!o.empty()) {
          TESSERA_CHECK(!producer.count(o), node_label(gp.node(i), i), ": output '", o,
                        "' is also produced by another node");
          producer[o] = i;
        }
    std::vector<int> state(static_cast<size_t>(gp.node_size()), 0), order;
    std::function<void(int)> visit = [&](int i) {
      if (state[static_cast<size_t>(i)] == 2) return;
      TESSERA_CHECK(state[static_cast<size_t>(i)] != 1, "the graph has a cycle through ", node_label(gp.node(i), i));
      state[static_cast<size_t>(i)] = 1;
      for (const auto& in : gp.node(i).input()) {
        auto it = producer.find(in);
        if (!in.empty() && it != producer.end()) visit(it->second);
      }
      // Names read by subgraph bodies also order the node after their producers.
      for (const auto& a : gp.node(i).attribute()) {
        std::vector<const onnx::GraphProto*> subs;
        if (a.has_g()) subs.push_back(&a.g());
        for (const auto& g : a.graphs()) subs.push_back(&g);
        for (const auto* s : subs)
          for (const auto& sn : s->node())
            for (const auto& in : sn.input()) {
              auto it = producer.find(in);
              if (!in.empty() && it != producer.end() && it->second != i) visit(it->second);
            }
      }
      state[static_cast<size_t>(i)] = 2;
      order.push_back(i);
    };
    for (int i = 0; i < gp.node_size(); ++i) visit(i);
    return order;
  }

  // `consume`: the same graph, mutable: each initializer's bytes are freed
  // once its tensor is made, so loading holds the weights about once.
  std::shared_ptr<Graph> import_graph(const onnx::GraphProto& gp, Graph* outer, onnx::GraphProto* consume = nullptr) {
    auto g = std::make_shared<Graph>();
    g->name = gp.name();
    g->opset = opset;
    std::set<std::string> init_names;
    for (int i = 0; i < gp.initializer_size(); ++i) {
      const onnx::TensorProto& t = gp.initializer(i);
      TESSERA_CHECK(!t.name().empty(), "an initializer has no name");
      TESSERA_CHECK(!init_names.count(t.name()), "initializer '", t.name(), "' is defined twice");
      init_names.insert(t.name());
      auto given = outer || !opts ? std::map<std::string, std::string_view>::const_iterator{}
                                  : opts->initializer_data.find(t.name());
      if (!outer && opts && given != opts->initializer_data.end())
        g->add_constant(t.name(), tensor_over_bytes(t, given->second, opts->data_owner, t.name()));
      else
        g->add_constant(t.name(), tensor_from_proto(t, base_dir, t.name()));
      if (consume) free_data(*consume->mutable_initializer(i));
    }
    TESSERA_CHECK(gp.sparse_initializer_size() == 0, "sparse initializers are not supported");
    for (const auto& in : gp.input()) {
      TESSERA_CHECK(!in.name().empty(), "a graph input has no name");
      if (init_names.count(in.name())) continue;  // old-style: an input that is also an initializer
      TESSERA_CHECK(!g->find_value(in.name()), "graph input '", in.name(), "' is declared twice");
      g->add_input(in.name(), type_from_proto(in.type(), in.name()));
    }
    std::unordered_map<std::string, const onnx::TypeProto*> declared;
    for (const auto& vi : gp.value_info()) declared[vi.name()] = &vi.type();
    for (const auto& vi : gp.output()) declared[vi.name()] = &vi.type();

    auto resolve = [&](const std::string& name, const std::string& label) -> Value* {
      if (Value* v = g->find_value(name)) return v;
      if (outer) {  // subgraph body reading a value of the enclosing graph
        TensorType unknown;
        unknown.rank_known = false;
        Value* v = g->add_value(name, unknown);
        g->captures.push_back(v);
        return v;
      }
      TESSERA_FAIL(label, ": input '", name, "' is not defined (no graph input, initializer or node output has that name)");
    };

    for (int idx : topo_order(gp, {})) {
      const onnx::NodeProto& np = gp.node(idx);
      std::string label = node_label(np, idx);
      std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
      const OpDef* def = op_registry().find(np.op_type(), domain);
      TESSERA_CHECK(def, label, ": op '", np.op_type(), "'",
                    domain.empty() ? std::string() : " of domain '" + domain + "'", " is not supported by Tessera");
      std::vector<Value*> ins;
      for (const auto& in : np.input()) ins.push_back(in.empty() ? nullptr : resolve(in, label));
      AttrMap attrs;
      for (const auto& a : np.attribute()) {
        TESSERA_CHECK(def->attr_spec(a.name()), label, ": attribute '", a.name(), "' is not supported",
                      def->attributes.empty() ? " (the op takes no attributes)" : "");
        attrs[a.name()] = attr_from_proto(a, label, *g);
      }
      // Kinds and required attributes, once: readers then trust the schema.
      check_attributes(*def, attrs, g->opset, label);
      std::vector<std::string> outs(np.output().begin(), np.output().end());
      TESSERA_CHECK(std::any_of(outs.begin(), outs.end(), [](const std::string& o) { return !o.empty(); }), label,
                    ": op '", np.op_type(), "' has no outputs (every ONNX operator has at least one)");
      std::vector<bool> in_present, out_present;
      for (const auto& in : np.input()) in_present.push_back(!in.empty());
      for (const auto& o : outs) out_present.push_back(!o.empty());
      check_arity(*def, g->opset, in_present, out_present, label);
      for (const auto& o : outs)
        TESSERA_CHECK(o.empty() || !g->find_value(o), label, ": output '", o, "' is already defined");
      std::string nname = np.name().empty() ? g->unique_name(np.op_type()) : np.name();
      Node* n = g->add_node(np.op_type(), ins, outs, std::move(attrs), nname);
      n->domain = domain;
      for (Value* o : n->outputs) {
        if (!o) continue;
        auto it = declared.find(o->name);
        if (it != declared.end() && it->second->has_tensor_type()) o->type = type_from_proto(*it->second, o->name);
        else o->type.rank_known = false;
      }
    }
    for (const auto& out : gp.output()) {
      Value* v = g->find_value(out.name());
      if (!v && outer) v = resolve(out.name(), "graph output");
      TESSERA_CHECK(v, "graph output '", out.name(), "' is not produced by any node, input or initializer");
      g->add_output(v);
    }
    return g;
  }
};

}  // namespace

Dims parse_dims(const std::string& spec) {
  TESSERA_CHECK(std::regex_match(spec, std::regex("(\\d+)(x\\d+)*")), "malformed shape '", spec,
                "' (expected dims separated by 'x', e.g. 1x3x224x224)");
  Dims d;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t x = spec.find('x', pos);
    if (x == std::string::npos) x = spec.size();
    std::optional<int64_t> v = parse_int64(std::string_view(spec).substr(pos, x - pos));
    TESSERA_CHECK(v, "shape '", spec, "': dimension '", spec.substr(pos, x - pos), "' is too large");
    d.push_back(*v);
    pos = x + 1;
  }
  return d;
}

namespace {

constexpr const char* kNotAModel = "the model is not a valid ONNX ModelProto (malformed or truncated file)";

// A parsed model as a graph; the initializers' bytes are freed as they become tensors.
// The names of the graph inputs' and outputs' symbolic dimensions
// (Graph::dim_names): only values with at least one named dimension.
std::map<std::string, std::vector<std::string>> dim_names(const onnx::GraphProto& gp) {
  std::map<std::string, std::vector<std::string>> out;
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return;
    std::vector<std::string> names;
    bool any = false;
    for (const auto& d : vi.type().tensor_type().shape().dim()) {
      names.push_back(d.has_dim_param() ? d.dim_param() : "");
      any = any || d.has_dim_param();
    }
    if (any) out[vi.name()] = std::move(names);
  };
  for (const auto& vi : gp.input()) add(vi);
  for (const auto& vi : gp.output()) add(vi);
  return out;
}

std::unique_ptr<Graph> import_model(onnx::ModelProto& mp, const std::string& base_dir, const ImportOptions& opts) {
  TESSERA_CHECK(mp.has_graph(), "the model has no graph");
  TESSERA_CHECK(mp.ir_version() >= 3, "ONNX IR version ", mp.ir_version(), " is not supported (need 3 or later)");
  Importer imp;
  imp.base_dir = base_dir;
  imp.opts = &opts;
  std::map<std::string, int64_t> extra;
  for (const auto& o : mp.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx")
      imp.opset = o.version();
    else
      extra[o.domain()] = o.version();
  }
  // A model of only other domains (ai.onnx.ml, training) need not import the
  // default one; its default-domain nodes then fail the per-op opset check.
  TESSERA_CHECK(imp.opset >= 0 && imp.opset <= kMaxOpset, "ONNX opset ", imp.opset, " is not supported (1 to ",
                kMaxOpset, ")");
  std::shared_ptr<Graph> sg = imp.import_graph(mp.graph(), nullptr, mp.mutable_graph());
  // Move out of the shared_ptr: top-level graphs are uniquely owned.
  std::unique_ptr<Graph> g = sg->clone();
  g->ir_version = mp.ir_version();
  g->extra_opsets = extra;
  g->dim_names = dim_names(mp.graph());
  for (const auto& [name, dims] : opts.input_shapes) {
    Value* v = g->find_value(name);
    TESSERA_CHECK(v && v->is_graph_input, "--shape names '", name, "' which is not a graph input");
    TensorType& t = v->type;
    TESSERA_CHECK(!t.rank_known || t.dims.size() == dims.size(), "--shape ", name, "=", dims_to_string(dims),
                  " has rank ", dims.size(), " but the input has rank ", t.dims.size());
    for (size_t i = 0; t.rank_known && i < dims.size(); ++i)
      TESSERA_CHECK(t.dims[i] < 0 || t.dims[i] == dims[i], "--shape ", name, "=", dims_to_string(dims),
                    " disagrees with the model's static shape ", t.to_string());
    t.dims = dims;
    t.rank_known = true;
  }
  verify_graph(*g);
  if (opts.infer_types) infer_graph(*g);
  mark_memory_phase("import");
  return g;
}

}  // namespace

std::unique_ptr<Graph> import_onnx_bytes(std::string_view bytes, const std::string& base_dir,
                                         const ImportOptions& opts) {
  onnx::ModelProto mp;
  TESSERA_CHECK(!bytes.empty(), "the model file is empty");
  TESSERA_CHECK(bytes.size() <= static_cast<size_t>(INT_MAX) &&
                    mp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
                kNotAModel);
  return import_model(mp, base_dir, opts);
}

std::unique_ptr<Graph> import_onnx_file(const std::string& path, const ImportOptions& opts) {
  // Parsed from the file as it is read: no whole-file copy beside the parsed model.
  std::error_code ec;
  TESSERA_CHECK(!std::filesystem::is_directory(path, ec), "'", path, "' is a directory, not a file");
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  TESSERA_CHECK(fd >= 0, "cannot open '", path, "': ", std::strerror(errno));
  struct stat st {};
  bool empty = fstat(fd, &st) == 0 && st.st_size == 0;
  onnx::ModelProto mp;
  bool parsed = !empty && mp.ParseFromFileDescriptor(fd);
  close(fd);
  mark_memory_phase("parsing the ONNX file");
  try {
    TESSERA_CHECK(!empty, "the model file is empty");
    TESSERA_CHECK(parsed, kNotAModel);
    return import_model(mp, std::filesystem::path(path).parent_path().string(), opts);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace tessera
