// Errors in dynvm come in two kinds, and they are kept apart on purpose:
//   * UserError: the user's model, input, file or flag is wrong. One clear line, shown
//     as is; tools exit non-zero. Raised with user_error(...). A UsageError is the
//     UserError of a malformed command line (tools exit 2 for it, 1 for other errors).
//   * InternalError: a bug in dynvm itself. Raised by DYNVM_INTERNAL_CHECK.
// Both derive from dynvm::Error so a tool's main() can catch everything in one place.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace dynvm {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UserError : public Error {
 public:
  using Error::Error;
};

class UsageError : public UserError {
 public:
  using UserError::UserError;
};

class InternalError : public Error {
 public:
  using Error::Error;
};

// Concatenates anything that has operator<< into one string.
template <typename... Args>
std::string str_cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void user_error(Args&&... args) {
  throw UserError(str_cat(std::forward<Args>(args)...));
}

[[noreturn]] void internal_error(const char* file, int line, const std::string& message);

}  // namespace dynvm

#define DYNVM_INTERNAL_CHECK(cond, ...)                                                     \
  do {                                                                                      \
    if (!(cond)) [[unlikely]]                                                               \
      ::dynvm::internal_error(__FILE__, __LINE__,                                           \
                              ::dynvm::str_cat("check failed: " #cond " ", ##__VA_ARGS__)); \
  } while (0)
