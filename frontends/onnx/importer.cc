// The ONNX importer (see importer.h).
#include "frontends/onnx/importer.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "frontends/onnx/decompose.h"
#include "frontends/onnx/expand_integer.h"
#include "frontends/onnx/inline_functions.h"
#include "frontends/onnx/normalize.h"
#include "frontends/onnx/tensor_proto.h"
#include "vm/error.h"

namespace dynvm::frontends::onnx_import {
namespace {

using compiler::Expr;
using compiler::Type;

// Largest model file we read (protobuf's own limit is 2 GiB).
constexpr size_t kMaxModelBytes = size_t{2} << 30;

std::string identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "d" + out;
  return out;
}

class GraphImporter {
 public:
  GraphImporter(compiler::Module* module, int64_t opset, const NodeOpsets& node_opsets,
                const ImportOptions& options)
      : module_(module), opset_(opset), node_opsets_(node_opsets), options_(options) {}

  std::shared_ptr<compiler::Function> main(const onnx::GraphProto& g) {
    auto f = std::make_shared<compiler::Function>();
    f->name = "main";
    scopes_.emplace_back();
    std::set<std::string> initializers;
    for (const auto& init : g.initializer()) initializers.insert(init.name());
    for (const auto& input : g.input()) {
      if (initializers.count(input.name())) continue;  // a default value: the constant wins
      Expr v = compiler::make_var(input.name(), value_type(input, "graph input " + input.name()));
      define(input.name(), v);
      f->params.push_back(v);
    }
    f->body = block(g, /*tuple_always=*/true);
    std::vector<Type> results;
    for (const auto& out : g.output()) {
      f->result_names.push_back(out.name());
      results.push_back(value_type(out, "graph output " + out.name()));
    }
    if (std::all_of(results.begin(), results.end(), [](const Type& t) { return t.defined(); })) {
      f->result_type = compiler::tuple_type(results);
    }
    scopes_.pop_back();
    check_dims_used();
    return f;
  }

 private:
  struct Block {
    std::vector<std::pair<Expr, Expr>> bindings;  // var = value, in order
  };

  // ---- types and dims ----
  Type value_type(const onnx::ValueInfoProto& info, const std::string& where) {
    if (!info.has_type()) return {};
    const onnx::TypeProto& t = info.type();
    if (t.has_sequence_type() || t.has_optional_type()) return container_type(t, where);
    if (!t.has_tensor_type()) {
      user_error(where, ": only tensor, sequence and optional values are supported");
    }
    const auto& tt = t.tensor_type();
    std::optional<vm::DType> dtype = vm::from_onnx_code(tt.elem_type());
    if (!dtype) user_error(where, ": unsupported element type ", tt.elem_type());
    if (!tt.has_shape()) return {};  // rank unknown: left to type inference
    std::vector<compiler::Dim> dims;
    for (int axis = 0; axis < tt.shape().dim_size(); ++axis) {
      const auto& d = tt.shape().dim(axis);
      if (d.has_dim_value()) {
        if (d.dim_value() < 0) user_error(where, ": negative dim ", d.dim_value());
        dims.emplace_back(d.dim_value());
      } else if (d.has_dim_param() && !d.dim_param().empty()) {
        dims.emplace_back(symbol(d.dim_param()));
      } else {
        dims.emplace_back(symbol(info.name() + "_" + std::to_string(axis)));
      }
    }
    return compiler::tensor_type(*dtype, std::move(dims));
  }

  // A sequence of tensors (elements may differ in shape: only constant dims are kept) or an
  // optional tensor or sequence.
  Type container_type(const onnx::TypeProto& t, const std::string& where) {
    if (t.has_optional_type()) {
      const onnx::TypeProto& elem = t.optional_type().elem_type();
      if (elem.has_sequence_type()) return compiler::optional_type(container_type(elem, where));
      return compiler::optional_type(element_type(elem, true, where));
    }
    const onnx::TypeProto& elem = t.sequence_type().elem_type();
    Type e = element_type(elem, false, where);
    return e.is_tensor() ? compiler::sequence_type(e->dtype, e)
                         : compiler::sequence_type(sequence_dtype(elem, where));
  }
  vm::DType sequence_dtype(const onnx::TypeProto& elem, const std::string& where) {
    if (!elem.has_tensor_type()) user_error(where, ": only sequences of tensors are supported");
    std::optional<vm::DType> dtype = vm::from_onnx_code(elem.tensor_type().elem_type());
    if (!dtype) user_error(where, ": unsupported element type ", elem.tensor_type().elem_type());
    return *dtype;
  }
  // A tensor held by a sequence or an optional; undefined when its rank is not known. Dims
  // that are not constants are Any in a sequence, symbols in an optional (required there).
  Type element_type(const onnx::TypeProto& elem, bool optional, const std::string& where) {
    vm::DType dtype = sequence_dtype(elem, where);
    const auto& tt = elem.tensor_type();
    if (!tt.has_shape()) {
      if (optional) user_error(where, ": an optional tensor needs a known rank");
      return {};
    }
    std::vector<compiler::Dim> dims;
    for (int axis = 0; axis < tt.shape().dim_size(); ++axis) {
      const auto& d = tt.shape().dim(axis);
      if (d.has_dim_value()) {
        dims.emplace_back(d.dim_value());
      } else if (optional && d.has_dim_param() && !d.dim_param().empty()) {
        dims.emplace_back(symbol(d.dim_param()));
      } else {
        dims.push_back(compiler::Dim::any());
      }
    }
    return compiler::tensor_type(dtype, std::move(dims));
  }

