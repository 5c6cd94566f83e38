#include "tools/vmserve/serve_options.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

#include "vm/error.h"

namespace dynvm::serve {
namespace {

template <typename... Args>
[[noreturn]] void usage_error(Args&&... args) {
  throw UsageError(str_cat(std::forward<Args>(args)..., " (see vmserve --help)"));
}

int64_t parse_int(std::string_view option, std::string_view text, int64_t min, int64_t max) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    usage_error("option ", option, " needs an integer in ", min, "..", max, ", got '", text, "'");
  }
  return value;
}

std::string base_name(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 6 && name.ends_with(".vmexe")) name.resize(name.size() - 6);
  return name;
}

bool valid_name(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
      return false;
    }
  }
  return true;
}

// --batch MODEL or MODEL:TENSOR=AXIS,TENSOR=AXIS...
void apply_batch(ServeOptions& o, const std::string& spec) {
  const size_t colon = spec.find(':');
  const std::string model = spec.substr(0, colon);
  auto it = std::find_if(o.models.begin(), o.models.end(),
                         [&](const ModelArg& m) { return m.name == model; });
  if (it == o.models.end()) usage_error("--batch names '", model, "', which is no served model");
  it->batching = true;
  if (colon == std::string::npos) return;
  std::string_view rest = std::string_view(spec).substr(colon + 1);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      usage_error("--batch ", spec, ": expected TENSOR=AXIS, got '", item, "'");
    }
    it->batch_axes[std::string(item.substr(0, eq))] =
        static_cast<int>(parse_int("--batch", item.substr(eq + 1), -1, 64));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
}

}  // namespace

std::string serve_usage_text() {
  return R"(usage: vmserve [NAME=]MODEL.vmexe [...] [options]

Serves dynvm executables over HTTP/1.1 with the KServe v2 (Open Inference) protocol:
JSON tensors and the binary tensor extension. Each request runs at its own input sizes;
requests of any lengths run concurrently on one executor per model. A model's name is
its file's base name (model.vmexe -> model), or NAME.

endpoints:
  GET  /v2/health/live, /v2/health/ready, /v2/models/NAME, /v2/models/NAME/ready
  POST /v2/models/NAME/infer
  GET  /metrics              Prometheus text: requests, failures, latency and queue
                             time, batch sizes, in-flight count, per-shape counts

server:
  --host ADDR                address to listen on (default 127.0.0.1; 0.0.0.0: all)
  --port N                   port (default 8000; 0: any free port, printed at start)
  --http-threads N           connections served at once (default 128; a request waits
                             in a model's queue on one of these threads)
  --max-body-mb N            larger request bodies get 413 (default 64)
  --read-timeout-ms N        how long a client may take to send the rest of a request
                             (default 5000)
  --log-requests             one access-log line per request on stdout
  --shapes-out FILE          where the histogram of request shapes is written at
                             shutdown (default vmserve.shapes.json; '' : not written);
                             vmtune --sizes-from and vmc --specialize-from read it
models:
  --threads N                executor threads per model (default: all hardware threads)
  --concurrency N            requests of one model run at once (default: --threads)
  --max-queue N              requests waiting per model before 503 (default 64)
  --deadline-ms N            a request still queued after N ms gets 504 (default
                             60000); a request's parameters.timeout (us) overrides it
batching (off unless asked, per model):
  --batch NAME               batch requests of equal shapes for model NAME along each
                             tensor's first symbolic dim; only for models that treat
                             the rows of that dim independently
  --batch NAME:T=AXIS,...    the same, with the batch axis of tensor T given (-1: T is
                             not batched and must be equal within a batch)
  --max-batch N              rows per batched run (default 8)
  --max-queue-delay-us N     how long a request may wait for others (default 500)

  --help, -h                 this text
  --version                  the version

SIGTERM or SIGINT: stop accepting, answer what is in flight, write the shapes, exit 0.
)";
}

ServeOptions parse_serve_options(int argc, const char* const* argv) {
  ServeOptions o;
  std::vector<std::string> batches;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error("option ", a, " needs a value");
      return argv[++i];
    };
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--version") {
      o.version = true;
    } else if (a == "--host") {
      o.server.host = value();
    } else if (a == "--port") {
      o.server.port = static_cast<int>(parse_int(a, value(), 0, 65535));
    } else if (a == "--http-threads") {
      o.server.http_threads = static_cast<int>(parse_int(a, value(), 1, 4096));
    } else if (a == "--max-body-mb") {
      o.server.max_body_bytes = static_cast<size_t>(parse_int(a, value(), 1, 1 << 20)) << 20;
    } else if (a == "--read-timeout-ms") {
      o.server.read_timeout = std::chrono::milliseconds(parse_int(a, value(), 1, kIntMax));
    } else if (a == "--log-requests") {
      o.server.log_requests = true;
    } else if (a == "--shapes-out") {
      o.shapes_out = value();
    } else if (a == "--threads") {
      o.model.threads = static_cast<int>(parse_int(a, value(), 1, 1024));
    } else if (a == "--concurrency") {
      o.model.concurrency = static_cast<int>(parse_int(a, value(), 1, 1024));
    } else if (a == "--max-queue") {
      o.model.max_queue = static_cast<size_t>(parse_int(a, value(), 1, kIntMax));
    } else if (a == "--deadline-ms") {
      o.model.deadline = std::chrono::milliseconds(parse_int(a, value(), 1, kIntMax));
    } else if (a == "--batch") {
      batches.push_back(value());
    } else if (a == "--max-batch") {
      o.model.max_batch = parse_int(a, value(), 1, 1 << 16);
    } else if (a == "--max-queue-delay-us") {
      o.model.max_queue_delay = std::chrono::microseconds(parse_int(a, value(), 0, 10'000'000));
    } else if (a.starts_with("-") && a.size() > 1) {
      usage_error("unknown option ", a);
    } else {
      ModelArg m;
      const size_t eq = a.find('=');
      m.path = eq == std::string::npos ? a : a.substr(eq + 1);
      m.name = eq == std::string::npos ? base_name(a) : a.substr(0, eq);
      if (!valid_name(m.name)) {
        usage_error("model name '", m.name, "' must be letters, digits, '_', '-' or '.'");
      }
      for (const ModelArg& seen : o.models) {
        if (seen.name == m.name) usage_error("two models are named '", m.name, "'; use NAME=PATH");
      }
      o.models.push_back(std::move(m));
    }
  }
  if (o.help || o.version) return o;
  if (o.models.empty()) usage_error("no model given");
  for (const std::string& spec : batches) apply_batch(o, spec);
  return o;
}

}  // namespace dynvm::serve
