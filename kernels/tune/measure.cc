#include "kernels/tune/measure.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "kernels/codegen/library_builder.h"
#include "kernels/tune/measure_protocol.h"
#include "vm/error.h"
#include "vm/temp_dir.h"

extern char** environ;

namespace dynvm::tune {
namespace {

void write_file(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) user_error("cannot write ", path);
}

std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// One run of the measuring child: the results it printed, and why it stopped early.
struct ChildRun {
  std::vector<MeasureResult> results;
  std::string failure;  // empty: it answered and exited 0
};

ChildRun run_child(const std::vector<std::string>& argv, const std::string& stderr_path,
                   double timeout_s) {
  int fds[2];
  if (pipe(fds) != 0)
    user_error("cannot start the measuring process: pipe: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    user_error("cannot start the measuring process ", argv[0], ": ", std::strerror(spawned));
  }

  ChildRun run;
  std::string pending;
  char buf[4096];
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(timeout_s * 1000));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      kill(pid, SIGKILL);
      run.failure = str_cat("timed out after ", timeout_s, " s");
      break;
    }
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      MeasureResult r;
      if (parse_result(pending.substr(0, end), &r)) run.results.push_back(r);
      pending.erase(0, end + 1);
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (run.failure.empty()) {
    if (WIFSIGNALED(status)) {
      run.failure = str_cat("crashed (", strsignal(WTERMSIG(status)), ")");
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      std::string why = last_line_of(stderr_path);
      run.failure = str_cat("the measuring process exited with status ", WEXITSTATUS(status),
                            why.empty() ? "" : ": " + why);
    }
  }
  return run;
}

}  // namespace

std::vector<Measurement> measure(const Workload& w, const std::vector<ops::KnobValues>& candidates,
                                 const MeasureOptions& options) {
  DYNVM_INTERNAL_CHECK(!options.worker_command.empty(), "no measuring process configured");
  DYNVM_INTERNAL_CHECK(!w.sizes.empty(), "workload ", w.name, " has no sizes to measure at");
  std::vector<Measurement> out(candidates.size());
  const ops::OpInstance op = w.build(w.arg_types);

  // Symbol 0 is the default schedule; candidate i is symbol 1 + i when it lowers.
  MeasureRequest request;
  request.threads = options.threads;
  request.min_time_ms = options.min_time_ms;
  request.min_repeat = options.min_repeat;
  request.max_repeat = options.max_repeat;
  std::vector<tir::LoweredFunc> funcs{ops::lower_op(op, {}, "tune_reference")};
  request.symbols.push_back("tune_reference");
  std::vector<size_t> candidate_of{0};  // symbol -> candidate
  for (size_t i = 0; i < candidates.size(); ++i) {
    out[i].knobs = candidates[i];
    try {
      const std::string symbol = "tune_candidate_" + std::to_string(i);
      funcs.push_back(ops::lower_op(op, candidates[i], symbol));
      request.symbols.push_back(symbol);
      candidate_of.push_back(i);
    } catch (const std::exception& e) {
      out[i].error = str_cat("does not lower: ", e.what());
    }
  }
  for (const te::TensorRef& t : op.inputs) request.arg_dtypes.push_back(t->dtype());
  for (const te::TensorRef& t : op.outputs) request.arg_dtypes.push_back(t->dtype());
  request.num_inputs = op.inputs.size();
  for (const SizeSample& s : w.sizes) {
    DYNVM_INTERNAL_CHECK(s.args.size() == request.arg_dtypes.size(), "workload ", w.name, ": ",
                         s.args.size(), " argument shapes for ", request.arg_dtypes.size(),
                         " arguments");
    request.sizes.push_back(s.args);
  }
  if (request.symbols.size() == 1) return out;

  vm::TempDir dir("dynvm-tune");
  const vm::KernelLibrary library = codegen::build_library(funcs, options.target);
  write_file(dir.file("kernels.so"), library.bytes.data(), library.bytes.size());
  std::vector<std::vector<double>> ns(request.symbols.size(),
                                      std::vector<double>(w.sizes.size(), -1));
  std::vector<std::pair<size_t, size_t>> pending;
  for (size_t size = 0; size < w.sizes.size(); ++size) {
    for (size_t symbol = 1; symbol < request.symbols.size(); ++symbol)
      pending.emplace_back(symbol, size);
  }
  std::set<size_t> failed;  // symbols
  auto fail = [&](size_t symbol, const std::string& why) {
    if (!failed.insert(symbol).second) return;
    out[candidate_of[symbol]].error = why;
  };
  while (!pending.empty()) {
    request.jobs = pending;
    const std::string text = format_request(request);
    write_file(dir.file("request.txt"), text.data(), text.size());
    std::vector<std::string> argv = options.worker_command;
    argv.push_back(dir.file("request.txt"));
    argv.push_back(dir.file("kernels.so"));
    ChildRun run = run_child(argv, dir.file("stderr.txt"), options.timeout_s);
    std::set<std::pair<size_t, size_t>> answered;
    for (const MeasureResult& r : run.results) {
      if (r.symbol == 0 || r.symbol >= request.symbols.size() || r.size >= w.sizes.size()) continue;
      answered.emplace(r.symbol, r.size);
      if (r.error.empty()) {
        ns[r.symbol][r.size] = r.ns;
      } else {
        fail(r.symbol, str_cat(r.error, " (at ",
                               w.sizes.size() > 1 ? str_cat("size ", r.size) : "its size", ")"));
      }
    }
    std::vector<std::pair<size_t, size_t>> rest;
    for (const auto& job : pending) {
      if (answered.count(job) == 0 && failed.count(job.first) == 0) rest.push_back(job);
    }
    if (!rest.empty()) {
      // The first unanswered job is the one the child was running when it stopped.
      fail(rest.front().first,
           run.failure.empty() ? "the measuring process gave no answer" : run.failure);
      std::erase_if(rest, [&](const auto& job) { return failed.count(job.first) > 0; });
    }
    pending = std::move(rest);
  }

  double total_weight = 0;
  for (const SizeSample& s : w.sizes) total_weight += s.weight;
  for (size_t symbol = 1; symbol < request.symbols.size(); ++symbol) {
    Measurement& m = out[candidate_of[symbol]];
    if (failed.count(symbol) > 0) continue;
    m.ns = ns[symbol];
    m.cost_ns = 0;
    for (size_t size = 0; size < w.sizes.size(); ++size) {
      m.cost_ns += m.ns[size] * w.sizes[size].weight / (total_weight > 0 ? total_weight : 1);
    }
  }
  return out;
}

}  // namespace dynvm::tune
