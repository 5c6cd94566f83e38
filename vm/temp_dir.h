// A directory of its own under the system's temporary one (TMPDIR, else /tmp), removed
// with everything in it when the object goes out of scope. Used where a tool writes files
// for a child process: vmtune's measurement workers, vmbench's ONNX Runtime inputs.
//
//   TempDir dir("dynvm-tune");
//   write(dir.file("candidate.so"), ...);
#pragma once

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "vm/error.h"

namespace dynvm::vm {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) {
      user_error("cannot create a temporary directory: ", std::strerror(errno),
                 " (set TMPDIR to a writable directory)");
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace dynvm::vm
