// One status line on stderr that rewrites itself ("\r"), for tools' long work (vmtune's
// search, vmbench's compiles and rounds); silent unless stderr is a terminal.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <string>

namespace dynvm::tools {

class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO) != 0) {}
  void show(const std::string& line) {
    if (!enabled_) return;
    std::fprintf(stderr, "\r%-110.110s", line.c_str());
    std::fflush(stderr);
  }
  void clear() {
    if (enabled_) std::fprintf(stderr, "\r%-110s\r", "");
  }

 private:
  bool enabled_;
};

}  // namespace dynvm::tools
