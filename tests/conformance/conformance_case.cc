// TEST-ONLY: reading ONNX node tests and comparing values (see conformance_case.h).
#include "tests/conformance/conformance_case.h"

#include <gtest/gtest.h>
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "frontends/onnx/normalize.h"
#include "frontends/onnx/tensor_proto.h"
#include "vm/error.h"

namespace dynvm::conformance {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot read ", path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

onnx::TensorProto read_tensor(const std::filesystem::path& path) {
  onnx::TensorProto proto;
  if (!proto.ParseFromString(read_file(path))) user_error(path.string(), " is not a TensorProto");
  return proto;
}

bool readable_type(const onnx::TypeProto& t) {
  if (t.has_tensor_type()) return true;
  if (t.has_sequence_type()) return t.sequence_type().elem_type().has_tensor_type();
  if (t.has_optional_type()) return readable_type(t.optional_type().elem_type());
  return false;
}

vm::Value sequence_value(const onnx::SequenceProto& p, const std::string& where) {
  vm::Tuple elements;
  for (const auto& t : p.tensor_values()) {
    elements.emplace_back(frontends::onnx_import::tensor_from_proto(t, where));
  }
  return vm::Value(std::move(elements));
}

// A sequence or optional input_N.pb / output_N.pb as the VM passes it (conformance_case.h).
vm::Value read_value(const std::filesystem::path& path, const onnx::TypeProto& type) {
  const std::string where = path.string();
  if (type.has_sequence_type()) {
    onnx::SequenceProto p;
    if (!p.ParseFromString(read_file(path))) user_error(where, " is not a SequenceProto");
    return sequence_value(p, where);
  }
  onnx::OptionalProto p;
  if (!p.ParseFromString(read_file(path))) user_error(where, " is not an OptionalProto");
  vm::Tuple held;
  if (p.has_tensor_value()) {
    held.emplace_back(frontends::onnx_import::tensor_from_proto(p.tensor_value(), where));
  } else if (p.has_sequence_value()) {
    held.push_back(sequence_value(p.sequence_value(), where));
  }
  return vm::Value(std::move(held));
}

// The inputs (by index) that our bindings read at compile time, per op.
const std::map<std::string, std::set<int>>& compile_time_inputs() {
  static const std::map<std::string, std::set<int>> table = {
      {"Slice", {1, 2, 3, 4}},  {"Reshape", {1}},         {"Squeeze", {1}},
      {"Unsqueeze", {1}},       {"Expand", {1}},          {"Tile", {1}},
      {"Pad", {1, 2, 3}},       {"Split", {1}},           {"CumSum", {1}},
      {"Resize", {1, 2, 3}},    {"Clip", {1, 2}},         {"ReduceSum", {1}},
      {"ReduceMean", {1}},      {"ReduceMax", {1}},       {"ReduceMin", {1}},
      {"ReduceProd", {1}},      {"ReduceL1", {1}},        {"ReduceL2", {1}},
      {"ReduceLogSumExp", {1}}, {"ConstantOfShape", {0}}, {"Range", {0, 1, 2}},
      {"Dropout", {1, 2}},      {"Upsample", {1}},
  };
  return table;
}

std::string sanitize(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  return out;
}

// Why a graph (and its subgraphs) is outside what the importer accepts, or "".
std::string unsupported_reason(const onnx::GraphProto& g, int64_t opset) {
  for (const auto& n : g.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return "domain " + n.domain();
    try {
      frontends::onnx_import::check_supported(n.op_type(), opset, n.op_type());
    } catch (const UserError& e) {
      return e.what();
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) {
        std::string why = unsupported_reason(a.g(), opset);
        if (!why.empty()) return why;
      }
    }
  }
  return "";
}