  arith::Var symbol(const std::string& model_name, int alias_depth = 0) {
    std::string name = identifier(model_name);
    for (const std::string& key : {model_name, name}) {
      auto alias = options_.same_dims.find(key);
      if (alias != options_.same_dims.end()) {
        used_dim_options_.insert(key);
        if (alias_depth > static_cast<int>(options_.same_dims.size())) {
          user_error("--dim ", key, "=", alias->second, ": the dim aliases form a cycle");
        }
        if (identifier(alias->second) != name) return symbol(alias->second, alias_depth + 1);
      }
    }
    if (const compiler::DimSymbol* d = module_->find_dim(name)) return d->var;
    compiler::DimSymbol d{arith::Var(name)};
    for (const std::string& key : {model_name, name}) {
      auto it = options_.dims.find(key);
      if (it != options_.dims.end()) {
        d.min = it->second.min;
        d.max = it->second.max;
        used_dim_options_.insert(key);
      }
    }
    module_->dims.push_back(d);
    return d.var;
  }

  void check_dims_used() {
    // Every --dim must name a dim of the model (a range or an alias alike).
    std::map<std::string, DimRange> named = options_.dims;
    for (const auto& [name, other] : options_.same_dims) named[name] = {};
    for (const auto& [name, range] : named) {
      if (used_dim_options_.count(name)) continue;
      std::string known;
      for (const auto& d : module_->dims) known += (known.empty() ? "" : ", ") + d.var.name();
      user_error("--dim ", name, ": the model has no symbolic dim of that name (its dims: ",
                 known.empty() ? "none" : known, ")");
    }
  }

  // An input known when the graph is read (an initializer, a Constant's output, or a
  // constant the normalizer made from an attribute).
  bool known(const Expr& e) const {
    return e.kind() == compiler::ExprKind::kConstant ||
           (e.kind() == compiler::ExprKind::kVar && constants_.count(e->name) > 0);
  }
  static bool is_absent(const Expr& e) {
    return e.kind() == compiler::ExprKind::kTuple && e->operands.empty();
  }
  // ---- scopes ----
  void define(const std::string& name, const Expr& v) { scopes_.back()[name] = v; }
  // Names of initializers and Constant outputs: values known when the graph is read.
  std::set<std::string> constants_;
  Expr lookup(const std::string& name, const std::string& where) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    user_error(where, ": input '", name,
               "' is not produced by any earlier node, initializer or "
               "graph input");
  }

  // ---- graphs ----
  // The graph's initializers and nodes as lets (in the current scope), returning its
  // outputs: one value, or a tuple when there are several (or always, if asked).
  // `as_optional`: the outputs to wrap in an Optional (a Loop body returning a value where
  // its carried value is an optional).
  Expr block(const onnx::GraphProto& g, bool tuple_always, const std::set<int>& as_optional = {}) {
    Block b;
    for (const auto& init : g.initializer()) {
      constants_.insert(init.name());
      Expr c = compiler::make_constant(tensor_from_proto(init, "initializer " + init.name()));
      bind(b, init.name(), c);
    }
    for (int i = 0; i < g.node_size(); ++i) node(g.node(i), i, b);
    std::vector<Expr> outputs;
    for (int k = 0; k < g.output_size(); ++k) {
      Expr out = lookup(g.output(k).name(), "graph output");
      if (as_optional.count(k)) {
        bind(b, g.output(k).name() + "/optional", compiler::make_call("Optional", {out}));
        out = b.bindings.back().first;
      }
      outputs.push_back(out);
    }
    Expr result = outputs.size() == 1 && !tuple_always ? outputs[0] : compiler::make_tuple(outputs);
    for (auto it = b.bindings.rbegin(); it != b.bindings.rend(); ++it) {
      result = compiler::make_let(it->first, it->second, result);
    }
    return result;
  }

