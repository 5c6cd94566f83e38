// Function bodies inlined before import (see inline_functions.h).
#include "frontends/onnx/inline_functions.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <optional>
#include <vector>

#include "frontends/onnx/normalize.h"
#include "vm/error.h"

namespace dynvm::frontends::onnx_import {
namespace {

// Bodies calling bodies: SCE -> NegativeLogLikelihoodLoss is two deep; a cycle would be a
// schema bug, stopped here.
constexpr int kMaxRounds = 8;

using Types = std::map<std::string, onnx::TypeProto>;

bool supported(const std::string& op, int64_t opset) {
  try {
    check_supported(op, opset, op);
    return true;
  } catch (const UserError&) {
    return false;
  }
}

// The type of every value shape inference saw (graph inputs and outputs, value_info,
// initializers), subgraphs included.
void collect_types(const onnx::GraphProto& g, Types* out) {
  for (const auto* values : {&g.input(), &g.output(), &g.value_info()}) {
    for (const auto& v : *values) {
      if (v.has_type()) (*out)[v.name()] = v.type();
    }
  }
  for (const auto& init : g.initializer()) {
    onnx::TypeProto t;
    t.mutable_tensor_type()->set_elem_type(init.data_type());
    out->emplace(init.name(), t);
  }
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_types(a.g(), out);
      for (const auto& sub : a.graphs()) collect_types(sub, out);
    }
  }
}

const onnx::OpSchema* schema_of(const onnx::NodeProto& n, int64_t opset) {
  if (!n.domain().empty() && n.domain() != "ai.onnx") return nullptr;
  return onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset), "");
}

// A tensor's or a sequence's element type is known (SequenceMap's body is built for
// sequence inputs).
bool known_element_type(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return known_element_type(t.sequence_type().elem_type());
  return t.has_tensor_type() && t.tensor_type().elem_type() != onnx::TensorProto::UNDEFINED;
}

