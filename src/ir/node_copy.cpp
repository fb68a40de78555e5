#include "ir/node_copy.h"

#include "support/error.h"

namespace tessera {

Node* copy_node(Graph& g, const Node& n, std::unordered_map<const Value*, Value*>& vmap) {
  std::vector<Value*> ins;
  for (Value* v : n.inputs) {
    if (!v) {
      ins.push_back(nullptr);
      continue;
    }
    auto it = vmap.find(v);
    TESSERA_CHECK(it != vmap.end(), "copying ", n.describe(), ": its input '", v->name, "' has no copy");
    ins.push_back(it->second);
  }
  std::vector<std::string> outs;
  for (Value* o : n.outputs) outs.push_back(o ? o->name : "");
  Node* c = g.add_node(n.op_type, ins, outs, n.attrs, n.name);
  c->domain = n.domain;
  for (size_t i = 0; i < n.outputs.size(); ++i)
    if (n.outputs[i]) {
      c->outputs[i]->type = n.outputs[i]->type;
      vmap[n.outputs[i]] = c->outputs[i];
    }
  return c;
}

}  // namespace tessera
