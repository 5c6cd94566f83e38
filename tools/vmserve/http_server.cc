#include "tools/vmserve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "vm/error.h"

namespace dynvm::serve {
namespace {

using nlohmann::json;

#ifndef DYNVM_VERSION
#define DYNVM_VERSION "dev"
#endif

// cpp-httplib as Debian builds it listens with a backlog of 5 connections: a burst of
// clients connecting at once overflows it, and the kernel resets some of them. Listening
// again on the bound socket sets the backlog to the system's maximum.
class WideBacklogServer : public httplib::Server {
 public:
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }
};

// Where the request being handled on this thread began (for the access log); the
// pre-routing handler sets it, the logger reads and clears it.
thread_local Clock::time_point request_began{};

void send_error(httplib::Response& res, int status, std::string_view message) {
  res.status = status;
  res.set_content(error_body(message), "application/json");
  if (status == 503) res.set_header("Retry-After", "1");
}

void send_json(httplib::Response& res, const json& doc) {
  res.status = 200;
  res.set_content(doc.dump(), "application/json");
}

json tensor_metadata(const vm::TensorSpec& spec) {
  json shape = json::array();
  for (const vm::DimSpec& d : spec.dims) shape.push_back(d.is_symbolic() ? -1 : d.value);
  return {
      {"name", spec.name}, {"datatype", std::string(*datatype_name(spec.dtype))}, {"shape", shape}};
}

json model_metadata(const ServedModel& model) {
  json inputs = json::array();
  json outputs = json::array();
  for (const vm::TensorSpec& spec : model.exe().inputs) inputs.push_back(tensor_metadata(spec));
  for (const vm::TensorSpec& spec : model.exe().outputs) outputs.push_back(tensor_metadata(spec));
  return {{"name", model.name()},
          {"versions", {"1"}},
          {"platform", "dynvm"},
          {"inputs", inputs},
          {"outputs", outputs}};
}

// Inference-Header-Content-Length, when the request has it; a 400 if it is not a number.
std::optional<size_t> header_length(const httplib::Request& req) {
  if (!req.has_header("Inference-Header-Content-Length")) return std::nullopt;
  const std::string v = req.get_header_value("Inference-Header-Content-Length");
  size_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
    throw HttpError(400, "Inference-Header-Content-Length must be a byte count, not '" + v + "'");
  }
  return n;
}

InputShapes input_shapes(const ServedModel& model, const InferRequest& request) {
  InputShapes shapes;
  for (const vm::TensorSpec& spec : model.exe().inputs) {
    for (const NamedTensor& t : request.inputs) {
      if (t.name == spec.name) shapes.emplace_back(t.name, t.tensor.shape());
    }
  }
  return shapes;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Counts one inference request in its model's metrics while it is in flight.
class InFlight {
 public:
  explicit InFlight(ModelMetrics& m) : m_(m) { ++m_.in_flight; }
  ~InFlight() { --m_.in_flight; }

 private:
  ModelMetrics& m_;
};

}  // namespace

InferenceServer::InferenceServer(std::vector<std::unique_ptr<ServedModel>> models,
                                 const ServerOptions& options)
    : models_(std::move(models)), options_(options), http_(std::make_unique<WideBacklogServer>()) {
  const size_t threads = static_cast<size_t>(std::max(1, options_.http_threads));
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_keep_alive_max_count(100000);
  http_->set_tcp_nodelay(true);
  http_->set_read_timeout(options_.read_timeout);
  add_routes();
}

InferenceServer::~InferenceServer() {
  for (auto& model : models_) model->stop();
}

ServedModel* InferenceServer::find_model(const std::string& name) const {
  for (const auto& model : models_) {
    if (model->name() == name) return model.get();
  }
  return nullptr;
}

