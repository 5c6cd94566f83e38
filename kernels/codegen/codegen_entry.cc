// The kernel entry function of the ABI (vm/kernel_abi.h):
//   int32_t name(const DLTensor* args, int32_t num_args, void* ctx)
// It trusts nothing about its arguments: it checks their count, each one's rank and dtype,
// binds every symbolic dim (an arith Var appearing alone as a parameter dim) from its
// first occurrence (else from a dim `c * var`, as var = dim floordiv c), and checks every
// other dim against the value it implies. A mismatch is reported through
// runtime->set_error with a message formatted by generated code (the library has no libc)
// and the kernel returns kStatusBadArguments.
#include <dlpack/dlpack.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/MDBuilder.h>

#include <optional>
#include <set>

#include "kernels/arith/printer.h"
#include "kernels/codegen/codegen_llvm.h"
#include "kernels/tir/arith_util.h"
#include "vm/error.h"

namespace dynvm::codegen {

using llvm::Value;

namespace {

// DLTensor fields, as laid out by CodeGenLLVM's dltensor_type_.
constexpr unsigned kFieldData = 0, kFieldNdim = 3, kFieldDtype = 4, kFieldShape = 7,
                   kFieldByteOffset = 9;
constexpr int kReportBytes = 256;

// The variables of `e` that are not in `bound`.
void unbound_vars(const arith::Expr& e, const std::unordered_map<arith::VarId, Value*>& bound,
                  std::set<std::string>* out) {
  if (e.kind() == arith::ExprKind::kVar) {
    if (!bound.count(e->var_id)) out->insert(e->name);
    return;
  }
  for (int i = 0; i < arith::kind_arity(e.kind()); ++i) unbound_vars(e.operand(i), bound, out);
}

}  // namespace

void CodeGenLLVM::emit_kernel_entry() {
  const tir::PrimFunc& f = lowered_->func;
  llvm::IRBuilder<>& b = *b_;
  auto* type =
      llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(), b.getInt32Ty(), b.getPtrTy()}, false);
  auto* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, f.name, module_.get());
  add_function_attributes(fn);
  fn->getArg(0)->setName("args");
  fn->getArg(1)->setName("num_args");
  fn->getArg(2)->setName("ctx");
  fs_ = FunctionState{};
  fs_.fn = fn;
  fs_.entry = llvm::BasicBlock::Create(context_, "entry", fn);
  b.SetInsertPoint(fs_.entry);
  fs_.ctx = fn->getArg(2);
  fs_.runtime = b.CreateLoad(b.getPtrTy(), runtime_global_, "runtime");
  bind_arguments(fn->getArg(0), fn->getArg(1));
  kernel_analyzer_ = fs_.analyzer;
  emit_stmt(f.body);
  b.CreateRet(b.getInt32(0));
  fs_ = FunctionState{};
}

