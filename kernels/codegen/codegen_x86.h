// CodeGenX86: x86-64 code generation. Adds to the common LLVM codegen what depends on the
// x86 ISA: the preferred and legal vector widths (512-bit vectors stay whole on AVX-512
// machines instead of being split into halves), and which conversions and roundings are
// single instructions (SSE4.1 round*, F16C vcvtps2ph/vcvtph2ps).
#pragma once

#include "kernels/codegen/codegen_llvm.h"

namespace dynvm::codegen {

class CodeGenX86 final : public CodeGenLLVM {
 public:
  CodeGenX86(llvm::LLVMContext& context, llvm::TargetMachine& tm, Target target);

  bool has_native_rounding() const override { return sse41_; }
  bool has_native_f16_conversion() const override { return f16c_; }
  bool has_avx512_scalef() const override { return avx512f_; }
  void add_function_attributes(llvm::Function* f) const override;
  llvm::Value* emit_target_minmax(llvm::IRBuilder<>& b, bool is_max, llvm::Value* a,
                                  llvm::Value* b_value) const override;

 private:
  bool avx_;
  bool sse41_;
  bool f16c_;
  bool avx512f_;
};

}  // namespace dynvm::codegen
