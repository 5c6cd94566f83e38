/* Hand-written kernels for the VM tests, in the C ABI of vm/kernel_abi.h. They stand in
 * for generated kernels: tests/vm/CMakeLists.txt builds this file as a shared library,
 * and .vmasm fixtures embed its bytes with `.library`, so the VM loads it from memory
 * exactly as it loads a compiled model's kernels.
 *
 *   add_f32      out = a + b, elementwise over f32 tensors of one shape, in parallel
 *                chunks through the runtime's parallel_for
 *   add_f32_v4   the same, 4 elements per step (needs numel % 4 == 0): a "variant"
 *   fail_kernel  reports an error through set_error and returns 1
 *   empty_kernel does nothing and returns 0
 */
#include <stddef.h>
#include <stdint.h>

#include "vm/kernel_abi.h"

static const DynvmRuntimeCallbacks* g_runtime;

uint32_t dynvm_kernel_abi_version(void) { return DYNVM_KERNEL_ABI_VERSION; }

int32_t dynvm_library_init(const DynvmRuntimeCallbacks* runtime) {
  if (runtime == NULL || runtime->abi_version != DYNVM_KERNEL_ABI_VERSION) return 1;
  g_runtime = runtime;
  return 0;
}

typedef struct {
  const float* a;
  const float* b;
  float* out;
} AddClosure;

static int32_t add_chunk(int64_t begin, int64_t end, void* closure) {
  const AddClosure* c = (const AddClosure*)closure;
  for (int64_t i = begin; i < end; ++i) c->out[i] = c->a[i] + c->b[i];
  return 0;
}

/* Iterations are groups of 4 elements. */
static int32_t add_chunk_v4(int64_t begin, int64_t end, void* closure) {
  const AddClosure* c = (const AddClosure*)closure;
  for (int64_t g = begin; g < end; ++g) {
    const float* a = c->a + 4 * g;
    const float* b = c->b + 4 * g;
    float* out = c->out + 4 * g;
    out[0] = a[0] + b[0];
    out[1] = a[1] + b[1];
    out[2] = a[2] + b[2];
    out[3] = a[3] + b[3];
  }
  return 0;
}

static int is_f32(const DLTensor* t) {
  return t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static int same_shape(const DLTensor* x, const DLTensor* y) {
  if (x->ndim != y->ndim) return 0;
  for (int32_t i = 0; i < x->ndim; ++i) {
    if (x->shape[i] != y->shape[i]) return 0;
  }
  return 1;
}

static int32_t add(const DLTensor* args, int32_t num_args, void* ctx, int vectorized) {
  if (num_args != 3) {
    g_runtime->set_error(ctx, "add_f32: expected 3 arguments (a, b, out)");
    return 1;
  }
  for (int i = 0; i < 3; ++i) {
    if (!is_f32(&args[i])) {
      g_runtime->set_error(ctx, "add_f32: arguments must be f32 tensors");
      return 2;
    }
  }
  if (!same_shape(&args[0], &args[1]) || !same_shape(&args[0], &args[2])) {
    g_runtime->set_error(ctx, "add_f32: arguments must have one shape");
    return 3;
  }
  int64_t n = 1;
  for (int32_t i = 0; i < args[0].ndim; ++i) n *= args[0].shape[i];
  AddClosure closure = {(const float*)args[0].data, (const float*)args[1].data,
                        (float*)args[2].data};
  if (!vectorized) return g_runtime->parallel_for(ctx, 0, n, 256, add_chunk, &closure);
  if (n % 4 != 0) {
    g_runtime->set_error(ctx, "add_f32_v4: the element count must be a multiple of 4");
    return 4;
  }
  return g_runtime->parallel_for(ctx, 0, n / 4, 64, add_chunk_v4, &closure);
}

int32_t add_f32(const DLTensor* args, int32_t num_args, void* ctx) {
  return add(args, num_args, ctx, 0);
}

int32_t add_f32_v4(const DLTensor* args, int32_t num_args, void* ctx) {
  return add(args, num_args, ctx, 1);
}

int32_t fail_kernel(const DLTensor* args, int32_t num_args, void* ctx) {
  g_runtime->set_error(ctx, "fail_kernel: this kernel always fails");
  return 1;
}

int32_t empty_kernel(const DLTensor* args, int32_t num_args, void* ctx) { return 0; }
