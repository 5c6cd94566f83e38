// What the server counts, per model, and its Prometheus text exposition (GET /metrics):
//   dynvm_requests_total{model,code}          responses by HTTP status
//   dynvm_request_failures_total{model}       responses other than 200
//   dynvm_request_duration_seconds{model}     histogram: arrival to response
//   dynvm_queue_duration_seconds{model}       histogram: arrival to the start of its run
//   dynvm_batch_size{model}                   histogram: requests per run
//   dynvm_inflight_requests{model}            gauge: accepted, not yet answered
//   dynvm_request_shapes_total{model,shape}   per input-shape counts (shape_histogram.h)
// Everything is safe to update from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tools/vmserve/shape_histogram.h"

namespace dynvm::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // `name`_bucket{labels,le=...}, `name`_sum, `name`_count.
  void render(std::string& out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // one per bound, then +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct ModelMetrics {
  ModelMetrics();
  void count_response(int status);

  std::atomic<int64_t> in_flight{0};
  Histogram latency;
  Histogram queue_time;
  Histogram batch_size;
  ShapeHistogram shapes;

  mutable std::mutex mu;
  std::map<int, uint64_t> responses;  // by status
};

// The exposition for all models: `models` pairs a model's name with its metrics.
std::string render_metrics(const std::vector<std::pair<std::string, const ModelMetrics*>>& models);

}  // namespace dynvm::serve
