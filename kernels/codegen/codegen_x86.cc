// x86-64 specifics, the TargetMachine factory and the codegen factory (typed: the triple's
// architecture picks the class; no string registry).
#include "kernels/codegen/codegen_x86.h"

#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <optional>

#include "kernels/codegen/llvm_support.h"
#include "vm/error.h"

namespace dynvm::codegen {

CodeGenX86::CodeGenX86(llvm::LLVMContext& context, llvm::TargetMachine& tm, Target target)
    : CodeGenLLVM(context, tm, std::move(target)),
      avx_(this->target().has_feature("avx")),
      sse41_(this->target().has_feature("sse4.1")),
      f16c_(this->target().has_feature("f16c")),
      avx512f_(this->target().has_feature("avx512f")) {}

void CodeGenX86::add_function_attributes(llvm::Function* f) const {
  CodeGenLLVM::add_function_attributes(f);
  // LLVM's default on AVX-512 CPUs prefers 256-bit vectors and splits wider IR vectors
  // unless the function declares them legal; TIR's vectorize pass already chose widths
  // for the machine, so both follow the target's vector width.
  std::string bits = std::to_string(target().vector_bits);
  f->addFnAttr("prefer-vector-width", bits);
  f->addFnAttr("min-legal-vector-width", bits);
}

// vmaxps / vminps (and the pd forms) at the vector's register width: SSE for 128 bits,
// AVX for 256, AVX-512F for 512.
llvm::Value* CodeGenX86::emit_target_minmax(llvm::IRBuilder<>& b, bool is_max, llvm::Value* a,
                                            llvm::Value* b_value) const {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(a->getType());
  if (vt == nullptr) return nullptr;
  const bool f32 = vt->getElementType()->isFloatTy();
  if (!f32 && !vt->getElementType()->isDoubleTy()) return nullptr;
  const unsigned bits = vt->getNumElements() * (f32 ? 32 : 64);
  using llvm::Intrinsic::ID;
  ID id = llvm::Intrinsic::not_intrinsic;
  bool rounding = false;  // the 512-bit forms take a rounding operand
  if (bits == 128) {
    id = f32 ? (is_max ? llvm::Intrinsic::x86_sse_max_ps : llvm::Intrinsic::x86_sse_min_ps)
             : (is_max ? llvm::Intrinsic::x86_sse2_max_pd : llvm::Intrinsic::x86_sse2_min_pd);
  } else if (bits == 256 && avx_) {
    id = f32 ? (is_max ? llvm::Intrinsic::x86_avx_max_ps_256 : llvm::Intrinsic::x86_avx_min_ps_256)
             : (is_max ? llvm::Intrinsic::x86_avx_max_pd_256 : llvm::Intrinsic::x86_avx_min_pd_256);
  } else if (bits == 512 && avx512f_) {
    id = f32 ? (is_max ? llvm::Intrinsic::x86_avx512_max_ps_512
                       : llvm::Intrinsic::x86_avx512_min_ps_512)
             : (is_max ? llvm::Intrinsic::x86_avx512_max_pd_512
                       : llvm::Intrinsic::x86_avx512_min_pd_512);
    rounding = true;
  }
  if (id == llvm::Intrinsic::not_intrinsic) return nullptr;
  std::vector<llvm::Value*> args{a, b_value};
  if (rounding) args.push_back(b.getInt32(4));  // _MM_FROUND_CUR_DIRECTION
  return b.CreateIntrinsic(id, {}, args);
}

std::unique_ptr<CodeGenLLVM> make_codegen(llvm::LLVMContext& context, llvm::TargetMachine& tm,
                                          const Target& target) {
  llvm::Triple triple(target.triple);
  if (triple.getArch() == llvm::Triple::x86_64) {
    return std::make_unique<CodeGenX86>(context, tm, target);
  }
  user_error("the CPU code generator supports x86-64 only, not ", target.triple);
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& target, int opt_level) {
  const llvm::Target& llvm_target = lookup_llvm_target(target.triple);
  llvm::TargetOptions options;  // IEEE semantics: no unsafe or fast math
  llvm::CodeGenOpt::Level level = opt_level <= 0   ? llvm::CodeGenOpt::None
                                  : opt_level == 1 ? llvm::CodeGenOpt::Less
                                  : opt_level == 2 ? llvm::CodeGenOpt::Default
                                                   : llvm::CodeGenOpt::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(
      llvm_target.createTargetMachine(target.triple, target.cpu, target.features, options,
                                      llvm::Reloc::PIC_, llvm::CodeModel::Small, level));
  if (tm == nullptr) user_error("LLVM cannot create a target machine for ", target.description());
  return tm;
}

}  // namespace dynvm::codegen
