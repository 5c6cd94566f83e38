#include "tools/vmserve/metrics.h"

#include <cstdio>

namespace dynvm::serve {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// A label value with \, " and newlines escaped, as the text format wants.
std::string label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

const std::vector<double> kSecondsBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                            0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const std::vector<double> kBatchBounds = {1, 2, 4, 8, 16, 32, 64};

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum{" + labels + "} " + number(sum_) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(count_) + "\n";
}

ModelMetrics::ModelMetrics()
    : latency(kSecondsBounds), queue_time(kSecondsBounds), batch_size(kBatchBounds) {}

void ModelMetrics::count_response(int status) {
  std::lock_guard<std::mutex> lock(mu);
  ++responses[status];
}

std::string render_metrics(const std::vector<std::pair<std::string, const ModelMetrics*>>& models) {
  std::string out;
  auto model_label = [](const std::string& name) { return "model=\"" + label_value(name) + "\""; };

  header(out, "dynvm_requests_total", "counter", "Inference responses by HTTP status.");
  for (const auto& [name, m] : models) {
    std::lock_guard<std::mutex> lock(m->mu);
    for (const auto& [code, n] : m->responses) {
      out += "dynvm_requests_total{" + model_label(name) + ",code=\"" + std::to_string(code) +
             "\"} " + std::to_string(n) + "\n";
    }
  }
  header(out, "dynvm_request_failures_total", "counter", "Inference responses other than 200.");
  for (const auto& [name, m] : models) {
    std::lock_guard<std::mutex> lock(m->mu);
    uint64_t failures = 0;
    for (const auto& [code, n] : m->responses) failures += code == 200 ? 0 : n;
    out += "dynvm_request_failures_total{" + model_label(name) + "} " + std::to_string(failures) +
           "\n";
  }
  header(out, "dynvm_inflight_requests", "gauge", "Inference requests accepted, not answered.");
  for (const auto& [name, m] : models) {
    out += "dynvm_inflight_requests{" + model_label(name) + "} " +
           std::to_string(m->in_flight.load()) + "\n";
  }
  header(out, "dynvm_request_duration_seconds", "histogram",
         "Inference requests from arrival to response.");
  for (const auto& [name, m] : models) {
    m->latency.render(out, "dynvm_request_duration_seconds", model_label(name));
  }
  header(out, "dynvm_queue_duration_seconds", "histogram",
         "Inference requests from arrival to the start of their run.");
  for (const auto& [name, m] : models) {
    m->queue_time.render(out, "dynvm_queue_duration_seconds", model_label(name));
  }
  header(out, "dynvm_batch_size", "histogram", "Requests per model run.");
  for (const auto& [name, m] : models) {
    m->batch_size.render(out, "dynvm_batch_size", model_label(name));
  }
  header(out, "dynvm_request_shapes_total", "counter",
         "Successful inference requests by input shapes.");
  for (const auto& [name, m] : models) {
    for (const ShapeCount& c : m->shapes.entries()) {
      out += "dynvm_request_shapes_total{" + model_label(name) + ",shape=\"" +
             label_value(shapes_str(c.inputs)) + "\"} " + std::to_string(c.count) + "\n";
    }
    if (uint64_t other = m->shapes.other(); other > 0) {
      out += "dynvm_request_shapes_total{" + model_label(name) + ",shape=\"other\"} " +
             std::to_string(other) + "\n";
    }
  }
  return out;
}

}  // namespace dynvm::serve
