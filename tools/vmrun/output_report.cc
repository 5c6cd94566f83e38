#include "tools/vmrun/output_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <complex>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "vm/float16.h"
#include "vm/error.h"
#include "vm/npy.h"
#include "vm/profile.h"

namespace dynvm::vmrun {
namespace {

using vm::DType;
using vm::Tensor;

constexpr int64_t kSummaryValues = 8;

void collect(const std::string& name, const vm::Value& value, std::vector<NamedOutput>& out) {
  switch (value.kind()) {
    case vm::ValueKind::kTensor: {
      const Tensor& t = value.as_tensor();
      out.push_back({name, t.device().type == vm::DeviceType::kCPU ? t : t.copy_to(vm::kCpu)});
      return;
    }
    case vm::ValueKind::kInt:
      out.push_back(
          {name, Tensor::from_vector(std::vector<int64_t>{value.as_int()}, {}, DType::kInt64)});
      return;
    case vm::ValueKind::kShape: {
      const vm::Shape& s = value.as_shape();
      out.push_back(
          {name, Tensor::from_vector(s, {static_cast<int64_t>(s.size())}, DType::kInt64)});
      return;
    }
    case vm::ValueKind::kTuple: {
      const vm::Tuple& fields = value.as_tuple();
      for (size_t j = 0; j < fields.size(); ++j) collect(str_cat(name, ".", j), fields[j], out);
      return;
    }
    case vm::ValueKind::kEmpty:
    case vm::ValueKind::kStorage:
      user_error("output '", name, "' is ", value.summary(),
                 ", which vmrun cannot show (only tensors, integers and shapes)");
  }
}

// Element i as a double, for printing and statistics (not for complex numbers).
double element(const Tensor& t, int64_t i) {
  const void* p = t.data();
  switch (t.dtype()) {
    case DType::kFloat32:
      return static_cast<const float*>(p)[i];
    case DType::kFloat64:
      return static_cast<const double*>(p)[i];
    case DType::kFloat16:
      return vm::half_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kBFloat16:
      return vm::bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
    case DType::kInt8:
      return static_cast<const int8_t*>(p)[i];
    case DType::kInt16:
      return static_cast<const int16_t*>(p)[i];
    case DType::kInt32:
      return static_cast<const int32_t*>(p)[i];
    case DType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::kUInt8:
      return static_cast<const uint8_t*>(p)[i];
    case DType::kUInt16:
      return static_cast<const uint16_t*>(p)[i];
    case DType::kUInt32:
      return static_cast<const uint32_t*>(p)[i];
    case DType::kUInt64:
      return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DType::kBool:
      return static_cast<const uint8_t*>(p)[i] != 0;
    case DType::kComplex64:
      return static_cast<const float*>(p)[2 * i];
    case DType::kComplex128:
      return static_cast<const double*>(p)[2 * i];
  }
  return 0;
}

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

// Integers print exactly: 64-bit values do not survive a trip through double.
std::string format_element(const Tensor& t, int64_t i) {
  const void* p = t.data();
  switch (t.dtype()) {
    case DType::kInt64:
      return std::to_string(static_cast<const int64_t*>(p)[i]);
    case DType::kUInt64:
      return std::to_string(static_cast<const uint64_t*>(p)[i]);
    case DType::kBool:
      return static_cast<const uint8_t*>(p)[i] != 0 ? "true" : "false";
    case DType::kComplex64: {
      auto* c = static_cast<const float*>(p) + 2 * i;
      return str_cat("(", format_double(c[0]), c[1] < 0 ? "" : "+", format_double(c[1]), "j)");
    }
    case DType::kComplex128: {
      auto* c = static_cast<const double*>(p) + 2 * i;
      return str_cat("(", format_double(c[0]), c[1] < 0 ? "" : "+", format_double(c[1]), "j)");
    }
    default:
      return vm::is_integer(t.dtype()) ? str_cat(static_cast<int64_t>(element(t, i)))
                                       : format_double(element(t, i));
  }
}

// Keeps letters, digits, '.', '-' and '_'; anything else could leave the directory.
std::string file_name_for(const std::string& name, size_t index) {
  std::string out;
  for (char c : name) {
    bool safe = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
    out += safe ? c : '_';
  }
  if (out.empty() || out.find_first_not_of('.') == std::string::npos) {
    out = str_cat("output", index);
  }
  return out;
}

}  // namespace

std::vector<NamedOutput> collect_outputs(const vm::Executable& exe,
                                         std::span<const vm::Value> values) {
  std::vector<NamedOutput> out;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string name = i < exe.outputs.size() && !exe.outputs[i].name.empty()
                           ? exe.outputs[i].name
                           : str_cat("output", i);
    collect(name, values[i], out);
  }
  return out;
}

std::string summarize_output(const NamedOutput& output) {
  const Tensor& t = output.tensor;
  std::string s =
      str_cat(output.name, ": ", vm::dtype_name(t.dtype()), " ", vm::shape_str(t.shape()), " = [");
  int64_t shown = std::min(t.numel(), kSummaryValues);
  for (int64_t i = 0; i < shown; ++i) s += (i ? ", " : "") + format_element(t, i);
  s += t.numel() > shown ? ", ...]" : "]";
  if (vm::is_floating(t.dtype()) && t.numel() > 0) {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    double sum = 0;
    int64_t nans = 0;
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = element(t, i);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
    }
    if (nans < t.numel()) {
      s += str_cat("  min ", format_double(lo), "  max ", format_double(hi), "  mean ",
                   format_double(sum / static_cast<double>(t.numel() - nans)));
    }
    if (nans > 0) s += str_cat("  (", nans, " NaN)");
  }
  return s;
}

