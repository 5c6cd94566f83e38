#include "tools/vmbench/ort_peer.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "vm/error.h"

extern char** environ;

namespace dynvm::vmbench {
namespace fs = std::filesystem;

std::string find_ort_run(const std::string& given, const std::string& argv0) {
  if (!given.empty()) return fs::exists(given) ? given : "";
  if (const char* env = std::getenv("DYNVM_ORT_RUN"); env != nullptr && *env != '\0') {
    return fs::exists(env) ? env : "";
  }
  std::vector<fs::path> candidates{fs::current_path().parent_path() / "shared/peer/ort_run.mjs"};
  std::error_code ec;
  fs::path self = fs::canonical("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0);
  // build/tools/vmbench -> the repository -> its parent's shared/peer.
  for (fs::path p = self.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
    candidates.push_back(p.parent_path() / "shared/peer/ort_run.mjs");
  }
  for (const fs::path& c : candidates) {
    if (fs::exists(c, ec)) return c.string();
  }
  return "";
}

namespace {

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string last_line(const std::string& text) {
  std::string line, last;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// What went wrong, from node's stderr: the last line that is not a stack frame
// ("    at ...") or the code excerpt under a thrown error.
std::string error_line(const std::string& text) {
  std::string line, last;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == ' ' || line[0] == '\t' || line[0] == '^') continue;
    if (line.rfind("Node.js v", 0) == 0) continue;
    last = line;
  }
  return last.empty() ? last_line(text) : last;
}

}  // namespace

OrtResult run_ort(const std::string& ort_run, const std::string& model,
                  const std::map<std::string, std::string>& inputs, int threads, int repeat,
                  const std::filesystem::path& work_dir) {
  std::vector<std::string> argv{"node",
                                ort_run,
                                model,
                                "--threads",
                                std::to_string(threads),
                                "--iters",
                                std::to_string(repeat),
                                "--warmup",
                                "1"};
  for (const auto& [name, path] : inputs) {
    argv.push_back("--input");
    argv.push_back(name + "=" + path);
  }
  const fs::path out = work_dir / "ort_stdout", err = work_dir / "ort_stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "node", &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  OrtResult r;
  if (spawned != 0) {
    r.error = str_cat("cannot start node: ", std::strerror(spawned));
  } else {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string text = read_all(out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      const std::string why = error_line(read_all(err));
      r.error = why.empty() ? str_cat("ort_run.mjs failed (status ", status, ")") : why;
    } else {
      try {
        const nlohmann::json j = nlohmann::json::parse(last_line(text));
        vm::LatencyStats l;
        l.runs = static_cast<size_t>(repeat);
        l.median_ms = j.at("median_ms").get<double>();
        l.p90_ms = j.at("p90_ms").get<double>();
        l.min_ms = j.at("min_ms").get<double>();
        l.max_ms = j.at("max_ms").get<double>();
        r.latency = l;
      } catch (const std::exception& e) {
        r.error = str_cat("cannot read ort_run.mjs's report: ", e.what());
      }
    }
  }
  return r;
}

}  // namespace dynvm::vmbench
