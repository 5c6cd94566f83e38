#include "tools/vmserve/protocol.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "vm/float16.h"

namespace dynvm::serve {
namespace {

using nlohmann::json;
using vm::DType;

struct DatatypeName {
  DType dtype;
  std::string_view name;
};
constexpr DatatypeName kDatatypes[] = {
    {DType::kBool, "BOOL"},     {DType::kUInt8, "UINT8"},   {DType::kUInt16, "UINT16"},
    {DType::kUInt32, "UINT32"}, {DType::kUInt64, "UINT64"}, {DType::kInt8, "INT8"},
    {DType::kInt16, "INT16"},   {DType::kInt32, "INT32"},   {DType::kInt64, "INT64"},
    {DType::kFloat16, "FP16"},  {DType::kFloat32, "FP32"},  {DType::kFloat64, "FP64"},
    {DType::kBFloat16, "BF16"},
};

[[noreturn]] void bad_request(const std::string& message) { throw HttpError(400, message); }

// Reads one JSON number into an element of type T, or says why it cannot be one.
template <typename T>
T json_element(const json& v, std::string_view input) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
      return v.get<int64_t>() == 1;
    }
    bad_request(
        str_cat("input '", input, "': BOOL data must be true, false, 0 or 1, not ", v.dump()));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) {
      bad_request(str_cat("input '", input, "': data must be numbers, not ", v.dump()));
    }
    return static_cast<T>(v.get<double>());
  } else {
    bool fits = false;
    if (v.is_number_unsigned()) {
      fits = v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    } else if (v.is_number_integer()) {
      int64_t i = v.get<int64_t>();
      fits = i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
             (i < 0 || static_cast<uint64_t>(i) <= uint64_t{std::numeric_limits<T>::max()});
    } else if (!v.is_number()) {
      bad_request(str_cat("input '", input, "': data must be numbers, not ", v.dump()));
    } else {
      bad_request(str_cat("input '", input, "': integer data holds ", v.dump()));
    }
    if (!fits) bad_request(str_cat("input '", input, "': ", v.dump(), " is out of range"));
    return v.is_number_unsigned() ? static_cast<T>(v.get<uint64_t>())
                                  : static_cast<T>(v.get<int64_t>());
  }
}

// Writes the numbers of `data` (flat or nested arrays, row-major) into `out`, which holds
// `capacity` elements; returns how many there were (more than capacity stops early).
template <typename T, typename Store>
int64_t fill_from_json(const json& data, int64_t capacity, int64_t count, Store&& store,
                       std::string_view input) {
  if (!data.is_array()) {
    if (count < capacity) store(count, json_element<T>(data, input));
    return count + 1;
  }
  for (const json& v : data) {
    count = fill_from_json<T>(v, capacity, count, store, input);
    if (count > capacity) break;
  }
  return count;
}

template <typename T>
int64_t fill_typed(const json& data, vm::Tensor& t, std::string_view input) {
  T* out = t.data_as<T>();
  return fill_from_json<T>(
      data, t.numel(), 0, [&](int64_t i, T v) { out[i] = v; }, input);
}