template <typename T>
bool match_values(const vm::Tensor& got, const vm::Tensor& want, double rtol, double atol,
                  std::string* why) {
  const T* g = got.data_as<const T>();
  const T* w = want.data_as<const T>();
  for (int64_t k = 0; k < want.numel(); ++k) {
    bool ok;
    if constexpr (std::is_floating_point_v<T>) {
      const double a = g[k], b = w[k];
      ok = (std::isnan(a) && std::isnan(b)) || a == b ||
           std::abs(a - b) <= atol + rtol * std::abs(b);
    } else {
      ok = g[k] == w[k];
    }
    if (!ok) {
      std::ostringstream s;
      s << "element " << k << ": got " << +g[k] << ", expected " << +w[k];
      *why = s.str();
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<std::filesystem::path> case_dirs(const char* default_dir) {
  const char* env = std::getenv("DYNVM_CONFORMANCE_DIR");
  const std::filesystem::path node =
      std::filesystem::path(env != nullptr && *env != '\0' ? env : default_dir) / "node";
  if (!std::filesystem::is_directory(node)) {
    ADD_FAILURE() << "no ONNX node tests in " << node.string()
                  << ": run `make conformance-data` (scripts/gen-conformance.sh) or point "
                     "DYNVM_CONFORMANCE_DIR at its output";
    return {};
  }
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(node)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_", 0) == 0) {
      dirs.push_back(e.path());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

std::map<std::string, std::string> read_case_list(const std::filesystem::path& file) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  EXPECT_TRUE(in.good()) << "cannot read " << file.string();
  const std::string list = file.filename().string();
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string name, rest;
    s >> name;
    std::getline(s, rest);
    rest.erase(0, rest.find_first_not_of(' '));
    EXPECT_FALSE(rest.empty()) << list << ": nothing after the name in: " << line;
    EXPECT_TRUE(out.emplace(name, rest).second) << list << " lists " << name << " twice";
  }
  return out;
}

NodeCase load_case(const std::filesystem::path& dir) {
  NodeCase c;
  c.name = dir.filename().string();
  onnx::ModelProto model;
  if (!model.ParseFromString(read_file(dir / "model.onnx"))) {
    user_error(c.name, ": model.onnx is not a ModelProto");
  }
  int64_t opset = -1;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  onnx::GraphProto* g = model.mutable_graph();
  for (const auto& n : g->node()) c.ops.push_back(n.op_type());
  c.unsupported = unsupported_reason(*g, opset);
  for (const auto* values : {&g->input(), &g->output()}) {
    for (const auto& v : *values) {
      if (!v.type().has_tensor_type()) {
        c.unsupported = "a non-tensor value (" + v.name() + ")";
      } else if (v.type().tensor_type().elem_type() == onnx::TensorProto::STRING) {
        c.unsupported = "a string tensor (" + v.name() + ")";
      }
    }
  }
  if (!c.unsupported.empty()) return c;

  // Graph inputs that are not initializers, each with its test_data_set_0 file.
  std::set<std::string> initializers;
  for (const auto& init : g->initializer()) initializers.insert(init.name());
  const std::filesystem::path data = dir / "test_data_set_0";
  std::vector<onnx::TensorProto> input_protos;
  std::vector<std::string> input_names;
  for (const auto& in : g->input()) {
    if (initializers.count(in.name())) continue;
    const auto path = data / ("input_" + std::to_string(input_protos.size()) + ".pb");
    input_protos.push_back(read_tensor(path));
    input_names.push_back(in.name());
  }
  for (size_t k = 0;; ++k) {
    const auto path = data / ("output_" + std::to_string(k) + ".pb");
    if (!std::filesystem::exists(path)) break;
    c.outputs.push_back(
        frontends::onnx_import::tensor_from_proto(read_tensor(path), path.string()));
  }

  // Compile-time inputs move into the initializers.
  std::set<std::string> fold;
  for (const auto& n : g->node()) {
    auto it = compile_time_inputs().find(n.op_type());
    if (it == compile_time_inputs().end()) continue;
    for (int i : it->second) {
      if (i < n.input_size() && !n.input(i).empty()) fold.insert(n.input(i));
    }
  }
  onnx::GraphProto kept_inputs;
  for (size_t k = 0; k < input_names.size(); ++k) {
    if (!fold.count(input_names[k])) continue;
    onnx::TensorProto* init = g->add_initializer();
    *init = input_protos[k];
    init->set_name(input_names[k]);
    c.folded.push_back(input_names[k]);
  }
  for (const auto& in : g->input()) {
    if (fold.count(in.name()) && !initializers.count(in.name())) continue;
    *kept_inputs.add_input() = in;
  }
  g->mutable_input()->Swap(kept_inputs.mutable_input());
  for (size_t k = 0; k < input_names.size(); ++k) {
    if (fold.count(input_names[k])) continue;
    c.inputs.push_back(
        frontends::onnx_import::tensor_from_proto(input_protos[k], c.name + " " + input_names[k]));
  }

  // Symbolic dims (named, or unnamed: `<input>_<axis>`) bound to the test's shapes.
  size_t runtime = 0;
  for (const auto& in : g->input()) {
    if (initializers.count(in.name())) continue;
    const vm::Tensor& t = c.inputs.at(runtime++);
    const auto& shape = in.type().tensor_type().shape();
    for (int d = 0; d < shape.dim_size() && d < t.ndim(); ++d) {
      const auto& dim = shape.dim(d);
      if (dim.has_dim_value()) continue;
      std::string name =
          dim.has_dim_param() ? dim.dim_param() : sanitize(in.name()) + "_" + std::to_string(d);
      c.options.dims[name] = {t.dim(d), t.dim(d)};
    }
  }
  c.model_bytes = model.SerializeAsString();
  return c;
}

namespace {

// Why a graph (with its subgraphs) is not applicable, or "": a random generator, a domain
// of training ops, or a Dropout whose training_mode is given and true.
std::string not_applicable_reason(const onnx::GraphProto& g,
                                  const std::map<std::string, onnx::TensorProto>& values) {
  static const std::set<std::string> kRandom = {"Bernoulli",         "RandomUniform",
                                                "RandomUniformLike", "RandomNormal",
                                                "RandomNormalLike",  "Multinomial"};
  for (const auto& n : g.node()) {
    if (kRandom.count(n.op_type())) return "random generator (" + n.op_type() + ")";
    if (n.domain() == "ai.onnx.preview.training") return "training op (" + n.op_type() + ")";
    if (n.op_type() == "Dropout" && n.input_size() >= 3 && !n.input(2).empty()) {
      auto it = values.find(n.input(2));
      if (it != values.end()) {
        vm::Tensor mode = frontends::onnx_import::tensor_from_proto(it->second, n.input(2));
        if (mode.numel() == 1 && mode.dtype() == vm::DType::kBool && mode.data_as<uint8_t>()[0]) {
          return "training-mode Dropout";
        }
      }
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) {
        std::string why = not_applicable_reason(a.g(), values);
        if (!why.empty()) return why;
      }
    }
  }
  return "";
}

}  // namespace

RawCase load_raw_case(const std::filesystem::path& dir) {
  RawCase c;
  c.name = dir.filename().string();
  c.model_bytes = read_file(dir / "model.onnx");
  onnx::ModelProto model;
  if (!model.ParseFromString(c.model_bytes)) user_error(c.name, ": model.onnx is not a ModelProto");
  const onnx::GraphProto& g = model.graph();
  for (const auto* values : {&g.input(), &g.output()}) {
    for (const auto& v : *values) {
      if (v.type().has_tensor_type() &&
          v.type().tensor_type().elem_type() == onnx::TensorProto::STRING) {
        c.not_applicable = "string tensor";
        return c;
      }
    }
  }
  for (const auto* values : {&g.input(), &g.output()}) {
    for (const auto& v : *values) {
      if (!readable_type(v.type()) && c.unreadable.empty()) {
        c.unreadable = "a value that is not a tensor, a sequence or an optional (" + v.name() + ")";
      }
    }
  }
  std::set<std::string> initializers;
  std::map<std::string, onnx::TensorProto> values;  // initializers and test inputs, by name
  for (const auto& init : g.initializer()) {
    initializers.insert(init.name());
    values[init.name()] = init;
  }
  if (!c.unreadable.empty()) {
    c.not_applicable = not_applicable_reason(g, values);
    return c;
  }
  const std::filesystem::path data = dir / "test_data_set_0";
  std::vector<std::pair<std::string, onnx::TensorProto>> inputs;
  std::vector<vm::Value> containers;  // by input index: sequences and optionals, read here
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;
    const auto path = data / ("input_" + std::to_string(inputs.size()) + ".pb");
    containers.emplace_back();
    if (!in.type().has_tensor_type()) {
      containers.back() = read_value(path, in.type());
      inputs.emplace_back(in.name(), onnx::TensorProto());
      continue;
    }
    inputs.emplace_back(in.name(), read_tensor(path));
    values[in.name()] = inputs.back().second;
  }
  c.not_applicable = not_applicable_reason(g, values);
  if (!c.not_applicable.empty() || !c.unreadable.empty()) return c;
  // onnx 1.12 writes bfloat16 test data as uint16 tensors: the graph's type says what the
  // bits are.
  auto as_declared = [](vm::Tensor t, const onnx::ValueInfoProto& v) {
    if (t.dtype() != vm::DType::kUInt16 ||
        v.type().tensor_type().elem_type() != onnx::TensorProto::BFLOAT16) {
      return t;
    }
    vm::Tensor bf = vm::Tensor::empty(t.shape(), vm::DType::kBFloat16);
    if (t.nbytes() > 0) std::memcpy(bf.data(), t.data(), t.nbytes());
    return bf;
  };
  size_t k = 0;
  for (const auto& in : g.input()) {
    if (initializers.count(in.name())) continue;
    if (!in.type().has_tensor_type()) {
      c.inputs.push_back(containers.at(k++));
      continue;
    }
    const auto& [name, proto] = inputs.at(k++);
    c.inputs.push_back(
        as_declared(frontends::onnx_import::tensor_from_proto(proto, c.name + " " + name), in));
  }
  for (const auto& out : g.output()) {
    const auto path = data / ("output_" + std::to_string(c.outputs.size()) + ".pb");
    if (!std::filesystem::exists(path)) break;
    if (!out.type().has_tensor_type()) {
      c.outputs.push_back(read_value(path, out.type()));
      continue;
    }
    c.outputs.push_back(as_declared(
        frontends::onnx_import::tensor_from_proto(read_tensor(path), path.string()), out));
  }
  return c;
}

