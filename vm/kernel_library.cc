#include "vm/kernel_library.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "vm/allocator.h"
#include "vm/error.h"
#include "vm/kernel_call.h"

namespace dynvm::vm {
namespace {

int32_t cb_parallel_for(void* ctx, int64_t begin, int64_t end, int64_t grain,
                        DynvmParallelBody body, void* closure) {
  if (end <= begin) return 0;
  auto* call = static_cast<KernelCallContext*>(ctx);
  ParallelBackend& backend = call != nullptr && call->parallel != nullptr ? *call->parallel
                                                                         : serial_backend();
  return backend.parallel_for(begin, end, grain < 1 ? 1 : grain, body, closure);
}

// Workspace blocks carry their pool block in a 64-byte header before the pointer.
void* cb_workspace_alloc(void* ctx, uint64_t bytes) {
  if (bytes > SIZE_MAX - kTensorAlignment) return nullptr;
  try {
    PooledAllocator& pool = device_allocator(kCpu);
    Block block = pool.alloc(bytes + kTensorAlignment);
    std::memcpy(block.ptr, &block, sizeof(Block));
    return static_cast<char*>(block.ptr) + kTensorAlignment;
  } catch (const Error&) {
    return nullptr;
  }
}

void cb_workspace_free(void* ctx, void* ptr) {
  if (ptr == nullptr) return;
  Block block;
  std::memcpy(&block, static_cast<char*>(ptr) - kTensorAlignment, sizeof(Block));
  device_allocator(kCpu).free(block);
}

void cb_set_error(void* ctx, const char* message) {
  auto* call = static_cast<KernelCallContext*>(ctx);
  if (call != nullptr && message != nullptr) call->error = message;
}

const DynvmRuntimeCallbacks kCallbacks = {DYNVM_KERNEL_ABI_VERSION, cb_parallel_for,
                                          cb_workspace_alloc, cb_workspace_free, cb_set_error};

}  // namespace

const DynvmRuntimeCallbacks& runtime_callbacks() { return kCallbacks; }

std::unique_ptr<LoadedLibrary> LoadedLibrary::load(const std::vector<uint8_t>& bytes,
                                                   const std::string& name) {
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) user_error("cannot load kernel library ", name, ": memfd_create: ", std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      user_error("cannot load kernel library ", name, ": write: ", std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    ::close(fd);
    const char* err = dlerror();
    user_error("cannot load kernel library ", name, ": ", err != nullptr ? err : "dlopen failed");
  }
  std::unique_ptr<LoadedLibrary> lib(new LoadedLibrary(handle, fd, name));
  auto version = reinterpret_cast<DynvmAbiVersionFn>(dlsym(handle, "dynvm_kernel_abi_version"));
  auto init = reinterpret_cast<DynvmLibraryInitFn>(dlsym(handle, "dynvm_library_init"));
  if (version == nullptr || init == nullptr) {
    user_error("kernel library ", name, " is not a dynvm kernel library (no ",
               version == nullptr ? "dynvm_kernel_abi_version" : "dynvm_library_init", ")");
  }
  if (version() != DYNVM_KERNEL_ABI_VERSION) {
    user_error("kernel library ", name, " uses kernel ABI ", version(), ", this runtime speaks ",
               DYNVM_KERNEL_ABI_VERSION);
  }
  if (int32_t rc = init(&kCallbacks); rc != 0) {
    user_error("kernel library ", name, " refused to initialise (code ", rc, ")");
  }
  return lib;
}

LoadedLibrary::~LoadedLibrary() {
  dlclose(handle_);
  ::close(fd_);
}

DynvmKernelFn LoadedLibrary::kernel(const std::string& symbol) const {
  void* fn = dlsym(handle_, symbol.c_str());
  if (fn == nullptr) user_error("kernel library ", name_, " has no kernel '", symbol, "'");
  return reinterpret_cast<DynvmKernelFn>(fn);
}

}  // namespace dynvm::vm