  // The operand of the Cast bound to `v` in `b`, if a Cast is what `v` is.
  static std::optional<Expr> cast_operand(const Block& b, const Expr& v) {
    if (v.kind() != compiler::ExprKind::kVar) return std::nullopt;
    for (auto it = b.bindings.rbegin(); it != b.bindings.rend(); ++it) {
      if (it->first->var_id != v->var_id) continue;
      const Expr& value = it->second;
      if (value.kind() == compiler::ExprKind::kCall && value->name == "Cast" &&
          value->operands.size() == 1) {
        return value->operands[0];
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

  void bind(Block& b, const std::string& name, const Expr& value) {
    Expr v = compiler::make_var(name);
    b.bindings.emplace_back(v, value);
    define(name, v);
  }

  std::string describe(const onnx::NodeProto& n, int index) {
    std::string name = n.name().empty() ? "#" + std::to_string(index) : "'" + n.name() + "'";
    return str_cat("node ", name, " (", n.op_type(), ", opset ", opset_of(n), ")");
  }

  // The model's opset, or the one an inlined function body was written for.
  int64_t opset_of(const onnx::NodeProto& n) const {
    auto it = node_opsets_.find(n.name());
    return it != node_opsets_.end() ? it->second : opset_;
  }

  void node(const onnx::NodeProto& n, int index, Block& b) {
    const std::string where = describe(n, index);
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      user_error(where, ": operator domain '", n.domain(), "' is not supported");
    }
    check_supported(n.op_type(), opset_of(n), where);
    if (n.op_type() == "Constant") {
      constants_.insert(n.output(0));
      return bind_outputs(n, constant_node(n, where), b, where);
    }

    NodeForm form;
    form.op = n.op_type();
    for (const std::string& in : n.input()) {
      form.inputs.push_back(in.empty() ? absent_input() : lookup(in, where));
    }
    std::map<std::string, const onnx::GraphProto*> graphs;
    for (const auto& a : n.attribute()) {
      if (a.type() == onnx::AttributeProto::GRAPH) {
        graphs[a.name()] = &a.g();
      } else if (a.type() == onnx::AttributeProto::TYPE_PROTO && n.op_type() == "Optional") {
        optional_type_attrs(a.tp(), form.attrs, where);
      } else {
        form.attrs[a.name()] = attribute(a, where);
      }
    }
    Expr value;
    if (n.op_type() == "If") {
      value = if_node(form, graphs, where);
    } else if (n.op_type() == "Loop") {
      value = loop_node(form, graphs, where);
    } else if (n.op_type() == "Scan") {
      value =
          opset_of(n) < 9 ? scan8_node(form, graphs, b, where) : scan_node(form, graphs, b, where);
    } else {
      if (!graphs.empty()) user_error(where, ": unexpected graph attribute");
      normalize(form, opset_of(n), where);
      if (multi_output_call(n)) form.attrs["num_outputs"] = int64_t{n.output_size()};
      if (form.op.rfind("Reduce", 0) == 0 && n.input_size() > 1 && !n.input(1).empty() &&
          constants_.count(n.input(1)) == 0 &&
          compiler::attr_int(form.attrs, "keepdims", 1, where) == 0) {
        // Axes only the run time knows: reduced in keepdims form (the kernel binds the
        // reduced dims from its output), then squeezed at the same axes.
        Expr kept = compiler::make_var(n.output(0) + "/keepdims");
        compiler::Attrs attrs = form.attrs;
        attrs["keepdims"] = int64_t{1};
        b.bindings.emplace_back(kept, compiler::make_call(form.op, form.inputs, attrs));
        form = NodeForm{"Squeeze", {kept, form.inputs[1]}, {}};
      }
      if (form.op == "Resize" && form.inputs.size() >= 3 && !is_absent(form.inputs[2]) &&
          (form.inputs.size() < 4 || is_absent(form.inputs[3])) && !known(form.inputs[2])) {
        // Scales only the run time knows: the output sizes as a value of its own
        // (compiler/op: dynvm.ResizeOutputSizes, the fifth input), read as run-time symbols.
        Expr sizes = compiler::make_var(n.output(0) + "/sizes");
        b.bindings.emplace_back(sizes, compiler::make_call("dynvm.ResizeOutputSizes",
                                                           {form.inputs[0], form.inputs[2]}));
        form.inputs.resize(4, absent_input());
        form.inputs.push_back(sizes);
      }
      if (form.op == "CumSum" && form.inputs.size() == 2 && !known(form.inputs[1])) {
        // An axis only the run time knows: a scan over the middle axis of the input viewed as
        // [outer, n, inner] (compiler/op: dynvm.AxisExtents, which checks the axis), then
        // viewed back.
        const std::string& out = n.output(0);
        Expr x = form.inputs[0];
        Expr extents = compiler::make_var(out + "/extents");
        Expr view = compiler::make_var(out + "/view");
        Expr scanned = compiler::make_var(out + "/scan");
        Expr shape = compiler::make_var(out + "/shape");
        const compiler::Attrs allowzero{{"allowzero", int64_t{1}}};
        b.bindings.emplace_back(extents,
                                compiler::make_call("dynvm.AxisExtents", {x, form.inputs[1]}));
        b.bindings.emplace_back(view, compiler::make_call("Reshape", {x, extents}, allowzero));
        b.bindings.emplace_back(scanned,
                                compiler::make_call("CumSum", {view, i64_scalar(1)}, form.attrs));
        b.bindings.emplace_back(shape, compiler::make_call("Shape", {x}));
        form = NodeForm{"Reshape", {scanned, shape}, allowzero};
      }
      if (form.op == "Range") {
        // Its length as a value of its own (compiler/op: dynvm.RangeCount), for bounds only
        // the run time knows. A limit cast to float from another value (torch's
        // arange(T, dtype=float) for sinusoidal positions: Range(0.0, Cast(T), 1.0)) goes
        // along uncast, so that type inference can count an integer T as it is.
        std::vector<Expr> count_inputs = form.inputs;
        if (std::optional<Expr> uncast = cast_operand(b, form.inputs[1])) {
          count_inputs.push_back(*uncast);
        }
        Expr count = compiler::make_var(n.output(0) + "/length");
        b.bindings.emplace_back(count, compiler::make_call("dynvm.RangeCount", count_inputs));
        form.inputs.push_back(count);
      }
      if (form.op == "OneHot" && form.inputs.size() == 3) {
        // Depth may be any numeric dtype: as an int64 value, so that type inference reads
        // it as a dim (a constant, or a run-time symbol).
        Expr depth = compiler::make_var(n.output(0) + "/depth");
        b.bindings.emplace_back(
            depth, compiler::make_call("Cast", {form.inputs[1]}, {{"to", int64_t{7}}}));  // INT64
        form.inputs[1] = depth;
      }
      if (indexes_data(form.op) && form.inputs.size() >= 2) check_indices(form, n, where, b);
      if (form.op == "NonZero" || form.op == "Compress") {
        // The data decides the output's extent: counted first, as a value of its own
        // (dynvm.CountNonZero), so that the op's type has it as a run-time symbol.
        Expr count = compiler::make_var(n.output(0) + "/count");
        Expr counted = form.inputs[form.op == "NonZero" ? 0 : 1];
        b.bindings.emplace_back(count, compiler::make_call("dynvm.CountNonZero", {counted}));
        form.inputs.push_back(count);
      }
      if (form.op == "Unique") {
        Expr count = compiler::make_var(n.output(0) + "/count");
        compiler::Attrs attrs = form.attrs;
        attrs.erase("num_outputs");  // the count is one value
        b.bindings.emplace_back(count,
                                compiler::make_call("dynvm.UniqueCount", form.inputs, attrs));
        form.inputs.push_back(count);
      }
      if (form.op == "NonMaxSuppression") {
        // The same for the selected rows (dynvm.NonMaxSuppressionCount runs the selection).
        Expr count = compiler::make_var(n.output(0) + "/count");
        while (form.inputs.size() < 5) form.inputs.push_back(absent_input());
        b.bindings.emplace_back(
            count, compiler::make_call("dynvm.NonMaxSuppressionCount", form.inputs, form.attrs));
        form.inputs.push_back(count);
      }
      // Operators and outputs that existing operators compute (decompose.h,
      // expand_integer.h): their steps bound next to the node.
      const std::string& out = n.output(0);
      Emit emit = [&b, &out](const std::string& what, Expr v) {
        Expr var = compiler::make_var(out + "/" + what);
        b.bindings.emplace_back(var, std::move(v));
        return var;
      };
      if (is_integer_linear_op(form.op)) {
        value = expand_integer_linear(form, emit, where);
      } else if (n.output_size() > 1 && (form.op == "Dropout" || form.op == "BatchNormalization")) {
        value = form.op == "Dropout" ? dropout_with_mask(form, emit)
                                     : batch_norm_training(form, emit, where);
      } else {
        // An Einsum that is a matrix product: MatMul between Transposes.
        if (form.op == "Einsum") value = einsum_as_matmul(form, emit);
        if (!value.defined()) value = compiler::make_call(form.op, form.inputs, form.attrs);
      }
    }
    bind_outputs(n, value, b, where);
  }

  // Ops whose input 1 indexes input 0 (data): an index out of range fails the run naming
  // the node, as in ONNX Runtime (compiler/op: dynvm.CheckIndices), instead of the kernels'
  // clamp.
  static bool indexes_data(const std::string& op) {
    return op == "Gather" || op == "GatherElements" || op == "GatherND" ||
           op == "ScatterElements" || op == "ScatterND";
  }

  // The node's indices replaced by dynvm.CheckIndices of them; indices only the run time
  // knows are counted by dynvm.IndicesOutOfRange first (constants are checked at compile
  // time).
  void check_indices(NodeForm& form, const onnx::NodeProto& n, const std::string& where, Block& b) {
    const bool nd = form.op == "GatherND" || form.op == "ScatterND";
    compiler::Attrs attrs{{"nd", int64_t{nd ? 1 : 0}}};
    const char* axis_attr = nd ? "batch_dims" : "axis";
    auto axis = form.attrs.find(axis_attr);
    attrs["axis"] = axis != form.attrs.end() ? axis->second : compiler::AttrValue(int64_t{0});
    std::vector<Expr> operands{form.inputs[1], form.inputs[0]};
    if (!known(form.inputs[1])) {
      Expr count = compiler::make_var(n.output(0) + "/bad_indices");
      b.bindings.emplace_back(count, compiler::make_call("dynvm.IndicesOutOfRange",
                                                         {form.inputs[0], form.inputs[1]}, attrs));
      operands.push_back(count);
    }
    attrs["node"] = where;
    Expr checked = compiler::make_var(n.output(0) + "/indices");
    b.bindings.emplace_back(checked, compiler::make_call("dynvm.CheckIndices", operands, attrs));
    form.inputs[1] = checked;
  }

  // A call whose value is a tuple of its outputs: it has several, or it is an operator
  // whose output count varies (the count goes into `num_outputs`, Split's own attribute
  // since opset 18, which type inference reads for every operator).
  static bool multi_output_call(const onnx::NodeProto& n) {
    static const std::set<std::string> kVariadicOutputs = {"LSTM", "GRU", "RNN", "Split"};
    if (n.op_type() == "If" || n.op_type() == "Loop" || n.op_type() == "Scan") return false;
    return n.output_size() > 1 || kVariadicOutputs.count(n.op_type()) > 0;
  }

  // One output: bound directly. Several (and always for Loop and Scan, whose value is a
  // tuple): the tuple, then a get_item per named output.
  void bind_outputs(const onnx::NodeProto& n, const Expr& value, Block& b,
                    const std::string& where) {
    if (n.output_size() == 0) user_error(where, ": the node has no outputs");
    bool tuple_valued = multi_output_call(n) || n.op_type() == "Loop" || n.op_type() == "Scan" ||
                        (n.op_type() == "If" && n.output_size() > 1);
    if (!tuple_valued) {
      bind(b, n.output(0), value);
      return;
    }
    std::string tuple_name = (n.name().empty() ? n.output(0) : n.name()) + "_outputs";
    bind(b, tuple_name, value);
    Expr tuple = b.bindings.back().first;
    for (int k = 0; k < n.output_size(); ++k) {
      if (n.output(k).empty()) continue;  // an optional output nobody uses
      Expr field = compiler::make_get_item(tuple, k);
      if (n.op_type() == "Loop" && present_carried_.count(k)) {
        // The body returns a plain value for this optional carried value: so is the output.
        bind(b, n.output(k) + "/optional", field);
        field = compiler::make_call("OptionalGetElement", {b.bindings.back().first});
      }
      bind(b, n.output(k), field);
    }
  }

  Expr constant_node(const onnx::NodeProto& n, const std::string& where) {
    if (n.attribute_size() != 1) user_error(where, ": a Constant needs exactly one attribute");
    const auto& a = n.attribute(0);
    const std::string& kind = a.name();
    if (kind == "value") return compiler::make_constant(tensor_from_proto(a.t(), where));
    if (kind == "value_float") {
      return compiler::make_constant(
          vm::Tensor::from_vector(std::vector<float>{a.f()}, {}, vm::DType::kFloat32));
    }
    if (kind == "value_int") {
      return compiler::make_constant(
          vm::Tensor::from_vector(std::vector<int64_t>{a.i()}, {}, vm::DType::kInt64));
    }
    if (kind == "value_floats") {
      std::vector<float> v(a.floats().begin(), a.floats().end());
      return compiler::make_constant(
          vm::Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, vm::DType::kFloat32));
    }
    if (kind == "value_ints") {
      std::vector<int64_t> v(a.ints().begin(), a.ints().end());
      return compiler::make_constant(
          vm::Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, vm::DType::kInt64));
    }
    user_error(where, ": Constant attribute '", kind, "' is not supported");
  }