void CodeGenLLVM::bind_arguments(Value* args, Value* num_args) {
  const tir::PrimFunc& f = lowered_->func;
  llvm::IRBuilder<>& b = *b_;
  Value* bad_args = b.getInt32(kStatusBadArguments);
  const auto n = static_cast<int64_t>(f.params.size());
  return_on_failure(b.CreateICmpEQ(num_args, b.getInt32(static_cast<uint32_t>(n))), bad_args, [&] {
    report_numbers(f.name + ": got ", b.CreateSExt(num_args, b.getInt64Ty()),
                   " arguments, expected ", b.getInt64(static_cast<uint64_t>(n)), "");
  });

  // Rank and dtype of every argument first: dims are only read from a tensor whose rank
  // is known to be right.
  std::vector<Value*> shapes(f.params.size());
  auto arg_name = [&](size_t i) {
    return str_cat(f.name, ": argument ", i, " (", f.params[i]->name(), ")");
  };
  for (size_t i = 0; i < f.params.size(); ++i) {
    const tir::Buffer& param = *f.params[i];
    DYNVM_INTERNAL_CHECK(param.scope() == tir::BufferScope::kGlobal, "parameter ", param.name(),
                         " of ", f.name, " is not a global buffer");
    Value* t = b.CreateConstGEP1_64(dltensor_type_, args, i, param.name() + ".tensor");
    Value* ndim = b.CreateLoad(b.getInt32Ty(), b.CreateStructGEP(dltensor_type_, t, kFieldNdim));
    const auto rank = static_cast<uint32_t>(param.shape().size());
    return_on_failure(b.CreateICmpEQ(ndim, b.getInt32(rank)), bad_args, [&] {
      report_numbers(arg_name(i) + " has rank ", b.CreateSExt(ndim, b.getInt64Ty()), ", expected ",
                     b.getInt64(rank), "");
    });
    // {code, bits, lanes} as one little-endian i32.
    DLDataType dl = vm::to_dlpack(param.dtype());
    uint32_t expected = dl.code | (uint32_t{dl.bits} << 8) | (uint32_t{dl.lanes} << 16);
    Value* dtype = b.CreateLoad(b.getInt32Ty(), b.CreateStructGEP(dltensor_type_, t, kFieldDtype));
    return_on_failure(b.CreateICmpEQ(dtype, b.getInt32(expected)), bad_args, [&] {
      report_static(
          str_cat(arg_name(i), " has the wrong dtype, expected ", vm::dtype_name(param.dtype())));
    });
    if (rank > 0) {
      shapes[i] = b.CreateLoad(b.getPtrTy(), b.CreateStructGEP(dltensor_type_, t, kFieldShape),
                               param.name() + ".shape");
    }
    Value* data = b.CreateLoad(b.getPtrTy(), b.CreateStructGEP(dltensor_type_, t, kFieldData));
    Value* offset =
        b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(dltensor_type_, t, kFieldByteOffset));
    fs_.buffers[&param] = b.CreateGEP(b.getInt8Ty(), data, offset, param.name());
  }

  // Bind each symbolic dim from its first occurrence alone as a dim.
  struct Source {
    size_t arg, axis;
  };
  std::unordered_map<arith::VarId, Source> sources;
  std::vector<std::vector<Value*>> dims(f.params.size());
  for (size_t i = 0; i < f.params.size(); ++i) {
    const auto& shape = f.params[i]->shape();
    for (size_t j = 0; j < shape.size(); ++j) {
      dims[i].push_back(b.CreateLoad(b.getInt64Ty(),
                                     b.CreateConstGEP1_64(b.getInt64Ty(), shapes[i], j),
                                     str_cat(f.params[i]->name(), ".dim", j)));
      const arith::Expr& d = shape[j];
      if (d.kind() == arith::ExprKind::kVar && !sources.count(d->var_id)) {
        sources[d->var_id] = Source{i, j};
        bind_var(d, dims[i][j]);
        fs_.analyzer.bind(arith::Var(d), 0, arith::kPosInf);  // dims are never negative
      }
    }
  }
  // A var with no bare occurrence may appear scaled, `c * var`: the specializer's residue
  // variants substitute n -> c * q. Bind var = dim floordiv c; the check below then
  // requires dim == c * var, so a dim that is not a multiple of c is refused.
  for (size_t i = 0; i < f.params.size(); ++i) {
    const auto& shape = f.params[i]->shape();
    for (size_t j = 0; j < shape.size(); ++j) {
      std::optional<tir::DimBinding> scaled = tir::dim_binding(shape[j]);
      if (!scaled || fs_.vars.count(scaled->var->var_id)) continue;
      bind_var(scaled->var, b.CreateSDiv(dims[i][j], b.getInt64(scaled->scale), scaled->var->name));
      fs_.analyzer.bind(arith::Var(scaled->var), 0, arith::kPosInf);
    }
  }

  // Check every other dim against what the bound dims imply.
  for (size_t i = 0; i < f.params.size(); ++i) {
    const auto& shape = f.params[i]->shape();
    for (size_t j = 0; j < shape.size(); ++j) {
      const arith::Expr& d = shape[j];
      if (d.kind() == arith::ExprKind::kVar) {
        const Source& src = sources.at(d->var_id);
        if (src.arg == i && src.axis == j) continue;
      }
      std::set<std::string> missing;
      unbound_vars(d, fs_.vars, &missing);
      DYNVM_INTERNAL_CHECK(missing.empty(), "kernel ", f.name, ": dim ", j, " of parameter ",
                           f.params[i]->name(), " uses ", *missing.begin(),
                           ", which is not alone as a dim of any parameter, so the kernel "
                           "cannot bind it");
      Value* expected = emit_index(d);
      std::string why;
      if (d.kind() == arith::ExprKind::kVar) {
        const Source& src = sources.at(d->var_id);
        why = str_cat(" (", d->name, ", from argument ", src.arg, " dim ", src.axis, ")");
      } else if (!d.is_int_imm()) {
        why = str_cat(" (", arith::to_string(d), ")");
      }
      return_on_failure(b.CreateICmpEQ(dims[i][j], expected), bad_args, [&] {
        report_numbers(str_cat(arg_name(i), " dim ", j, " is "), dims[i][j], ", expected ",
                       expected, why);
      });
    }
  }
}

