#include "tools/vmserve/shape_histogram.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "vm/error.h"

namespace dynvm::serve {

using nlohmann::json;

void ShapeHistogram::record(const InputShapes& shapes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(shapes);
  if (it != counts_.end()) {
    ++it->second;
  } else if (counts_.size() < max_shapes_) {
    counts_.emplace(shapes, 1);
  } else {
    ++other_;
  }
}

std::vector<ShapeCount> ShapeHistogram::entries() const {
  std::vector<ShapeCount> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [shapes, count] : counts_) out.push_back({shapes, count});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const ShapeCount& a, const ShapeCount& b) { return a.count > b.count; });
  return out;
}

uint64_t ShapeHistogram::other() const {
  std::lock_guard<std::mutex> lock(mu_);
  return other_;
}

std::string shapes_str(const InputShapes& shapes) {
  std::string s;
  for (const auto& [name, shape] : shapes) {
    if (!s.empty()) s += ' ';
    s += name + "=";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
    if (shape.empty()) s += "scalar";
  }
  return s;
}

std::string shapes_file_json(const std::vector<ModelShapes>& models) {
  json doc = {{"format", "dynvm-shapes/1"}, {"models", json::object()}};
  for (const ModelShapes& m : models) {
    json shapes = json::array();
    uint64_t requests = m.other;
    for (const ShapeCount& c : m.shapes) {
      json inputs = json::object();
      for (const auto& [name, shape] : c.inputs) inputs[name] = shape;
      shapes.push_back({{"inputs", inputs}, {"count", c.count}});
      requests += c.count;
    }
    doc["models"][m.model] = {{"requests", requests}, {"other", m.other}, {"shapes", shapes}};
  }
  return doc.dump(1) + "\n";
}

std::vector<ModelShapes> read_shapes_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot open ", path);
  std::string text(std::istreambuf_iterator<char>(in), {});
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) { user_error(path, ": not a shapes file (", why, ")"); };
  if (doc.is_discarded() || !doc.is_object()) bad("not JSON");
  if (doc.value("format", "") != "dynvm-shapes/1") bad("no \"format\": \"dynvm-shapes/1\"");
  if (!doc.contains("models") || !doc["models"].is_object()) bad("no \"models\" object");
  std::vector<ModelShapes> out;
  for (const auto& [model, entry] : doc["models"].items()) {
    ModelShapes m{model, {}, 0};
    if (!entry.is_object() || !entry.contains("shapes") || !entry["shapes"].is_array()) {
      bad(str_cat("model '", model, "' has no \"shapes\" array"));
    }
    for (const json& s : entry["shapes"]) {
      if (!s.is_object() || !s.contains("inputs") || !s["inputs"].is_object() ||
          !s.contains("count") || !s["count"].is_number_unsigned()) {
        bad(str_cat("a shape of model '", model, "' needs \"inputs\" and a \"count\""));
      }
      ShapeCount c;
      c.count = s["count"].get<uint64_t>();
      for (const auto& [name, dims] : s["inputs"].items()) {
        if (!dims.is_array()) bad(str_cat("input '", name, "' of model '", model, "'"));
        vm::Shape shape;
        for (const json& d : dims) {
          if (!d.is_number_integer() || d.get<int64_t>() < 0) {
            bad(str_cat("input '", name, "' of model '", model, "' has a bad dim"));
          }
          shape.push_back(d.get<int64_t>());
        }
        c.inputs.emplace_back(name, std::move(shape));
      }
      m.shapes.push_back(std::move(c));
    }
    if (entry.contains("other") && entry["other"].is_number_unsigned()) {
      m.other = entry["other"].get<uint64_t>();
    }
    out.push_back(std::move(m));
  }
  return out;
}

ModelShapes traffic_for(const std::string& spec, const std::vector<std::string>& input_names) {
  std::string path = spec;
  std::string model;
  const size_t colon = spec.rfind(':');
  if (!std::filesystem::exists(spec) && colon != std::string::npos) {
    path = spec.substr(0, colon);
    model = spec.substr(colon + 1);
  }
  std::vector<ModelShapes> all = read_shapes_file(path);
  const std::set<std::string> wanted(input_names.begin(), input_names.end());
  const ModelShapes* best = nullptr;
  uint64_t best_requests = 0;
  for (const ModelShapes& m : all) {
    if (!model.empty() && m.model != model) continue;
    uint64_t requests = 0;
    bool fits = !m.shapes.empty();
    for (const ShapeCount& c : m.shapes) {
      std::set<std::string> names;
      for (const auto& [name, shape] : c.inputs) names.insert(name);
      fits = fits && names == wanted;
      requests += c.count;
    }
    if (!model.empty() && !fits) {
      user_error(path, ": the shapes of model '", model, "' do not name this model's inputs");
    }
    if (fits && (best == nullptr || requests > best_requests)) {
      best = &m;
      best_requests = requests;
    }
  }
  if (best == nullptr) {
    user_error(path, model.empty() ? ": no model in it has this model's inputs"
                                   : str_cat(": no model '", model, "' with shapes in it"));
  }
  return *best;
}

}  // namespace dynvm::serve