int64_t fill_tensor(const json& data, vm::Tensor& t, std::string_view input) {
  switch (t.dtype()) {
    case DType::kBool: {
      auto* out = t.data_as<uint8_t>();
      return fill_from_json<bool>(
          data, t.numel(), 0, [&](int64_t i, bool v) { out[i] = v ? 1 : 0; }, input);
    }
    case DType::kUInt8:
      return fill_typed<uint8_t>(data, t, input);
    case DType::kUInt16:
      return fill_typed<uint16_t>(data, t, input);
    case DType::kUInt32:
      return fill_typed<uint32_t>(data, t, input);
    case DType::kUInt64:
      return fill_typed<uint64_t>(data, t, input);
    case DType::kInt8:
      return fill_typed<int8_t>(data, t, input);
    case DType::kInt16:
      return fill_typed<int16_t>(data, t, input);
    case DType::kInt32:
      return fill_typed<int32_t>(data, t, input);
    case DType::kInt64:
      return fill_typed<int64_t>(data, t, input);
    case DType::kFloat32:
      return fill_typed<float>(data, t, input);
    case DType::kFloat64:
      return fill_typed<double>(data, t, input);
    case DType::kFloat16: {
      auto* out = t.data_as<uint16_t>();
      return fill_from_json<float>(
          data, t.numel(), 0, [&](int64_t i, float v) { out[i] = vm::float_to_half(v); }, input);
    }
    case DType::kBFloat16: {
      auto* out = t.data_as<uint16_t>();
      return fill_from_json<float>(
          data, t.numel(), 0, [&](int64_t i, float v) { out[i] = vm::float_to_bfloat16(v); },
          input);
    }
    default:
      DYNVM_INTERNAL_CHECK(false, "fill_tensor: dtype ", vm::dtype_name(t.dtype()));
  }
  return 0;
}

template <typename T>
void append_typed(const vm::Tensor& t, json& data) {
  const T* p = t.data_as<T>();
  for (int64_t i = 0; i < t.numel(); ++i) data.push_back(p[i]);
}

json tensor_data(const vm::Tensor& t) {
  json data = json::array();
  switch (t.dtype()) {
    case DType::kBool: {
      const auto* p = t.data_as<uint8_t>();
      for (int64_t i = 0; i < t.numel(); ++i) data.push_back(p[i] != 0);
      break;
    }
    case DType::kUInt8:
      append_typed<uint8_t>(t, data);
      break;
    case DType::kUInt16:
      append_typed<uint16_t>(t, data);
      break;
    case DType::kUInt32:
      append_typed<uint32_t>(t, data);
      break;
    case DType::kUInt64:
      append_typed<uint64_t>(t, data);
      break;
    case DType::kInt8:
      append_typed<int8_t>(t, data);
      break;
    case DType::kInt16:
      append_typed<int16_t>(t, data);
      break;
    case DType::kInt32:
      append_typed<int32_t>(t, data);
      break;
    case DType::kInt64:
      append_typed<int64_t>(t, data);
      break;
    case DType::kFloat32:
      append_typed<float>(t, data);
      break;
    case DType::kFloat64:
      append_typed<double>(t, data);
      break;
    case DType::kFloat16: {
      const auto* p = t.data_as<uint16_t>();
      for (int64_t i = 0; i < t.numel(); ++i) data.push_back(vm::half_to_float(p[i]));
      break;
    }
    case DType::kBFloat16: {
      const auto* p = t.data_as<uint16_t>();
      for (int64_t i = 0; i < t.numel(); ++i) data.push_back(vm::bfloat16_to_float(p[i]));
      break;
    }
    default:
      DYNVM_INTERNAL_CHECK(false, "tensor_data: dtype ", vm::dtype_name(t.dtype()));
  }
  return data;
}

// The numbers in `data` (flat or nested arrays). Nesting deeper than any tensor's rank
// is refused, so that no walk over a hostile document runs out of stack.
int64_t count_elements(const json& data, int depth, std::string_view label) {
  constexpr int kMaxDepth = 64;
  if (!data.is_array()) return 1;
  if (depth >= kMaxDepth) bad_request(str_cat(label, ": \"data\" is nested too deeply"));
  int64_t n = 0;
  for (const json& v : data) n += count_elements(v, depth + 1, label);
  return n;
}

const json* find_member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// parameters.<key> of `object` as a non-negative integer, if present.
std::optional<int64_t> int_parameter(const json& object, const char* key, std::string_view what) {
  const json* params = find_member(object, "parameters");
  if (params == nullptr) return std::nullopt;
  if (!params->is_object()) bad_request(str_cat(what, ": parameters must be an object"));
  const json* v = find_member(*params, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer() || v->get<int64_t>() < 0) {
    bad_request(str_cat(what, ": parameters.", key, " must be a non-negative integer"));
  }
  return v->get<int64_t>();
}