void CodeGenLLVM::return_on_failure(Value* ok, Value* status, const std::function<void()>& report) {
  llvm::IRBuilder<>& b = *b_;
  auto* fail = llvm::BasicBlock::Create(context_, "fail", fs_.fn);
  auto* cont = llvm::BasicBlock::Create(context_, "ok", fs_.fn);
  llvm::MDBuilder md(context_);
  b.CreateCondBr(ok, cont, fail, md.createBranchWeights(1 << 20, 1));
  b.SetInsertPoint(fail);
  if (report) report();
  auto* free_type = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy()}, false);
  for (auto it = fs_.live_workspaces.rbegin(); it != fs_.live_workspaces.rend(); ++it) {
    b.CreateCall(free_type, runtime_callback(3), {fs_.ctx, *it});
  }
  b.CreateRet(status);
  b.SetInsertPoint(cont);
}

void CodeGenLLVM::report_static(const std::string& message) {
  llvm::IRBuilder<>& b = *b_;
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy()}, false);
  b.CreateCall(type, runtime_callback(4), {fs_.ctx, string_constant(message)});
}

void CodeGenLLVM::report_numbers(const std::string& a, Value* x, const std::string& m, Value* y,
                                 const std::string& c) {
  llvm::IRBuilder<>& b = *b_;
  b.CreateCall(report_function(),
               {fs_.ctx, fs_.runtime, string_constant(a), x, string_constant(m),
                y != nullptr ? y : b.getInt64(0), string_constant(y != nullptr ? c : ""),
                b.getInt1(y != nullptr)});
}

// dynvm.append(buf, pos, s) -> pos: copies the NUL-terminated s to buf[pos...], stopping
// one byte short of kReportBytes so that the terminator always fits.
llvm::Function* CodeGenLLVM::append_function() {
  if (append_fn_ != nullptr) return append_fn_;
  llvm::IRBuilder<> b(context_);
  llvm::Type* i64 = b.getInt64Ty();
  auto* type = llvm::FunctionType::get(i64, {b.getPtrTy(), i64, b.getPtrTy()}, false);
  append_fn_ =
      llvm::Function::Create(type, llvm::Function::InternalLinkage, "dynvm.append", module_.get());
  add_function_attributes(append_fn_);
  Value* buf = append_fn_->getArg(0);
  Value* pos = append_fn_->getArg(1);
  Value* s = append_fn_->getArg(2);
  auto* entry = llvm::BasicBlock::Create(context_, "entry", append_fn_);
  auto* loop = llvm::BasicBlock::Create(context_, "loop", append_fn_);
  auto* body = llvm::BasicBlock::Create(context_, "copy", append_fn_);
  auto* done = llvm::BasicBlock::Create(context_, "done", append_fn_);
  b.SetInsertPoint(entry);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* p = b.CreatePHI(i64, 2, "p");
  llvm::PHINode* k = b.CreatePHI(i64, 2, "k");
  p->addIncoming(pos, entry);
  k->addIncoming(b.getInt64(0), entry);
  Value* ch = b.CreateLoad(b.getInt8Ty(), b.CreateGEP(b.getInt8Ty(), s, k));
  Value* stop = b.CreateOr(b.CreateICmpEQ(ch, b.getInt8(0)),
                           b.CreateICmpSGE(p, b.getInt64(kReportBytes - 1)));
  b.CreateCondBr(stop, done, body);
  b.SetInsertPoint(body);
  b.CreateStore(ch, b.CreateGEP(b.getInt8Ty(), buf, p));
  p->addIncoming(b.CreateAdd(p, b.getInt64(1)), body);
  k->addIncoming(b.CreateAdd(k, b.getInt64(1)), body);
  b.CreateBr(loop);
  b.SetInsertPoint(done);
  b.CreateRet(p);
  return append_fn_;
}

