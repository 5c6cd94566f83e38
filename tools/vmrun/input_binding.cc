#include "tools/vmrun/input_binding.h"

#include <charconv>
#include <random>

#include "vm/float16.h"
#include "vm/error.h"
#include "vm/npy.h"

namespace dynvm::vmrun {
namespace {

using vm::DType;
using vm::Tensor;

std::string input_names(const vm::Executable& exe) {
  std::string names;
  for (const vm::TensorSpec& s : exe.inputs) names += (names.empty() ? "" : ", ") + s.name;
  return names.empty() ? "(none)" : names;
}

template <typename T, typename Draw>
void fill(const Tensor& t, Draw draw) {
  T* p = t.data_as<T>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(draw());
}

Tensor load_source(const InputArg& arg, size_t index, uint64_t seed) {
  if (std::optional<RandomSpec> random = parse_random_spec(arg.source)) {
    // Each input gets its own stream, so adding an input does not change the others.
    return random_tensor(*random, seed + index * 0x9e3779b97f4a7c15ull);
  }
  return vm::read_npy(arg.source);
}

}  // namespace

std::optional<RandomSpec> parse_random_spec(std::string_view source) {
  if (source.ends_with(".npy") || source.ends_with(".NPY")) return std::nullopt;
  size_t colon = source.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  auto bad = [&](std::string_view why) {
    throw UsageError(str_cat("cannot parse '", source, "' as SHAPE:DTYPE (", why,
                             "; e.g. 1x128:i64, 4x3x48x320:f32, scalar:f32)"));
  };
  RandomSpec spec;
  std::string_view dtype = source.substr(colon + 1);
  std::optional<DType> parsed = vm::parse_dtype(dtype);
  if (!parsed) bad(str_cat("unknown dtype '", dtype, "'"));
  spec.dtype = *parsed;
  std::string_view shape = source.substr(0, colon);
  if (shape.empty() || shape == "scalar") return spec;
  while (true) {
    size_t x = shape.find_first_of("x,");
    std::string_view dim = shape.substr(0, x);
    int64_t value = -1;
    auto [end, ec] = std::from_chars(dim.data(), dim.data() + dim.size(), value);
    if (dim.empty() || ec != std::errc() || end != dim.data() + dim.size() || value < 0) {
      bad(str_cat("bad dim '", dim, "'"));
    }
    spec.shape.push_back(value);
    if (x == std::string_view::npos) break;
    shape = shape.substr(x + 1);
  }
  return spec;
}

Tensor random_tensor(const RandomSpec& spec, uint64_t seed) {
  Tensor t = Tensor::empty(spec.shape, spec.dtype);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  std::mt19937_64 rng(seq);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, 9);
  auto r = [&] { return real(rng); };
  auto f = [&] { return static_cast<float>(real(rng)); };
  auto n = [&] { return integer(rng); };
  switch (spec.dtype) {
    case DType::kFloat32:
      fill<float>(t, f);
      break;
    case DType::kFloat64:
      fill<double>(t, r);
      break;
    case DType::kFloat16:
      fill<uint16_t>(t, [&] { return vm::float_to_half(f()); });
      break;
    case DType::kBFloat16:
      fill<uint16_t>(t, [&] { return vm::float_to_bfloat16(f()); });
      break;
    case DType::kInt8:
      fill<int8_t>(t, n);
      break;
    case DType::kInt16:
      fill<int16_t>(t, n);
      break;
    case DType::kInt32:
      fill<int32_t>(t, n);
      break;
    case DType::kInt64:
      fill<int64_t>(t, n);
      break;
    case DType::kUInt8:
      fill<uint8_t>(t, n);
      break;
    case DType::kUInt16:
      fill<uint16_t>(t, n);
      break;
    case DType::kUInt32:
      fill<uint32_t>(t, n);
      break;
    case DType::kUInt64:
      fill<uint64_t>(t, n);
      break;
    case DType::kBool:
      fill<uint8_t>(t, [&] { return (rng() >> 63) != 0; });
      break;
    // A complex number is two floats: fill the storage as twice as many floats.
    case DType::kComplex64: {
      auto* p = t.data_as<float>();
      for (int64_t i = 0; i < 2 * t.numel(); ++i) p[i] = f();
      break;
    }
    case DType::kComplex128: {
      auto* p = t.data_as<double>();
      for (int64_t i = 0; i < 2 * t.numel(); ++i) p[i] = r();
      break;
    }
  }
  return t;
}

std::vector<vm::Value> bind_inputs(const vm::Executable& exe, const std::vector<InputArg>& args,
                                   uint64_t seed) {
  const std::vector<vm::TensorSpec>& specs = exe.inputs;
  // A sequence takes its elements from repeated --input NAME=..., in order; every other
  // input takes one source.
  auto repeatable = [&](size_t i) {
    return specs[i].form == vm::ValueForm::kSequence ||
           specs[i].form == vm::ValueForm::kOptionalSequence;
  };
  std::vector<std::vector<const InputArg*>> bound(specs.size());
  for (const InputArg& arg : args) {
    if (arg.name.empty()) continue;
    size_t i = 0;
    while (i < specs.size() && specs[i].name != arg.name) ++i;
    if (i == specs.size()) {
      user_error("unknown input '", arg.name, "'; the model's inputs are: ", input_names(exe));
    }
    if (!bound[i].empty() && !repeatable(i)) user_error("input '", arg.name, "' is given twice");
    bound[i].push_back(&arg);
  }
  // Unnamed inputs fill the remaining slots in signature order.
  size_t next = 0;
  for (const InputArg& arg : args) {
    if (!arg.name.empty()) continue;
    while (next < specs.size() && !bound[next].empty()) ++next;
    if (next == specs.size()) {
      user_error("too many inputs: the model takes ", specs.size(), " (", input_names(exe),
                 "), and '", arg.source, "' is left over");
    }
    bound[next].push_back(&arg);
  }
  std::vector<vm::Value> values;
  values.reserve(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const vm::TensorSpec& spec = specs[i];
    if (bound[i].empty()) {
      user_error(
          "missing input '", spec.name, "' (", vm::tensor_spec_str(spec),
          "); give it with --input ", spec.name, "=FILE.npy or --input ", spec.name, "=SHAPE:DTYPE",
          spec.form == vm::ValueForm::kTensor ? "" : " (see --help for sequences and optionals)");
    }
    const std::string& first = bound[i][0]->source;
    // Optionals: `none` is the empty one; sequences: `empty` is the empty one.
    const bool optional =
        spec.form == vm::ValueForm::kOptional || spec.form == vm::ValueForm::kOptionalSequence;
    if (optional && first == "none") {
      if (bound[i].size() > 1) user_error("input '", spec.name, "' is none and also has values");
      values.emplace_back(vm::Tuple{});
      continue;
    }
    if (spec.form == vm::ValueForm::kTensor || spec.form == vm::ValueForm::kOptional) {
      vm::Value t = load_source(*bound[i][0], i, seed);
      values.push_back(optional ? vm::Value(vm::Tuple{t}) : t);
      continue;
    }
    vm::Tuple elements;
    if (!(bound[i].size() == 1 && first == "empty")) {
      for (size_t k = 0; k < bound[i].size(); ++k) {
        if (bound[i][k]->source == "empty") {
          user_error("input '", spec.name, "' is empty and also has elements");
        }
        elements.emplace_back(load_source(*bound[i][k], i + k * specs.size(), seed));
      }
    }
    vm::Value sequence(std::move(elements));
    values.push_back(optional ? vm::Value(vm::Tuple{sequence}) : sequence);
  }
  return values;
}

}  // namespace dynvm::vmrun