  // An empty Optional's type as the attributes its type rule reads (op/ops_sequence.cc):
  // elem_kind, dtype, and shape (-1: not a constant) when the rank is known.
  void optional_type_attrs(const onnx::TypeProto& t, compiler::Attrs& attrs,
                           const std::string& where) {
    const bool sequence = t.has_sequence_type();
    const onnx::TypeProto& elem = sequence ? t.sequence_type().elem_type() : t;
    attrs["elem_kind"] = std::string(sequence ? "sequence" : "tensor");
    attrs["dtype"] = static_cast<int64_t>(vm::to_onnx_code(sequence_dtype(elem, where)));
    if (!elem.tensor_type().has_shape()) return;
    std::vector<int64_t> shape;
    for (const auto& d : elem.tensor_type().shape().dim())
      shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    attrs["shape"] = shape;
  }

  compiler::AttrValue attribute(const onnx::AttributeProto& a, const std::string& where) {
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        return a.i();
      case onnx::AttributeProto::FLOAT:
        return static_cast<double>(a.f());
      case onnx::AttributeProto::STRING:
        return a.s();
      case onnx::AttributeProto::INTS:
        return std::vector<int64_t>(a.ints().begin(), a.ints().end());
      case onnx::AttributeProto::FLOATS:
        return std::vector<double>(a.floats().begin(), a.floats().end());
      case onnx::AttributeProto::STRINGS:
        return std::vector<std::string>(a.strings().begin(), a.strings().end());
      case onnx::AttributeProto::TENSOR:
        return tensor_from_proto(a.t(), where + " attribute " + a.name());
      default:
        user_error(where, ": attribute '", a.name(), "' has an unsupported kind (",
                   onnx::AttributeProto::AttributeType_Name(a.type()), ")");
    }
  }

  const onnx::GraphProto& graph_attr(const std::map<std::string, const onnx::GraphProto*>& graphs,
                                     const std::string& name, const std::string& where) {
    auto it = graphs.find(name);
    if (it == graphs.end()) user_error(where, ": missing graph attribute '", name, "'");
    return *it->second;
  }

  Expr if_node(NodeForm& form, const std::map<std::string, const onnx::GraphProto*>& graphs,
               const std::string& where) {
    if (form.inputs.size() != 1) user_error(where, ": If takes one input (cond)");
    const auto& then_graph = graph_attr(graphs, "then_branch", where);
    const auto& else_graph = graph_attr(graphs, "else_branch", where);
    if (then_graph.output_size() != else_graph.output_size()) {
      user_error(where, ": the branches have ", then_graph.output_size(), " and ",
                 else_graph.output_size(), " outputs");
    }
    scopes_.emplace_back();
    Expr then_branch = block(then_graph, false);
    scopes_.pop_back();
    scopes_.emplace_back();
    Expr else_branch = block(else_graph, false);
    scopes_.pop_back();
    return compiler::make_if(form.inputs[0], then_branch, else_branch);
  }

  // Loop body inputs: (iteration, cond, carried...); outputs: (cond, carried..., scans...).
  Expr loop_node(NodeForm& form, const std::map<std::string, const onnx::GraphProto*>& graphs,
                 const std::string& where) {
    if (form.inputs.size() < 2) user_error(where, ": Loop needs M and cond inputs");
    const auto& g = graph_attr(graphs, "body", where);
    const size_t carried = form.inputs.size() - 2;
    if (static_cast<size_t>(g.input_size()) != carried + 2) {
      user_error(where, ": the body takes ", g.input_size(), " inputs, expected ", carried + 2);
    }
    if (static_cast<size_t>(g.output_size()) < carried + 1) {
      user_error(where, ": the body has ", g.output_size(), " outputs, expected at least ",
                 carried + 1);
    }
    auto body = std::make_shared<compiler::Function>();
    body->name = "loop_body";
    scopes_.emplace_back();
    for (const auto& in : g.input()) {
      Expr v = compiler::make_var(in.name(), value_type(in, where + " body input " + in.name()));
      define(in.name(), v);
      body->params.push_back(v);
    }
    // ONNX lets a body return a plain value for an optional carried value (the value is
    // then present): wrapped here, so the carried type stays the optional.
    std::set<int> as_optional;
    for (size_t k = 0; k < carried; ++k) {
      const onnx::TypeProto& in = g.input(static_cast<int>(k + 2)).type();
      const onnx::TypeProto& out = g.output(static_cast<int>(k + 1)).type();
      if (in.has_optional_type() && (out.has_sequence_type() || out.has_tensor_type())) {
        as_optional.insert(static_cast<int>(k + 1));
      }
    }
    body->body = block(g, true, as_optional);
    present_carried_.clear();
    for (int k : as_optional) present_carried_.insert(k - 1);
    scopes_.pop_back();
    auto optional = [](const Expr& e) {
      bool absent = e.kind() == compiler::ExprKind::kTuple && e->operands.empty();
      return absent ? Expr() : e;
    };
    std::vector<Expr> init(form.inputs.begin() + 2, form.inputs.end());
    return compiler::make_loop(optional(form.inputs[0]), optional(form.inputs[1]), init, body,
                               g.output_size() - 1 - static_cast<int64_t>(carried));
  }

  // Scan (opset >= 9) as a loop over the scan axis: the body gets (i, cond, states...) and
  // reads element i of each scan input with Gather; its scan outputs stack along axis 0.
  Expr scan_node(NodeForm& form, const std::map<std::string, const onnx::GraphProto*>& graphs,
                 Block& outer, const std::string& where) {
    const auto& g = graph_attr(graphs, "body", where);
    int64_t num_scan_inputs = compiler::attr_int(form.attrs, "num_scan_inputs", -1, where);
    if (num_scan_inputs < 1 || static_cast<size_t>(num_scan_inputs) > form.inputs.size()) {
      user_error(where, ": num_scan_inputs must be in 1..", form.inputs.size());
    }
    const size_t states = form.inputs.size() - static_cast<size_t>(num_scan_inputs);
    auto axes = compiler::attr_ints(form.attrs, "scan_input_axes", {}, where);
    auto directions = compiler::attr_ints(form.attrs, "scan_input_directions", {}, where);
    for (const char* name : {"scan_output_axes", "scan_output_directions"}) {
      for (int64_t v : compiler::attr_ints(form.attrs, name, {}, where)) {
        if (v != 0) user_error(where, ": ", name, " other than 0 is not supported yet");
      }
    }
    if (g.input_size() != static_cast<int>(form.inputs.size())) {
      user_error(where, ": the body takes ", g.input_size(), " inputs, expected ",
                 form.inputs.size());
    }
    auto axis_of = [&](size_t k) { return k < axes.size() ? axes[k] : int64_t{0}; };
    // Trip count: the first scan input's extent along its axis.
    Expr first_scan = form.inputs[states];
    Expr shape = compiler::make_call("Shape", {first_scan});
    Expr trip =
        compiler::make_call("Gather", {shape, i64_scalar(axis_of(0))}, {{"axis", int64_t{0}}});
    Expr trip_var = compiler::make_var("scan_trips");
    outer.bindings.emplace_back(trip_var, trip);

    auto body = std::make_shared<compiler::Function>();
    body->name = "scan_body";
    scopes_.emplace_back();
    Expr iter = compiler::make_var("i", compiler::tensor_type(vm::DType::kInt64, {}));
    Expr cond = compiler::make_var("cond", compiler::tensor_type(vm::DType::kBool, {}));
    body->params = {iter, cond};
    for (size_t s = 0; s < states; ++s) {
      const auto& in = g.input(static_cast<int>(s));
      Expr v = compiler::make_var(in.name(), value_type(in, where + " body input " + in.name()));
      define(in.name(), v);
      body->params.push_back(v);
    }
    Block prologue;
    for (size_t k = 0; k < static_cast<size_t>(num_scan_inputs); ++k) {
      Expr index = iter;
      if (k < directions.size() && directions[k] == 1) {  // reverse: n - 1 - i
        index = compiler::make_call("Sub",
                                    {compiler::make_call("Sub", {trip_var, i64_scalar(1)}), iter});
      }
      const auto& in = g.input(static_cast<int>(states + k));
      bind(prologue, in.name(),
           compiler::make_call("Gather", {form.inputs[states + k], index}, {{"axis", axis_of(k)}}));
    }
    // The body graph's lets follow the prologue's; its outputs (states'..., scans...) become
    // (cond, states'..., scans...).
    Expr inner = block(g, true);
    while (inner.kind() == compiler::ExprKind::kLet) {
      prologue.bindings.emplace_back(inner->operands[0], inner->operands[1]);
      inner = inner->operands[2];
    }
    std::vector<Expr> fields{cond};
    fields.insert(fields.end(), inner->operands.begin(), inner->operands.end());
    Expr result = compiler::make_tuple(fields);
    for (auto it = prologue.bindings.rbegin(); it != prologue.bindings.rend(); ++it) {
      result = compiler::make_let(it->first, it->second, result);
    }
    body->body = result;
    scopes_.pop_back();
    std::vector<Expr> init(form.inputs.begin(), form.inputs.begin() + static_cast<int64_t>(states));
    return compiler::make_loop(trip_var, Expr(), init, body,
                               g.output_size() - static_cast<int64_t>(states));
  }

  // Scan-8: every state and scan input (and output) has a batch axis first, and an
  // optional sequence_lens input comes first: a Loop over the batch around Scan-9's form of
  // one batch element, whose outputs the Loop stacks as its scan outputs.
  Expr scan8_node(NodeForm form, const std::map<std::string, const onnx::GraphProto*>& graphs,
                  Block& outer, const std::string& where) {
    if (form.inputs.size() < 2) user_error(where, ": Scan-8 takes sequence_lens and inputs");
    if (!is_absent(form.inputs[0])) user_error(where, ": sequence_lens is not supported yet");
    form.inputs.erase(form.inputs.begin());
    auto directions = form.attrs.find("directions");
    if (directions != form.attrs.end()) {
      form.attrs["scan_input_directions"] = directions->second;
      form.attrs.erase(directions);
    }
    const auto& g = graph_attr(graphs, "body", where);
    Expr batch = compiler::make_var("scan_batch");
    outer.bindings.emplace_back(
        batch, compiler::make_call("Gather",
                                   {compiler::make_call("Shape", {form.inputs[0]}), i64_scalar(0)},
                                   {{"axis", int64_t{0}}}));
    auto body = std::make_shared<compiler::Function>();
    body->name = "scan_batch_body";
    Expr element = compiler::make_var("b", compiler::tensor_type(vm::DType::kInt64, {}));
    Expr cond = compiler::make_var("cond", compiler::tensor_type(vm::DType::kBool, {}));
    body->params = {element, cond};
    Block inner;
    for (Expr& in : form.inputs) {
      Expr v = compiler::make_var("scan_batch_slice");
      inner.bindings.emplace_back(
          v, compiler::make_call("Gather", {in, element}, {{"axis", int64_t{0}}}));
      in = v;
    }
    Expr scan = compiler::make_var("scan_batch_element");
    inner.bindings.emplace_back(scan, scan_node(form, graphs, inner, where));
    std::vector<Expr> fields{cond};
    for (int k = 0; k < g.output_size(); ++k) fields.push_back(compiler::make_get_item(scan, k));
    Expr result = compiler::make_tuple(fields);
    for (auto it = inner.bindings.rbegin(); it != inner.bindings.rend(); ++it) {
      result = compiler::make_let(it->first, it->second, result);
    }
    body->body = result;
    return compiler::make_loop(batch, Expr(), {}, body, g.output_size());
  }

  static Expr i64_scalar(int64_t v) {
    return compiler::make_constant(
        vm::Tensor::from_vector(std::vector<int64_t>{v}, {}, vm::DType::kInt64));
  }

  compiler::Module* module_;
  int64_t opset_;
  const NodeOpsets& node_opsets_;
  // The carried values (by index) of the Loop being imported whose body returns a plain
  // value for an optional: its outputs are read back out of the optional (bind_outputs).
  std::set<int> present_carried_;
  const ImportOptions& options_;
  std::vector<std::map<std::string, Expr>> scopes_;
  std::set<std::string> used_dim_options_;
};

}  // namespace

compiler::Module import_onnx_bytes(std::string_view bytes, const std::string& name,
                                   const ImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.size() > kMaxModelBytes ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    user_error(name, ": not an ONNX model (the protobuf does not parse)");
  }
  if (!model.has_graph()) user_error(name, ": the model has no graph");
  int64_t opset = -1;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (opset < 0) user_error(name, ": the model imports no opset of the default ONNX domain");
  // Operators defined as functions of others become their bodies (inline_functions.h).
  const NodeOpsets node_opsets = inline_functions(model, opset);
  compiler::Module module;
  GraphImporter importer(&module, opset, node_opsets, options);
  try {
    module.functions.push_back(importer.main(model.graph()));
  } catch (const UserError& e) {
    user_error(name, ": ", e.what());
  }
  return module;
}

compiler::Module import_onnx_file(const std::string& path, const ImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(path, ": cannot open the file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return import_onnx_bytes(buffer.str(), path, options);
}

}  // namespace dynvm::frontends::onnx_import
