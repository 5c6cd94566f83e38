#include "vm/error.h"

namespace dynvm {

void internal_error(const char* file, int line, const std::string& message) {
  throw InternalError(str_cat("internal error (a bug in dynvm) at ", file, ":", line, ": ",
                              message));
}

}  // namespace dynvm