// dynvm.report(ctx, runtime, a, x, m, y, c, has_y): formats "<a><x><m>[<y><c>]" into a
// stack buffer (decimal integers written by hand) and hands it to runtime->set_error.
llvm::Function* CodeGenLLVM::report_function() {
  if (report_fn_ != nullptr) return report_fn_;
  llvm::IRBuilder<> b(context_);
  llvm::Type* i64 = b.getInt64Ty();
  llvm::Type* ptr = b.getPtrTy();
  auto* type = llvm::FunctionType::get(b.getVoidTy(),
                                       {ptr, ptr, ptr, i64, ptr, i64, ptr, b.getInt1Ty()}, false);
  report_fn_ =
      llvm::Function::Create(type, llvm::Function::InternalLinkage, "dynvm.report", module_.get());
  add_function_attributes(report_fn_);
  report_fn_->addFnAttr(llvm::Attribute::NoInline);
  report_fn_->addFnAttr(llvm::Attribute::Cold);
  llvm::Function* fn = report_fn_;
  llvm::Function* append = append_function();

  auto* entry = llvm::BasicBlock::Create(context_, "entry", fn);
  b.SetInsertPoint(entry);
  Value* buf = b.CreateAlloca(llvm::ArrayType::get(b.getInt8Ty(), kReportBytes), nullptr, "buf");
  Value* digits = b.CreateAlloca(llvm::ArrayType::get(b.getInt8Ty(), 24), nullptr, "digits");

  // Appends the decimal form of v: digits right to left into `digits`, then append().
  auto append_int = [&](Value* pos, Value* v) -> Value* {
    llvm::BasicBlock* before = b.GetInsertBlock();
    auto* loop = llvm::BasicBlock::Create(context_, "digit", fn);
    auto* after = llvm::BasicBlock::Create(context_, "digits_done", fn);
    Value* negative = b.CreateICmpSLT(v, b.getInt64(0));
    Value* magnitude = b.CreateSelect(negative, b.CreateSub(b.getInt64(0), v), v);
    b.CreateStore(b.getInt8(0), b.CreateConstGEP1_64(b.getInt8Ty(), digits, 23));
    b.CreateBr(loop);
    b.SetInsertPoint(loop);
    llvm::PHINode* at = b.CreatePHI(i64, 2, "at");
    llvm::PHINode* rest = b.CreatePHI(i64, 2, "rest");
    at->addIncoming(b.getInt64(23), before);
    rest->addIncoming(magnitude, before);
    Value* next_at = b.CreateSub(at, b.getInt64(1));
    Value* digit = b.CreateTrunc(b.CreateURem(rest, b.getInt64(10)), b.getInt8Ty());
    b.CreateStore(b.CreateAdd(digit, b.getInt8('0')), b.CreateGEP(b.getInt8Ty(), digits, next_at));
    Value* next_rest = b.CreateUDiv(rest, b.getInt64(10));
    at->addIncoming(next_at, loop);
    rest->addIncoming(next_rest, loop);
    b.CreateCondBr(b.CreateICmpNE(next_rest, b.getInt64(0)), loop, after);
    b.SetInsertPoint(after);
    Value* sign_at = b.CreateSub(next_at, b.getInt64(1));
    b.CreateStore(b.getInt8('-'), b.CreateGEP(b.getInt8Ty(), digits, sign_at));
    Value* first = b.CreateSelect(negative, sign_at, next_at);
    return b.CreateCall(append, {buf, pos, b.CreateGEP(b.getInt8Ty(), digits, first)});
  };

  Value* pos = b.CreateCall(append, {buf, b.getInt64(0), fn->getArg(2)});
  pos = append_int(pos, fn->getArg(3));
  pos = b.CreateCall(append, {buf, pos, fn->getArg(4)});
  auto* with_y = llvm::BasicBlock::Create(context_, "with_y", fn);
  auto* finish = llvm::BasicBlock::Create(context_, "finish", fn);
  llvm::BasicBlock* without_y = b.GetInsertBlock();
  b.CreateCondBr(fn->getArg(7), with_y, finish);
  b.SetInsertPoint(with_y);
  Value* pos_y = append_int(pos, fn->getArg(5));
  pos_y = b.CreateCall(append, {buf, pos_y, fn->getArg(6)});
  llvm::BasicBlock* with_y_end = b.GetInsertBlock();
  b.CreateBr(finish);
  b.SetInsertPoint(finish);
  llvm::PHINode* end = b.CreatePHI(i64, 2, "end");
  end->addIncoming(pos, without_y);
  end->addIncoming(pos_y, with_y_end);
  b.CreateStore(b.getInt8(0), b.CreateGEP(b.getInt8Ty(), buf, end));
  Value* slot = b.CreateStructGEP(callbacks_type_, fn->getArg(1), 4);
  Value* set_error = b.CreateLoad(ptr, slot);
  auto* set_error_type = llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false);
  b.CreateCall(set_error_type, set_error, {fn->getArg(0), buf});
  b.CreateRetVoid();
  return report_fn_;
}

}  // namespace dynvm::codegen