std::vector<std::string> write_outputs(std::span<const NamedOutput> outputs,
                                       const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    user_error("cannot create output directory '", dir,
               "': ", ec ? ec.message() : "it exists and is not a directory");
  }
  std::vector<std::string> paths;
  std::set<std::string> used;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string file = file_name_for(outputs[i].name, i);
    // Two names may map to one file ("a/b" and "a_b"); never overwrite an earlier output.
    if (!used.insert(file).second) {
      file = str_cat(file, "_", i);
      used.insert(file);
    }
    Tensor t = outputs[i].tensor;
    if (t.dtype() == DType::kBFloat16) {
      // NumPy has no bfloat16; float32 holds every bfloat16 value exactly.
      Tensor wide = Tensor::empty(t.shape(), DType::kFloat32);
      for (int64_t j = 0; j < t.numel(); ++j) {
        wide.data_as<float>()[j] = vm::bfloat16_to_float(t.data_as<uint16_t>()[j]);
      }
      t = wide;
    }
    std::string path = (std::filesystem::path(dir) / (file + ".npy")).string();
    vm::write_npy(t, path);
    paths.push_back(path);
  }
  return paths;
}

std::string model_info(const std::string& path, const vm::Executable& exe,
                       const serializer::FileInfo& file) {
  std::string s = str_cat("model:      ", path, "\n");
  char features[32];
  std::snprintf(features, sizeof(features), "0x%llx",
                static_cast<unsigned long long>(file.features));
  s += str_cat("format:     .vmexe ", file.major, ".", file.minor, " (features ", features, ")\n");
  s += str_cat("target:     ", exe.target.empty() ? "(none)" : exe.target, "\n");
  s += str_cat("producer:   ", exe.producer.empty() ? "(unknown)" : exe.producer, "\n");
  s += str_cat("inputs:     ", exe.inputs.size(), "\n");
  for (const vm::TensorSpec& spec : exe.inputs) s += "  " + vm::tensor_spec_str(spec) + "\n";
  s += str_cat("outputs:    ", exe.outputs.size(), "\n");
  for (const vm::TensorSpec& spec : exe.outputs) s += "  " + vm::tensor_spec_str(spec) + "\n";
  // Each symbol once, in order of first use, with the range an input declares for it.
  std::vector<std::string> order;
  std::map<std::string, const vm::DimSpec*> symbols;
  for (const auto* specs : {&exe.inputs, &exe.outputs}) {
    for (const vm::TensorSpec& spec : *specs) {
      for (const vm::DimSpec& d : spec.dims) {
        if (d.is_symbolic() && symbols.emplace(d.symbol, &d).second) order.push_back(d.symbol);
      }
    }
  }
  if (!order.empty()) {
    s += "symbols:    ";
    for (size_t i = 0; i < order.size(); ++i) {
      const vm::DimSpec& d = *symbols[order[i]];
      s += str_cat(
          i ? ", " : "", order[i], " ", d.min, "..",
          d.max == std::numeric_limits<int64_t>::max() ? std::string("") : std::to_string(d.max));
    }
    s += "\n";
  }
  const std::string& entry =
      exe.entry < exe.functions.size() ? exe.functions[exe.entry].name : std::string("?");
  s += str_cat("functions:  ", exe.functions.size(), " (entry: ", entry, ")\n");
  size_t tuned = 0, ranked = 0;
  for (const vm::Kernel& k : exe.kernels) {
    tuned += k.tuned() ? 1 : 0;
    ranked += k.ranked() ? 1 : 0;
  }
  s += str_cat("kernels:    ", exe.kernels.size(), " in ", exe.libraries.size(), " librar",
               exe.libraries.size() == 1 ? "y" : "ies", ", ", tuned, " with tuned schedules, ",
               ranked, " ranked by the cost model\n");
  for (const vm::Kernel& k : exe.kernels) {
    if (!k.schedule.empty()) s += str_cat("  ", k.name, ": ", k.schedule, "\n");
  }
  size_t constant_bytes = 0;
  for (const Tensor& c : exe.constants) constant_bytes += c.defined() ? c.nbytes() : 0;
  s += str_cat("constants:  ", exe.constants.size(), " (", constant_bytes, " bytes)\n");
  return s;
}

std::string latency_report(std::vector<double> ms) {
  if (ms.empty()) return "no timed runs";
  const vm::LatencyStats l = vm::latency_stats(std::move(ms));
  auto f = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3f", v);
    return std::string(buf);
  };
  return str_cat("latency over ", l.runs, " run", l.runs == 1 ? "" : "s",
                 " (after 1 warm-up): median ", f(l.median_ms), " ms, p90 ", f(l.p90_ms),
                 " ms, min ", f(l.min_ms), " ms, max ", f(l.max_ms), " ms");
}

}  // namespace dynvm::vmrun