// The body `n` stands for, or nullopt. A context-dependent body is built only once every
// input's element type is known (a later round may know more).
std::optional<onnx::FunctionProto> body_of(const onnx::NodeProto& n, const onnx::OpSchema* schema,
                                           const Types& types) {
  if (schema == nullptr) return std::nullopt;
  onnx::FunctionProto f;
  if (schema->HasFunction() && schema->GetFunction() != nullptr) {
    f = *schema->GetFunction();
  } else if (schema->HasContextDependentFunction()) {
    std::vector<onnx::TypeProto> input_types;
    for (const std::string& in : n.input()) {
      if (in.empty()) {
        input_types.emplace_back();
        continue;
      }
      auto it = types.find(in);
      if (it == types.end() || !known_element_type(it->second)) return std::nullopt;
      input_types.push_back(it->second);
    }
    onnx::FunctionBodyBuildContextImpl context(n, input_types);
    if (!schema->BuildContextDependentFunction(context, f)) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (f.node_size() == 0) return std::nullopt;
  return f;
}

// Names a body's values by: its formal inputs and outputs are the node's, the rest are
// made unique with `prefix`.
class Renamer {
 public:
  Renamer(const onnx::NodeProto& n, const onnx::FunctionProto& f, const std::string& prefix) {
    for (int i = 0; i < f.input_size(); ++i)
      names_[f.input(i)] = i < n.input_size() ? n.input(i) : "";
    for (int i = 0; i < f.output_size(); ++i) {
      names_[f.output(i)] =
          i < n.output_size() && !n.output(i).empty() ? n.output(i) : prefix + f.output(i);
    }
    for (const auto& m : f.node()) {
      for (const std::string& out : m.output()) {
        if (!out.empty() && !names_.count(out)) names_[out] = prefix + out;
      }
    }
  }

  std::string operator()(const std::string& name) const {
    auto it = names_.find(name);
    return it == names_.end() ? name : it->second;
  }

  // A node's inputs and outputs, and in its subgraphs every reference to a body value.
  void rename(onnx::NodeProto& m) const {
    for (std::string& in : *m.mutable_input()) in = (*this)(in);
    for (std::string& out : *m.mutable_output()) out = (*this)(out);
    for (auto& a : *m.mutable_attribute()) {
      if (a.has_g()) rename(*a.mutable_g());
      for (auto& sub : *a.mutable_graphs()) rename(sub);
    }
  }

 private:
  void rename(onnx::GraphProto& g) const {
    for (auto& n : *g.mutable_node()) rename(n);
    for (auto& out : *g.mutable_output()) out.set_name((*this)(out.name()));
  }

  std::map<std::string, std::string> names_;
};

// The value of `n`'s attribute `name`: given on the node, else the schema's default; null
// when neither (the body's attribute is then left out, as ONNX specifies).
const onnx::AttributeProto* attribute_value(const onnx::NodeProto& n, const onnx::OpSchema& schema,
                                            const std::string& name) {
  for (const auto& given : n.attribute()) {
    if (given.name() == name) return &given;
  }
  auto it = schema.attributes().find(name);
  if (it == schema.attributes().end() || !it->second.default_value.has_type()) return nullptr;
  return &it->second.default_value;
}

// The body's nodes for `n`: renamed, named `prefix<k>`, attribute references resolved.
std::vector<onnx::NodeProto> instantiate(const onnx::NodeProto& n, const onnx::OpSchema& schema,
                                         const onnx::FunctionProto& f, const std::string& prefix) {
  Renamer names(n, f, prefix);
  std::vector<onnx::NodeProto> out;
  for (int k = 0; k < f.node_size(); ++k) {
    onnx::NodeProto m = f.node(k);
    m.set_name(prefix + std::to_string(k));
    names.rename(m);
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> attributes;
    for (const auto& a : m.attribute()) {
      if (a.ref_attr_name().empty()) {
        *attributes.Add() = a;
        continue;
      }
      if (const onnx::AttributeProto* value = attribute_value(n, schema, a.ref_attr_name())) {
        onnx::AttributeProto* resolved = attributes.Add();
        *resolved = *value;
        resolved->set_name(a.name());
      }
    }
    m.mutable_attribute()->Swap(&attributes);
    out.push_back(std::move(m));
  }
  return out;
}

// Whether some node of `g` (or its subgraphs) is unsupported and has a body: shape
// inference, which takes a while on a large model, runs only then.
bool has_inlinable(const onnx::GraphProto& g, int64_t opset, const NodeOpsets& opsets) {
  for (const auto& n : g.node()) {
    for (const auto& a : n.attribute()) {
      if (a.has_g() && has_inlinable(a.g(), opset, opsets)) return true;
      for (const auto& sub : a.graphs()) {
        if (has_inlinable(sub, opset, opsets)) return true;
      }
    }
    auto own = opsets.find(n.name());
    const int64_t at = own != opsets.end() ? own->second : opset;
    if (supported(n.op_type(), at)) continue;
    const onnx::OpSchema* schema = schema_of(n, at);
    if (schema != nullptr && (schema->HasFunction() || schema->HasContextDependentFunction())) {
      return true;
    }
  }
  return false;
}

class Inliner {
 public:
  Inliner(int64_t opset, const Types& types, NodeOpsets* opsets, int* inlined)
      : opset_(opset), types_(types), opsets_(opsets), inlined_(inlined) {}

  // One round over `g` and its subgraphs; true when a node was inlined.
  bool graph(onnx::GraphProto& g) {
    bool changed = false;
    google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
    for (auto& n : *g.mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) changed = graph(*a.mutable_g()) || changed;
        for (auto& sub : *a.mutable_graphs()) changed = graph(sub) || changed;
      }
      auto own = opsets_->find(n.name());
      const int64_t opset = own != opsets_->end() ? own->second : opset_;
      const onnx::OpSchema* schema = supported(n.op_type(), opset) ? nullptr : schema_of(n, opset);
      std::optional<onnx::FunctionProto> body = body_of(n, schema, types_);
      if (!body) {
        *nodes.Add() = n;
        continue;
      }
      int64_t body_opset = opset;
      for (const auto& o : body->opset_import()) {
        if (o.domain().empty() || o.domain() == "ai.onnx") body_opset = o.version();
      }
      const std::string prefix =
          (n.name().empty() ? n.op_type() : n.name()) + "#" + std::to_string((*inlined_)++) + "/";
      for (onnx::NodeProto& m : instantiate(n, *schema, *body, prefix)) {
        (*opsets_)[m.name()] = body_opset;
        *nodes.Add() = std::move(m);
      }
      changed = true;
    }
    g.mutable_node()->Swap(&nodes);
    return changed;
  }

 private:
  int64_t opset_;
  const Types& types_;
  NodeOpsets* opsets_;
  int* inlined_;  // nodes inlined so far in this model: their values' unique prefixes
};

}  // namespace

NodeOpsets inline_functions(onnx::ModelProto& model, int64_t opset) {
  NodeOpsets opsets;
  int inlined = 0;
  for (int round = 0; round < kMaxRounds && has_inlinable(model.graph(), opset, opsets); ++round) {
    Types types;
    {
      onnx::ModelProto typed = model;
      try {
        onnx::shape_inference::InferShapes(typed);
      } catch (const std::exception&) {
        // Types are only needed for context-dependent bodies; without them those nodes
        // stay, and the importer refuses them by name.
      }
      collect_types(typed.graph(), &types);
    }
    if (!Inliner(opset, types, &opsets, &inlined).graph(*model.mutable_graph())) break;
  }
  return opsets;
}

}  // namespace dynvm::frontends::onnx_import