bool bool_parameter(const json& object, const char* key, std::string_view what) {
  const json* params = find_member(object, "parameters");
  if (params == nullptr || !params->is_object()) return false;
  const json* v = find_member(*params, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) bad_request(str_cat(what, ": parameters.", key, " must be true or false"));
  return v->get<bool>();
}

const std::string& string_member(const json& object, const char* key, std::string_view what) {
  const json* v = find_member(object, key);
  if (v == nullptr || !v->is_string()) bad_request(str_cat(what, " needs a string \"", key, "\""));
  return v->get_ref<const std::string&>();
}

vm::Shape parse_shape(const json& input, std::string_view name) {
  const json* shape = find_member(input, "shape");
  if (shape == nullptr || !shape->is_array()) {
    bad_request(str_cat("input '", name, "' needs a \"shape\" array"));
  }
  vm::Shape dims;
  for (const json& d : *shape) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      bad_request(
          str_cat("input '", name, "': shape ", shape->dump(), " must hold non-negative integers"));
    }
    dims.push_back(d.get<int64_t>());
  }
  return dims;
}

// The number of bytes a tensor of `shape` and `dtype` holds, or a 400 if that does not
// fit in 63 bits.
uint64_t tensor_bytes(const vm::Shape& shape, DType dtype, std::string_view name) {
  uint64_t bytes = vm::dtype_size(dtype);
  for (int64_t d : shape) {
    if (d != 0 && bytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) /
                              static_cast<uint64_t>(d)) {
      bad_request(str_cat("input '", name, "': shape ", vm::shape_str(shape), " is too large"));
    }
    bytes *= static_cast<uint64_t>(d);
  }
  return bytes;
}

NamedTensor parse_input(const json& input, std::string_view binary, size_t& binary_used) {
  if (!input.is_object()) bad_request("each of \"inputs\" must be an object");
  const std::string& name = string_member(input, "name", "an input");
  std::string label = str_cat("input '", name, "'");
  const std::string& type_name = string_member(input, "datatype", label);
  std::optional<DType> dtype = parse_datatype(type_name);
  if (!dtype) bad_request(str_cat(label, ": datatype '", type_name, "' is not supported"));
  vm::Shape shape = parse_shape(input, name);
  const uint64_t bytes = tensor_bytes(shape, *dtype, name);

  const std::optional<int64_t> binary_size = int_parameter(input, "binary_data_size", label);
  const json* data = find_member(input, "data");
  if (binary_size && data != nullptr) {
    bad_request(str_cat(label, " has both \"data\" and parameters.binary_data_size"));
  }
  if (binary_size) {
    if (static_cast<uint64_t>(*binary_size) != bytes) {
      bad_request(str_cat(label, ": binary_data_size ", *binary_size, " but shape ",
                          vm::shape_str(shape), " of ", type_name, " holds ", bytes, " bytes"));
    }
    if (bytes > binary.size() - binary_used) {
      bad_request(str_cat(label, ": the binary data ends ", bytes - (binary.size() - binary_used),
                          " bytes short"));
    }
    vm::Tensor t = vm::Tensor::empty(shape, *dtype);
    if (bytes > 0) std::memcpy(t.data(), binary.data() + binary_used, bytes);
    binary_used += bytes;
    return {name, std::move(t)};
  }
  if (data == nullptr) bad_request(str_cat(label, " has no \"data\" and no binary_data_size"));
  // Counted before anything is allocated: a huge declared shape with little data costs
  // nothing.
  const int64_t count = count_elements(*data, 0, label);
  if (static_cast<uint64_t>(count) != bytes / vm::dtype_size(*dtype)) {
    bad_request(str_cat(label, ": shape ", vm::shape_str(shape), " holds ",
                        bytes / vm::dtype_size(*dtype), " elements but \"data\" has ", count));
  }
  vm::Tensor t = vm::Tensor::empty(shape, *dtype);
  fill_tensor(*data, t, name);
  return {name, std::move(t)};
}

}  // namespace

