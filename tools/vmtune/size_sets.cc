#include "tools/vmtune/size_sets.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "tools/vmserve/shape_histogram.h"
#include "vm/error.h"
#include "vm/npy.h"

namespace dynvm::vmtune {
namespace {

int64_t parse_dim(const std::string& text, const std::string& what) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0) {
    throw UsageError(str_cat("--sizes: ", what, ": '", text, "' is not a size"));
  }
  return v;
}

// "a{1,2}b{3,4}" -> a1b3, a1b4, a2b3, a2b4.
std::vector<std::string> expand_braces(const std::string& s) {
  size_t open = s.find('{');
  if (open == std::string::npos) return {s};
  size_t close = s.find('}', open);
  if (close == std::string::npos) throw UsageError("--sizes: unmatched '{' in '" + s + "'");
  std::vector<std::string> out;
  const std::string head = s.substr(0, open);
  const std::string body = s.substr(open + 1, close - open - 1);
  for (size_t start = 0; start <= body.size();) {
    size_t comma = body.find(',', start);
    if (comma == std::string::npos) comma = body.size();
    for (const std::string& tail : expand_braces(s.substr(close + 1))) {
      out.push_back(head + body.substr(start, comma - start) + tail);
    }
    start = comma + 1;
  }
  return out;
}

void check_dim(const vm::TensorSpec& in, size_t axis, int64_t value) {
  const vm::DimSpec& d = in.dims[axis];
  if (!d.is_symbolic() && d.value != value) {
    throw UsageError(
        str_cat("--sizes: input ", in.name, " has ", d.value, " at axis ", axis, ", not ", value));
  }
  if (d.is_symbolic() && (value < d.min || value > d.max)) {
    throw UsageError(str_cat("--sizes: ", in.name, "'s dim ", d.symbol, " = ", value,
                             " is outside its range ", d.min, "..", d.max));
  }
}

}  // namespace

