// The HTTP side of vmserve: the KServe v2 / Open Inference Protocol's endpoints over
// cpp-httplib (docs/serving.md says why that library), on top of the served models.
//   GET  /v2                                  server metadata
//   GET  /v2/health/live, /v2/health/ready    200 while serving
//   GET  /v2/models/{name}[/versions/{v}]     model metadata (symbolic dims as -1)
//   GET  /v2/models/{name}[/versions/{v}]/ready
//   POST /v2/models/{name}[/versions/{v}]/infer   JSON or binary tensors (protocol.h)
//   GET  /metrics                             Prometheus text (metrics.h)
// Every answer other than 200 carries {"error": "<one line>"}: 400 for a malformed
// request, 404 for an unknown model or path, 405 for a wrong method, 413 for a body over
// the limit, 503 (with Retry-After) when a model's queue is full or the server is
// stopping, 504 when a request's deadline passed while it was queued.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tools/vmserve/served_model.h"

namespace httplib {
class Server;
}

namespace dynvm::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;         // 0: any free port (port() tells which)
  int http_threads = 128;  // connections served at once
  size_t max_body_bytes = size_t{64} << 20;
  // How long a connection may take to send the rest of a request (slow clients and
  // bodies shorter than their Content-Length cost a thread no longer than this).
  std::chrono::milliseconds read_timeout{5000};
  bool log_requests = false;  // one access-log line per request on stdout
};

class InferenceServer {
 public:
  InferenceServer(std::vector<std::unique_ptr<ServedModel>> models, const ServerOptions& options);
  ~InferenceServer();

  // Binds the port; throws UserError when it cannot. Returns the port bound.
  int bind();
  // Serves until stop(); returns when every request in flight has been answered.
  void serve();
  // Stops accepting connections; serve() returns once in-flight requests are done.
  // Safe from any thread (not from a signal handler).
  void stop();

  const std::vector<std::unique_ptr<ServedModel>>& models() const { return models_; }

 private:
  void add_routes();
  ServedModel* find_model(const std::string& name) const;

  std::vector<std::unique_ptr<ServedModel>> models_;
  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> ready_{false};
  std::mutex log_mu_;
};

}  // namespace dynvm::serve
