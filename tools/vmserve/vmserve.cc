// vmserve: serves .vmexe models over HTTP with the KServe v2 / Open Inference protocol
// (http_server.h). It loads and verifies every model before it listens, prints one line
// with the address once it does, and on SIGTERM or SIGINT stops accepting, answers the
// requests in flight, writes the histogram of request shapes and exits 0.
//
// A bad command line or model is one line on stderr and a non-zero exit (tool_main.h);
// a bad request is the client's 4xx, never the server's end.
#include <malloc.h>
#include <pthread.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "serializer/vmexe.h"
#include "tools/tool_main.h"
#include "tools/vmserve/serve_options.h"
#include "vm/program.h"

namespace dynvm::serve {
namespace {

void write_shapes(const std::string& path, const InferenceServer& server) {
  std::vector<ModelShapes> all;
  for (const auto& model : server.models()) {
    all.push_back(
        {model->name(), model->metrics().shapes.entries(), model->metrics().shapes.other()});
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << shapes_file_json(all);
    if (!out) user_error("cannot write ", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) user_error("cannot write ", path, ": ", ec.message());
}

int run(int argc, char** argv) {
  ServeOptions opts = parse_serve_options(argc, argv);
  if (opts.help) {
    std::cout << serve_usage_text();
    return 0;
  }
  if (opts.version) {
    std::cout << "vmserve " << DYNVM_VERSION << "\n";
    return 0;
  }

  // A server lives long and sees requests of every size. With glibc's defaults (an mmap
  // threshold that rises as large blocks are freed, and a heap arena per thread) freed
  // request bodies and responses fragment the heaps, and resident memory crept up by 56%
  // over 10,000 random-length requests (tests/serve/soak.py). Blocks over 256 KiB now
  // come from mmap and go back to the system when freed; four arenas bound the rest.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  mallopt(M_ARENA_MAX, 4);

  // SIGTERM and SIGINT are taken by one thread with sigwait, so every thread started
  // from here on (HTTP, workers, TBB) leaves them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that goes away is its own problem

  std::vector<std::unique_ptr<ServedModel>> models;
  for (const ModelArg& m : opts.models) {
    ModelOptions model_options = opts.model;
    model_options.batching = m.batching;
    model_options.batch_axes = m.batch_axes;
    std::shared_ptr<const vm::Program> program;
    try {
      program = vm::Program::load(serializer::load_vmexe(m.path));
    } catch (const UserError& e) {
      user_error("model '", m.name, "': ", e.what());
    }
    models.push_back(std::make_unique<ServedModel>(m.name, std::move(program), model_options));
  }
  InferenceServer server(std::move(models), opts.server);
  const int port = server.bind();

  std::atomic<bool> done{false};
  std::thread signals([&] {
    const timespec tick{0, 100'000'000};
    while (!done) {
      const int sig = sigtimedwait(&stop_signals, nullptr, &tick);
      if (sig == SIGTERM || sig == SIGINT) {
        std::printf("vmserve: %s: finishing the requests in flight\n",
                    sig == SIGTERM ? "SIGTERM" : "SIGINT");
        std::fflush(stdout);
        server.stop();
        return;
      }
    }
  });

  std::string names;
  for (const auto& model : server.models()) {
    names += (names.empty() ? "" : ", ") + model->name();
    if (model->batching()) names += " (batched)";
  }
  std::printf("vmserve: serving %s on http://%s:%d\n", names.c_str(), opts.server.host.c_str(),
              port);
  std::fflush(stdout);
  server.serve();
  done = true;
  signals.join();
  for (const auto& model : server.models()) model->stop();
  if (!opts.shapes_out.empty()) write_shapes(opts.shapes_out, server);
  std::printf("vmserve: stopped\n");
  return 0;
}

}  // namespace
}  // namespace dynvm::serve

int main(int argc, char** argv) {
  return dynvm::tools::tool_main("vmserve", [&] { return dynvm::serve::run(argc, argv); });
}