bool tensors_match(const vm::Tensor& got, const vm::Tensor& want, double rtol, double atol,
                   std::string* why) {
  if (got.dtype() != want.dtype()) {
    *why = "dtype " + std::string(vm::dtype_name(got.dtype())) + ", expected " +
           std::string(vm::dtype_name(want.dtype()));
    return false;
  }
  if (got.shape() != want.shape()) {
    *why = "shape differs";
    return false;
  }
  switch (want.dtype()) {
    case vm::DType::kFloat32:
      return match_values<float>(got, want, rtol, atol, why);
    case vm::DType::kFloat64:
      return match_values<double>(got, want, rtol, atol, why);
    case vm::DType::kInt8:
      return match_values<int8_t>(got, want, 0, 0, why);
    case vm::DType::kInt16:
      return match_values<int16_t>(got, want, 0, 0, why);
    case vm::DType::kInt32:
      return match_values<int32_t>(got, want, 0, 0, why);
    case vm::DType::kInt64:
      return match_values<int64_t>(got, want, 0, 0, why);
    case vm::DType::kUInt8:
      return match_values<uint8_t>(got, want, 0, 0, why);
    case vm::DType::kUInt16:
      return match_values<uint16_t>(got, want, 0, 0, why);
    case vm::DType::kUInt32:
      return match_values<uint32_t>(got, want, 0, 0, why);
    case vm::DType::kUInt64:
      return match_values<uint64_t>(got, want, 0, 0, why);
    case vm::DType::kBool:
      return match_values<uint8_t>(got, want, 0, 0, why);
    default:
      if (std::memcmp(got.data(), want.data(), want.nbytes()) != 0) {
        *why = "bytes differ";
        return false;
      }
      return true;
  }
}

bool values_match(const vm::Value& got, const vm::Value& want, double rtol, double atol,
                  std::string* why) {
  if (want.kind() == vm::ValueKind::kTensor) {
    if (got.if_tensor() == nullptr) {
      *why = "got " + got.summary() + ", expected a tensor";
      return false;
    }
    return tensors_match(got.as_tensor().copy_to(vm::kCpu), want.as_tensor(), rtol, atol, why);
  }
  if (got.kind() != vm::ValueKind::kTuple) {
    *why = "got " + got.summary() + ", expected a sequence or optional";
    return false;
  }
  const vm::Tuple& g = got.as_tuple();
  const vm::Tuple& w = want.as_tuple();
  if (g.size() != w.size()) {
    *why = str_cat(g.size(), " elements, expected ", w.size());
    return false;
  }
  for (size_t k = 0; k < w.size(); ++k) {
    if (!values_match(g[k], w[k], rtol, atol, why)) {
      *why = str_cat("element ", k, ": ", *why);
      return false;
    }
  }
  return true;
}

}  // namespace dynvm::conformance