std::optional<std::string_view> datatype_name(DType t) {
  for (const DatatypeName& d : kDatatypes) {
    if (d.dtype == t) return d.name;
  }
  return std::nullopt;
}

std::optional<DType> parse_datatype(std::string_view name) {
  for (const DatatypeName& d : kDatatypes) {
    if (d.name == name) return d.dtype;
  }
  return std::nullopt;
}

InferRequest parse_infer_request(std::string_view body, std::optional<size_t> header_length) {
  std::string_view header = body;
  std::string_view binary;
  if (header_length) {
    if (*header_length > body.size()) {
      bad_request(str_cat("Inference-Header-Content-Length is ", *header_length,
                          " but the body has ", body.size(), " bytes"));
    }
    header = body.substr(0, *header_length);
    binary = body.substr(*header_length);
  }
  json doc = json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) bad_request("the request is not valid JSON");
  if (!doc.is_object()) bad_request("the request must be a JSON object");

  InferRequest request;
  if (const json* id = find_member(doc, "id")) {
    if (!id->is_string()) bad_request("\"id\" must be a string");
    request.id = id->get<std::string>();
  }
  const json* inputs = find_member(doc, "inputs");
  if (inputs == nullptr || !inputs->is_array())
    bad_request("the request needs an \"inputs\" array");
  size_t binary_used = 0;
  for (const json& input : *inputs) {
    NamedTensor t = parse_input(input, binary, binary_used);
    for (const NamedTensor& seen : request.inputs) {
      if (seen.name == t.name) bad_request(str_cat("input '", t.name, "' is given twice"));
    }
    request.inputs.push_back(std::move(t));
  }
  if (binary_used != binary.size()) {
    bad_request(str_cat("the body has ", binary.size() - binary_used,
                        " bytes of binary data that no input claims"));
  }

  request.all_binary = bool_parameter(doc, "binary_data_output", "the request");
  request.timeout_us = int_parameter(doc, "timeout", "the request");
  if (const json* outputs = find_member(doc, "outputs")) {
    if (!outputs->is_array()) bad_request("\"outputs\" must be an array");
    for (const json& output : *outputs) {
      if (!output.is_object()) bad_request("each of \"outputs\" must be an object");
      const std::string& name = string_member(output, "name", "an output");
      if (bool_parameter(output, "binary_data", str_cat("output '", name, "'"))) {
        request.binary_outputs.insert(name);
      }
      request.outputs.push_back(name);
    }
  }
  return request;
}

InferResponse encode_infer_response(std::string_view model_name, const InferRequest& request,
                                    const std::vector<NamedTensor>& outputs) {
  json doc = {{"model_name", model_name}, {"model_version", "1"}};
  if (!request.id.empty()) doc["id"] = request.id;
  json& out = doc["outputs"] = json::array();
  std::string binary;
  for (const NamedTensor& o : outputs) {
    const vm::Tensor& t = o.tensor;
    std::optional<std::string_view> type_name = datatype_name(t.dtype());
    if (!type_name) {
      throw HttpError(500, str_cat("output '", o.name, "' is ", vm::dtype_name(t.dtype()),
                                   ", which the protocol has no datatype for"));
    }
    json entry = {{"name", o.name}, {"datatype", *type_name}, {"shape", t.shape()}};
    if (request.all_binary || request.binary_outputs.count(o.name) != 0) {
      entry["parameters"] = {{"binary_data_size", t.nbytes()}};
      binary.append(static_cast<const char*>(t.data()), t.nbytes());
    } else {
      entry["data"] = tensor_data(t);
    }
    out.push_back(std::move(entry));
  }
  InferResponse response;
  // Floats that are not finite have no JSON spelling: they are written as null.
  response.body = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  if (binary.empty() && !request.all_binary && request.binary_outputs.empty()) {
    response.content_type = "application/json";
    return response;
  }
  response.header_length = response.body.size();
  response.body += binary;
  response.content_type = "application/octet-stream";
  return response;
}

std::string error_body(std::string_view message) {
  std::string line(message);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return json{{"error", line}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace dynvm::serve