void InferenceServer::add_routes() {
  httplib::Server& svr = *http_;
  const std::string model_path = R"(/v2/models/([^/]+)(?:/versions/[^/]+)?)";

  // Resolves the model a path names, answering 404 when there is none.
  auto with_model = [this](auto&& handle) {
    return [this, handle](const httplib::Request& req, httplib::Response& res) {
      ServedModel* model = find_model(req.matches[1]);
      if (model == nullptr) {
        send_error(res, 404, "no model named '" + std::string(req.matches[1]) + "'");
        return;
      }
      handle(*model, req, res);
    };
  };
  auto wrong_method = [](const char* allowed) {
    return [allowed](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allowed);
      send_error(res, 405, req.method + " " + req.path + " is not allowed; use " + allowed);
    };
  };

  svr.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
    send_json(
        res,
        {{"name", "dynvm"}, {"version", DYNVM_VERSION}, {"extensions", {"binary_tensor_data"}}});
  });
  svr.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"live", true}});
  });
  svr.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
    if (!ready_) return send_error(res, 503, "the server is not ready");
    send_json(res, {{"ready", true}});
  });
  svr.Get(model_path,
          with_model([](ServedModel& model, const httplib::Request&, httplib::Response& res) {
            send_json(res, model_metadata(model));
          }));
  svr.Get(model_path + "/ready",
          with_model([this](ServedModel& model, const httplib::Request&, httplib::Response& res) {
            if (!ready_) return send_error(res, 503, "the server is not ready");
            send_json(res, {{"name", model.name()}, {"ready", true}});
          }));
  svr.Post(model_path + "/infer",
           with_model([](ServedModel& model, const httplib::Request& req, httplib::Response& res) {
             RequestTiming timing;
             timing.arrived = Clock::now();
             ModelMetrics& metrics = model.metrics();
             InFlight in_flight(metrics);
             try {
               InferRequest request = parse_infer_request(req.body, header_length(req));
               std::vector<NamedTensor> outputs = model.infer(request, timing);
               InferResponse response = encode_infer_response(model.name(), request, outputs);
               res.status = 200;
               if (response.header_length) {
                 res.set_header("Inference-Header-Content-Length",
                                std::to_string(*response.header_length));
               }
               res.body = std::move(response.body);
               res.set_header("Content-Type", response.content_type);
               metrics.shapes.record(input_shapes(model, request));
               metrics.queue_time.observe(seconds(timing.started - timing.arrived));
             } catch (const HttpError& e) {
               send_error(res, e.status(), e.what());
             } catch (const std::bad_alloc&) {
               send_error(res, 503, "out of memory");
             } catch (const std::exception& e) {
               send_error(res, 500, e.what());
             }
             metrics.count_response(res.status);
             metrics.latency.observe(seconds(Clock::now() - timing.arrived));
           }));
  svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::vector<std::pair<std::string, const ModelMetrics*>> all;
    for (const auto& model : models_) all.emplace_back(model->name(), &model->metrics());
    res.status = 200;
    res.set_content(render_metrics(all), "text/plain; version=0.0.4");
  });

  svr.Get(model_path + "/infer", wrong_method("POST"));
  for (const std::string& path :
       {std::string("/v2"), std::string("/v2/health/live"), std::string("/v2/health/ready"),
        model_path, model_path + "/ready", std::string("/metrics")}) {
    svr.Post(path, wrong_method("GET"));
    svr.Put(path, wrong_method("GET"));
    svr.Delete(path, wrong_method("GET"));
  }

  // Answers httplib produces itself (no route, a body over the limit, a malformed
  // request line) get the same JSON error body.
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = "HTTP status " + std::to_string(res.status);
    if (res.status == 400) message = "malformed HTTP request";
    if (res.status == 404) message = "no such endpoint: " + req.method + " " + req.path;
    if (res.status == 413) message = "the request body is over the server's limit (--max-body-mb)";
    if (res.status == 414) message = "the request line is too long";
    send_error(res, res.status, message);
  });
  svr.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& error) {
          send_error(res, 500, error.what());
        } catch (...) {
          send_error(res, 500, "unknown error");
        }
      });
  svr.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_began = Clock::now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  if (options_.log_requests) {
    svr.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      std::string ms = "-";
      if (request_began != Clock::time_point{}) {
        char buf[32];
        std::snprintf(
            buf, sizeof buf, "%.3f",
            std::chrono::duration<double, std::milli>(Clock::now() - request_began).count());
        ms = buf;
      }
      request_began = {};
      std::lock_guard<std::mutex> lock(log_mu_);
      std::printf("%s \"%s %s\" %d %zu %s ms\n", req.remote_addr.c_str(), req.method.c_str(),
                  req.path.c_str(), res.status, res.body.size(), ms.c_str());
      std::fflush(stdout);
    });
  }
}

int InferenceServer::bind() {
  if (options_.port == 0) {
    const int port = http_->bind_to_any_port(options_.host);
    if (port < 0) user_error("cannot listen on ", options_.host);
    options_.port = port;
  } else if (!http_->bind_to_port(options_.host, options_.port)) {
    user_error("cannot listen on ", options_.host, ":", options_.port,
               " (in use, or not an address of this machine)");
  }
  static_cast<WideBacklogServer&>(*http_).widen_backlog();
  return options_.port;
}

void InferenceServer::serve() {
  ready_ = true;
  http_->listen_after_bind();
  ready_ = false;
}

void InferenceServer::stop() {
  ready_ = false;
  http_->stop();
}

}  // namespace dynvm::serve
