#include "tools/vmc/specialize_from.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "tools/vmserve/shape_histogram.h"
#include "vm/error.h"

namespace dynvm::vmc {

std::vector<std::string> specialize_from(const std::string& spec, const compiler::Module& module,
                                         compiler::LowerOptions& lower) {
  const compiler::Function* entry = module.find_function(module.entry);
  DYNVM_INTERNAL_CHECK(entry != nullptr, "specialize_from: no entry function");
  // Each input's symbolic dims: (input, axis) -> symbol.
  std::vector<std::string> names;
  std::map<std::string, std::vector<std::pair<size_t, std::string>>> symbols;
  for (const compiler::Expr& param : entry->params) {
    names.push_back(param->name);
    const compiler::Type& type = param.type();
    if (!type.is_tensor()) continue;
    for (size_t axis = 0; axis < type->dims.size(); ++axis) {
      const compiler::Dim& d = type->dims[axis];
      if (!d.is_any() && d.expr().kind() == arith::ExprKind::kVar) {
        symbols[param->name].emplace_back(axis, d.expr()->name);
      }
    }
  }
  const serve::ModelShapes traffic = serve::traffic_for(spec, names);
  uint64_t total = traffic.other;
  for (const serve::ShapeCount& c : traffic.shapes) total += c.count;

  // The same symbol values may come from several shapes (inputs without symbolic dims
  // can differ): count per assignment of the symbols.
  std::map<std::map<std::string, int64_t>, uint64_t> by_values;
  for (const serve::ShapeCount& c : traffic.shapes) {
    std::map<std::string, int64_t> values;
    for (const auto& [input, shape] : c.inputs) {
      auto it = symbols.find(input);
      if (it == symbols.end()) continue;
      for (const auto& [axis, symbol] : it->second) {
        if (axis < shape.size()) values[symbol] = shape[axis];
      }
    }
    if (!values.empty()) by_values[values] += c.count;
  }
  std::vector<std::pair<uint64_t, std::map<std::string, int64_t>>> hot;
  for (const auto& [values, count] : by_values) hot.emplace_back(count, values);
  std::stable_sort(hot.begin(), hot.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> described;
  for (const auto& [count, values] : hot) {
    if (described.size() >= kMaxSizes || count < kMinShare * static_cast<double>(total)) break;
    lower.static_shapes.push_back(values);
    std::string s;
    for (const auto& [symbol, v] : values) s += symbol + "=" + std::to_string(v) + " ";
    char share[48];
    std::snprintf(share, sizeof share, "(%.0f%% of requests)",
                  100.0 * static_cast<double>(count) / static_cast<double>(total));
    described.push_back(s + share);
  }
  return described;
}

}  // namespace dynvm::vmc
