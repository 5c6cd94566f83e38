// Loads a kernel library (a native shared object held as bytes in an executable) from
// memory: the bytes go to an anonymous memfd, which dlopen opens through /proc/self/fd.
// Nothing is written to disk. Each load gets its own copy of the library's globals, so
// two executables never share kernel state.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vm/kernel_abi.h"

namespace dynvm::vm {

// The callbacks every loaded library receives at init; they forward to the
// KernelCallContext passed as `ctx` to each kernel call.
const DynvmRuntimeCallbacks& runtime_callbacks();

class LoadedLibrary {
 public:
  // Throws UserError when the bytes are not a loadable library, the ABI version differs,
  // or its init refuses.
  static std::unique_ptr<LoadedLibrary> load(const std::vector<uint8_t>& bytes,
                                             const std::string& name);
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;

  // Throws UserError when the library does not export `symbol`.
  DynvmKernelFn kernel(const std::string& symbol) const;

 private:
  LoadedLibrary(void* handle, int fd, std::string name)
      : handle_(handle), fd_(fd), name_(std::move(name)) {}
  void* handle_;
  // The memfd stays open while the library is loaded: dlopen recognises an already-loaded
  // object by its path, so a reused "/proc/self/fd/N" would hand a second program the
  // first one's library instead of its own bytes.
  int fd_;
  std::string name_;
};

}  // namespace dynvm::vm
