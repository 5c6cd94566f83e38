// build_library: code generation, the optimisation pipeline (new pass manager, with the
// TargetMachine so that the vectorizers and the cost models know the ISA), object emission
// and linking. Each call has its own LLVMContext, so builds may run concurrently.
#include "kernels/codegen/library_builder.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <iostream>

#include "kernels/codegen/codegen_llvm.h"
#include "kernels/codegen/linker.h"
#include "kernels/codegen/llvm_support.h"
#include "vm/error.h"

namespace dynvm::codegen {
namespace {

void optimize(llvm::Module& module, llvm::TargetMachine& tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = opt_level >= 2;
  tuning.SLPVectorization = opt_level >= 2;
  llvm::PassBuilder pb(&tm, tuning);
  // No C library: passes must not turn loops into memset/memcpy calls or recognise libm
  // functions. Registered before the defaults, so this TargetLibraryInfo wins.
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(module.getTargetTriple()));
  tlii.disableAllFunctions();
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  switch (opt_level) {
    case 0:
      mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
      break;
    case 1:
      mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1);
      break;
    case 2:
      mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
      break;
    default:
      mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
      break;
  }
  mpm.run(module, mam);
}

std::vector<char> emit(llvm::Module& module, llvm::TargetMachine& tm, llvm::CodeGenFileType type) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, type)) {
    user_error("LLVM cannot emit code for ", module.getTargetTriple());
  }
  pm.run(module);
  return std::vector<char>(buffer.begin(), buffer.end());
}

}  // namespace

vm::KernelLibrary build_library(const std::vector<tir::LoweredFunc>& funcs, const Target& target,
                                const BuildOptions& options) {
  DYNVM_INTERNAL_CHECK(options.opt_level >= 0 && options.opt_level <= 3, "opt_level ",
                       options.opt_level);
  ensure_llvm_initialized();
  std::ostream& dump = options.dump != nullptr ? *options.dump : std::cerr;
  llvm::LLVMContext context;
  std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target, options.opt_level);
  std::unique_ptr<llvm::Module> module;
  {
    std::unique_ptr<CodeGenLLVM> cg = make_codegen(context, *tm, target);
    for (const tir::LoweredFunc& f : funcs) cg->add_function(f);
    module = cg->finish();
  }
  module->setPICLevel(llvm::PICLevel::BigPIC);
  auto print = [&](const char* title) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, nullptr);
    os.flush();
    dump << "; ---- " << title << " ----\n" << text;
  };
  if (options.dump_llvm_ir) print("LLVM IR before optimisation");
  optimize(*module, *tm, options.opt_level);
  if (options.dump_llvm_ir) print("LLVM IR after optimisation");
  if (options.dump_assembly) {
    // From a copy: code generation's own IR passes change the module they run on.
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*module);
    std::vector<char> asm_text = emit(*copy, *tm, llvm::CGFT_AssemblyFile);
    dump << "; ---- assembly ----\n" << std::string(asm_text.begin(), asm_text.end());
  }
  std::vector<char> object = emit(*module, *tm, llvm::CGFT_ObjectFile);
  vm::KernelLibrary lib;
  lib.format = vm::LibraryFormat::kSharedObject;
  lib.target = target.description();
  lib.bytes = link_shared_object(object);
  return lib;
}

}  // namespace dynvm::codegen
