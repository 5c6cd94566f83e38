// dynvm's own vector math library, generated as LLVM IR: exp, log, expm1, log1p, tanh,
// sigmoid, erf, sin, cos, atan, pow and floor-modulo for f32 and f64, scalar or any vector
// width.
//
// Why not libm or LLVM's llvm.exp & co.: a kernel library is a shared object that must not
// depend on libc/libm (it is loaded from memory on machines that only have the runtime),
// and LLVM lowers those intrinsics to libm calls, one lane at a time. Here every function
// is straight-line IR (range reduction, polynomial, selects for the special cases), so the
// vectorisers and the TIR vectorize pass get full-width code.
//
// Each function is emitted once per (function, type) as an internal, always-inline LLVM
// function "dynvm.math.<name>.<type>"; the optimiser inlines it at every call site.
// Accuracy (measured by tests/kernels/codegen/math_accuracy_test.cc) is about 1e-7..1e-6
// relative for f32 over the normal range and about 1e-15 for f64; see README.md.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <map>
#include <string>

namespace dynvm::codegen {

// What the math library needs to know about the target.
class MathTargetHooks {
 public:
  virtual ~MathTargetHooks() = default;
  // floor/ceil/trunc/roundeven are instructions (else they are built from adds and selects).
  virtual bool has_native_rounding() const = 0;
  // AVX-512's vscalefps / vscalefpd: x * 2^n in one instruction for 16 f32 or 8 f64 lanes,
  // overflow, underflow and subnormal results included (else two shifted exponents).
  virtual bool has_avx512_scalef() const { return false; }
  // CPU, features and vector width, so that the functions can be inlined into kernels.
  virtual void add_function_attributes(llvm::Function* f) const = 0;
};

enum class MathFn : uint8_t {
  kExp,
  kLog,
  kExpm1,
  kLog1p,
  kTanh,
  kSigmoid,
  kErf,
  kSin,
  kCos,
  kAtan,
  kFloor,
  kCeil,
  kTrunc,
  kRoundEven,  // exact roundings (round half to even)
};
enum class MathFn2 : uint8_t {
  kPow,       // IEEE pow semantics for the usual cases (negative base: integral exponents)
  kFloorMod,  // a - floor(a / b) * b, the sign of b (Python's %)
};

class MathLibrary {
 public:
  MathLibrary(llvm::Module& module, const MathTargetHooks& hooks)
      : module_(module), hooks_(hooks) {}

  // fn(x) at b's insertion point; x is f32/f64, scalar or vector.
  llvm::Value* call(llvm::IRBuilder<>& b, MathFn fn, llvm::Value* x);
  llvm::Value* call(llvm::IRBuilder<>& b, MathFn2 fn, llvm::Value* x, llvm::Value* y);

  bool native_rounding() const { return hooks_.has_native_rounding(); }
  bool avx512_scalef() const { return hooks_.has_avx512_scalef(); }

 private:
  llvm::Function* function(int fn, bool binary, llvm::Type* type);

  llvm::Module& module_;
  const MathTargetHooks& hooks_;
  std::map<std::string, llvm::Function*> functions_;
};

}  // namespace dynvm::codegen
