// The error contract every dynvm command-line tool keeps (vmrun, vmc): whatever goes wrong
// is ONE line on stderr, "<tool>: <message>", and a non-zero exit — 2 for a malformed
// command line (dynvm::UsageError, vm/error.h), 1 for everything else — never an uncaught
// exception or a crash.
//
//   int main(int argc, char** argv) {
//     return dynvm::tools::tool_main("vmrun", [&] { return run(argc, argv); });
//   }
#pragma once

#include <cstdio>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <string_view>

#include "vm/error.h"

namespace dynvm::tools {

// Prints `message` as one line (newlines become spaces) after flushing stdout.
inline int report_failure(std::string_view tool, int status, std::string_view message) {
  std::cout.flush();
  std::string line(message);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(tool.size()), tool.data(), line.c_str());
  return status;
}

template <typename Run>
int tool_main(std::string_view tool, Run&& run) {
  try {
    return run();
  } catch (const UsageError& e) {
    return report_failure(tool, 2, e.what());
  } catch (const Error& e) {  // an InternalError's message says it is a bug in dynvm
    return report_failure(tool, 1, e.what());
  } catch (const std::bad_alloc&) {
    return report_failure(tool, 1, "out of memory");
  } catch (const std::exception& e) {
    return report_failure(tool, 1, e.what());
  } catch (...) {
    return report_failure(tool, 1, "unknown error");
  }
}

}  // namespace dynvm::tools