std::vector<SizeSet> parse_size_spec(const std::string& spec, const vm::Executable& exe,
                                     const std::set<std::string>& valued, bool check_dims) {
  std::vector<SizeSet> sets;
  for (const std::string& one : expand_braces(spec)) {
    SizeSet set(exe.inputs.size());
    std::vector<bool> given(exe.inputs.size(), false);
    for (size_t start = 0; start < one.size();) {
      size_t end = one.find(';', start);
      if (end == std::string::npos) end = one.size();
      const std::string part = one.substr(start, end - start);
      start = end + 1;
      if (part.empty()) continue;
      const size_t eq = part.find('=');
      if (eq == std::string::npos)
        throw UsageError("--sizes expects NAME=SHAPE, got '" + part + "'");
      const std::string name = part.substr(0, eq);
      auto it = std::find_if(exe.inputs.begin(), exe.inputs.end(),
                             [&](const vm::TensorSpec& t) { return t.name == name; });
      if (it == exe.inputs.end()) throw UsageError("--sizes: the model has no input " + name);
      const size_t index = static_cast<size_t>(it - exe.inputs.begin());
      vm::Shape shape;
      const std::string dims = part.substr(eq + 1);
      for (size_t s = 0; s <= dims.size();) {
        size_t x = dims.find('x', s);
        if (x == std::string::npos) x = dims.size();
        shape.push_back(parse_dim(dims.substr(s, x - s), name));
        s = x + 1;
      }
      if (shape.size() != it->dims.size()) {
        throw UsageError(str_cat("--sizes: input ", name, " has rank ", it->dims.size(), ", not ",
                                 shape.size()));
      }
      for (size_t a = 0; check_dims && a < shape.size(); ++a) check_dim(*it, a, shape[a]);
      set[index] = shape;
      given[index] = true;
    }
    for (size_t i = 0; i < exe.inputs.size(); ++i) {
      if (given[i] || valued.count(exe.inputs[i].name) > 0) continue;
      for (const vm::DimSpec& d : exe.inputs[i].dims) {
        if (d.is_symbolic()) {
          throw UsageError("--sizes: no size for input " + exe.inputs[i].name +
                           " (it has symbolic dims)");
        }
        set[i].push_back(d.value);
      }
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

std::vector<SizeSet> sample_size_sets(const vm::Executable& exe,
                                      const std::set<std::string>& valued) {
  constexpr int kSets = 3;
  std::vector<SizeSet> sets(kSets, SizeSet(exe.inputs.size()));
  std::map<std::string, std::vector<int64_t>> chosen;  // symbol -> its value in each set
  for (size_t i = 0; i < exe.inputs.size(); ++i) {
    if (valued.count(exe.inputs[i].name) > 0) continue;
    for (size_t a = 0; a < exe.inputs[i].dims.size(); ++a) {
      const vm::DimSpec& d = exe.inputs[i].dims[a];
      if (!d.is_symbolic()) {
        for (SizeSet& s : sets) s[i].push_back(d.value);
        continue;
      }
      auto [it, fresh] = chosen.emplace(d.symbol, std::vector<int64_t>{});
      if (fresh) {
        const int64_t lo = std::max<int64_t>(d.min, 1);
        const int64_t hi = std::max(lo, std::min<int64_t>(d.max, a == 0 ? 8 : 256));
        for (int k = 0; k < kSets; ++k) {
          const double t = static_cast<double>(k) / (kSets - 1);
          const double v = std::exp(std::log(static_cast<double>(lo)) * (1 - t) +
                                    std::log(static_cast<double>(hi)) * t);
          it->second.push_back(std::clamp<int64_t>(std::llround(v), lo, hi));
        }
      }
      for (int k = 0; k < kSets; ++k) sets[k][i].push_back(it->second[k]);
    }
  }
  std::sort(sets.begin(), sets.end());
  sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
  return sets;
}

std::string describe(const SizeSet& s, const vm::Executable& exe,
                     const std::set<std::string>& skip) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < exe.inputs.size(); ++i) {
    if (skip.count(exe.inputs[i].name) != 0) continue;
    out += (out.empty() ? "" : " ") + exe.inputs[i].name + "=";
    if (s[i].empty()) out += "scalar";
    for (size_t a = 0; a < s[i].size(); ++a) out += (a ? "x" : "") + std::to_string(s[i][a]);
  }
  return out;
}

void traffic_size_sets(const std::string& spec, const vm::Executable& exe,
                       const std::set<std::string>& valued, std::vector<SizeSet>& sets,
                       std::vector<double>& weights) {
  std::vector<std::string> names;
  for (const vm::TensorSpec& t : exe.inputs) names.push_back(t.name);
  const serve::ModelShapes traffic = serve::traffic_for(spec, names);
  size_t added = 0;
  for (const serve::ShapeCount& c : traffic.shapes) {
    if (added++ >= kMaxTrafficSizes) break;
    SizeSet set;
    for (const vm::TensorSpec& t : exe.inputs) {
      auto it = std::find_if(c.inputs.begin(), c.inputs.end(),
                             [&](const auto& in) { return in.first == t.name; });
      set.push_back(valued.count(t.name) != 0 ? vm::Shape{} : it->second);
    }
    sets.push_back(std::move(set));
    weights.push_back(static_cast<double>(c.count));
  }
}

ChosenSizes choose_sizes(const std::vector<std::string>& specs, const std::string& sizes_from,
                         const std::map<std::string, std::string>& inputs,
                         const vm::Executable& exe, bool check_dims) {
  ChosenSizes c;
  for (const auto& [name, path] : inputs) {
    if (std::none_of(exe.inputs.begin(), exe.inputs.end(),
                     [&](const vm::TensorSpec& t) { return t.name == name; })) {
      throw UsageError("--input: the model has no input " + name);
    }
    c.valued[name] = vm::read_npy(path);
    c.valued_names.insert(name);
  }
  for (const std::string& spec : specs) {
    for (SizeSet& s : parse_size_spec(spec, exe, c.valued_names, check_dims)) {
      c.sets.push_back(std::move(s));
    }
  }
  c.weights.assign(c.sets.size(), 1.0);
  if (!sizes_from.empty()) traffic_size_sets(sizes_from, exe, c.valued_names, c.sets, c.weights);
  if (c.sets.empty()) c.sets = sample_size_sets(exe, c.valued_names);
  c.weights.resize(c.sets.size(), 1.0);
  return c;
}

}  // namespace dynvm::vmtune
