// Running the linker: posix_spawn with the linker's stdout and stderr captured through a
// pipe, so that a failed link reports what the linker said.
#include "kernels/codegen/linker.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "vm/error.h"

extern char** environ;

namespace dynvm::codegen {
namespace {

// A temporary file made with mkstemp, removed when this goes out of scope.
class TempFile {
 public:
  explicit TempFile(const char* suffix_hint) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/dynvm-" + suffix_hint +
            "-XXXXXX";
    int fd = ::mkstemp(path_.data());
    if (fd < 0) {
      user_error("cannot create a temporary file ", path_, ": ", std::strerror(errno),
                 " (set TMPDIR to a writable directory)");
    }
    ::close(fd);
  }
  ~TempFile() { ::unlink(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) user_error("cannot write ", path, ": ", std::strerror(errno));
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot read the linked kernel library ", path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs argv[0] with argv; returns its exit status (-1: killed by a signal) and its output.
int run(const std::vector<std::string>& argv, std::string* output) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) user_error("pipe: ", std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    user_error("cannot run the linker '", argv[0], "': ", std::strerror(rc),
               " (install lld or set DYNVM_LD to an ld.lld binary)");
  }
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output->append(buf, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) user_error("waitpid: ", std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string linker_path() {
  const char* env = std::getenv("DYNVM_LD");
  if (env != nullptr && *env != '\0') return env;
  return DYNVM_DEFAULT_LD;
}

std::vector<uint8_t> link_shared_object(const std::vector<char>& object) {
  std::string ld = linker_path();
  if (ld.empty()) {
    user_error(
        "no linker for kernel libraries: ld.lld was not found when dynvm was "
        "configured; install lld or set DYNVM_LD");
  }
  TempFile obj("kernels-o");
  TempFile so("kernels-so");
  write_file(obj.path(), object);
  // --no-undefined: a kernel library needs nothing from the process it is loaded into;
  // build-id none keeps the bytes a function of the input alone.
  std::vector<std::string> argv = {ld,
                                   "-shared",
                                   "--no-undefined",
                                   "--build-id=none",
                                   "-z",
                                   "noexecstack",
                                   "-z",
                                   "relro",
                                   "-z",
                                   "now",
                                   "--hash-style=both",
                                   "-o",
                                   so.path(),
                                   obj.path()};
  std::string output;
  int status = run(argv, &output);
  if (status != 0) {
    while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
    user_error("linking the kernel library failed (", ld, " exited with ", status, "): ", output);
  }
  return read_file(so.path());
}

}  // namespace dynvm::codegen
