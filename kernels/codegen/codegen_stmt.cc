// Statements: counted loops with llvm.loop metadata, ifs, stores (contiguous, broadcast,
// scatter), allocations (stack for small local buffers, the runtime's workspace otherwise),
// index lets, and parallel calls, each of which runs an outlined ParallelRegion through
// the runtime's parallel_for with a closure of the region's captured variables and buffers.
#include <llvm/IR/Constants.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Metadata.h>

#include <algorithm>

#include "kernels/codegen/codegen_llvm.h"
#include "kernels/tir/functor.h"
#include "vm/error.h"

namespace dynvm::codegen {

using llvm::Value;

namespace {

// Local buffers larger than this go to the workspace: worker threads have small stacks.
constexpr int64_t kMaxStackBytes = 64 * 1024;

// The buffers a loop body allocates anywhere (outermost first) at a size that none of the
// variables the body binds (the loop's own, inner loops', lets') changes.
class InvariantAllocations : public tir::StmtMutator {
 public:
  explicit InvariantAllocations(const arith::Expr& loop_var) { bound_.push_back(loop_var->var_id); }
  std::vector<const tir::Buffer*> found;

 protected:
  tir::Stmt visit_for(const tir::Stmt& s) override { return scoped(s->loop_var, s); }
  tir::Stmt visit_let_stmt(const tir::Stmt& s) override { return scoped(s->let_var, s); }
  tir::Stmt visit_allocate(const tir::Stmt& s) override {
    const arith::Expr numel = s->buffer->numel();
    if (std::none_of(bound_.begin(), bound_.end(),
                     [&](arith::VarId id) { return arith::uses_var(numel, id); })) {
      found.push_back(s->buffer.get());
    }
    mutate_stmt(s->body);
    return s;
  }

 private:
  tir::Stmt scoped(const arith::Expr& var, const tir::Stmt& s) {
    bound_.push_back(var->var_id);
    mutate_stmt(s->body);
    bound_.pop_back();
    return s;
  }
  std::vector<arith::VarId> bound_;
};

// Binds v to [min, min + extent - 1] in `an` when that range is meaningful; the analyzer
// only serves proofs, so a range it cannot take is simply not recorded.
void bind_loop_range(arith::Analyzer& an, const arith::Expr& var, const arith::Expr& min,
                     const arith::Expr& extent) {
  arith::Var v(var);
  try {
    if (min.is_int_imm() && extent.is_int_imm()) {
      if (extent.int_value() >= 1)
        an.bind(v, min.int_value(), min.int_value() + extent.int_value() - 1);
    } else {
      an.bind(v, min, min + extent - arith::make_int(1));
    }
  } catch (const UserError&) {
    an.unbind(v);
  }
}

}  // namespace

void CodeGenLLVM::emit_stmt(const tir::Stmt& s) {
  using tir::StmtKind;
  switch (s.kind()) {
    case StmtKind::kFor:
      emit_for(s);
      return;
    case StmtKind::kSeq:
      for (const tir::Stmt& c : s->seq) emit_stmt(c);
      return;
    case StmtKind::kIf:
      emit_if(s);
      return;
    case StmtKind::kStore:
      emit_store(s);
      return;
    case StmtKind::kAllocate:
      emit_allocate(s);
      return;
    case StmtKind::kLetIndex:
      bind_var(s->let_var, emit_cast(emit_expr(s->value), s->value.type(), tir::i64()));
      emit_stmt(s->body);
      unbind_var(s->let_var);
      return;
    case StmtKind::kParallelCall:
      emit_parallel_call(s);
      return;
    case StmtKind::kNop:
      return;
  }
  internal_error(__FILE__, __LINE__, "unknown statement kind");
}

void CodeGenLLVM::emit_for(const tir::Stmt& s) {
  if (s->for_kind == tir::ForKind::kGpuBlock || s->for_kind == tir::ForKind::kGpuThread) {
    internal_error(__FILE__, __LINE__,
                   str_cat("GPU-bound loop in kernel ", lowered_->func.name,
                           " given to the CPU code generator"));
  }
  if (s->extent.is_int_imm() && s->extent.int_value() <= 0) return;
  llvm::LLVMContext& ctx = context_;
  std::vector<llvm::Metadata*> props;
  // Leftovers of the TIR passes: an unroll or vectorize request the passes did not carry
  // out becomes a hint to LLVM's own unroller / vectorizer.
  if (s->for_kind == tir::ForKind::kUnrolled && s->extent.is_int_imm()) {
    props.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.unroll.full")}));
  }
  if (s->for_kind == tir::ForKind::kVectorized) {
    props.push_back(llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.vectorize.enable"),
                                            llvm::ConstantAsMetadata::get(b_->getTrue())}));
  }
  Value* begin = emit_index(s->min);
  Value* end = b_->CreateNSWAdd(begin, emit_index(s->extent));
  bind_loop_range(fs_.analyzer, s->loop_var, s->min, s->extent);
  if (s->for_kind == tir::ForKind::kSerial) {
    emit_loop_hoisting_workspaces(s->loop_var, begin, end, s->body, props);
  } else {
    emit_counted_loop(
        s->loop_var, begin, end, [&] { emit_stmt(s->body); }, props);
  }
  fs_.analyzer.unbind(arith::Var(s->loop_var));
}

void CodeGenLLVM::emit_loop_hoisting_workspaces(const arith::Expr& var, Value* begin, Value* end,
                                                const tir::Stmt& body,
                                                const std::vector<llvm::Metadata*>& properties) {
  // The workspaces the body allocates at a size no iteration changes (a compute_at
  // stage's buffer at its consumer's row loop, also where loop_partition split that loop
  // in three): allocated once around the loop, one per chunk in a parallel region, not
  // once per iteration. Each iteration writes what it reads of them, as it would of a
  // fresh allocation.
  InvariantAllocations invariant(var);
  invariant.mutate_stmt(body);
  std::vector<Value*> hoisted;
  for (const tir::Buffer* buffer : invariant.found) {
    if (on_stack(*buffer) || fs_.buffers.count(buffer) != 0) continue;
    hoisted.push_back(allocate_workspace(*buffer, /*at_least_zero=*/true));
  }
  emit_counted_loop(
      var, begin, end, [&] { emit_stmt(body); }, properties);
  for (size_t k = hoisted.size(); k-- > 0;) free_workspace(hoisted[k]);
}

void CodeGenLLVM::emit_counted_loop(const arith::Expr& var, Value* begin, Value* end,
                                    const std::function<void()>& body,
                                    const std::vector<llvm::Metadata*>& properties) {
  llvm::IRBuilder<>& b = *b_;
  llvm::LLVMContext& ctx = context_;
  llvm::BasicBlock* preheader = b.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx, "loop", fs_.fn);
  auto* exit = llvm::BasicBlock::Create(ctx, "loop_exit", fs_.fn);
  auto* cb = llvm::dyn_cast<llvm::ConstantInt>(begin);
  auto* ce = llvm::dyn_cast<llvm::ConstantInt>(end);
  if (cb != nullptr && ce != nullptr && cb->getSExtValue() < ce->getSExtValue()) {
    b.CreateBr(loop);
  } else {
    b.CreateCondBr(b.CreateICmpSLT(begin, end), loop, exit);
  }
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2, "i");
  i->addIncoming(begin, preheader);
  bind_var(var, i);
  body();
  unbind_var(var);
  Value* next = b.CreateNSWAdd(i, b.getInt64(1));
  llvm::BranchInst* back = b.CreateCondBr(b.CreateICmpSLT(next, end), loop, exit);
  i->addIncoming(next, b.GetInsertBlock());

  std::vector<llvm::Metadata*> ops{
      nullptr, llvm::MDNode::get(ctx, {llvm::MDString::get(ctx, "llvm.loop.mustprogress")})};
  ops.insert(ops.end(), properties.begin(), properties.end());
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx, ops);
  id->replaceOperandWith(0, id);
  back->setMetadata(llvm::LLVMContext::MD_loop, id);
  b.SetInsertPoint(exit);
}

void CodeGenLLVM::emit_if(const tir::Stmt& s) {
  llvm::IRBuilder<>& b = *b_;
  Value* cond = emit_index(s->condition);
  auto* then_bb = llvm::BasicBlock::Create(context_, "then", fs_.fn);
  auto* merge = llvm::BasicBlock::Create(context_, "endif", fs_.fn);
  llvm::BasicBlock* else_bb =
      s->else_case.defined() ? llvm::BasicBlock::Create(context_, "else", fs_.fn) : merge;
  b.CreateCondBr(cond, then_bb, else_bb);
  b.SetInsertPoint(then_bb);
  emit_stmt(s->then_case);
  b.CreateBr(merge);
  if (s->else_case.defined()) {
    b.SetInsertPoint(else_bb);
    emit_stmt(s->else_case);
    b.CreateBr(merge);
  }
  b.SetInsertPoint(merge);
}

void CodeGenLLVM::emit_store(const tir::Stmt& s) {
  llvm::IRBuilder<>& b = *b_;
  const tir::Buffer& buffer = *s->buffer;
  DYNVM_INTERNAL_CHECK(s->indices.size() == 1 || (s->indices.empty() && buffer.shape().empty()),
                       "store to ", buffer.name(), " is not flattened (", s->indices.size(),
                       " indices)");
  Value* index = s->indices.empty() ? b.getInt64(0) : emit_index(s->indices[0]);
  tir::DataType t = s->value.type();
  Value* value = to_memory(emit_expr(s->value), buffer.dtype());
  llvm::Align align = element_align(buffer.dtype());
  if (int64_t step = t.lanes > 1 ? wide_stride(s->stride, t.lanes) : 0) {
    // The lanes spread s apart over a contiguous range, stored with a mask of their own
    // elements (and of the active lanes).
    std::vector<int> spread;
    for (int64_t j = 0; j < step * t.lanes; ++j) {
      spread.push_back(j % step == 0 ? static_cast<int>(j / step) : -1);
    }
    b.CreateMaskedStore(b.CreateShuffleVector(value, spread), element_address(buffer, index), align,
                        wide_mask(step, t.lanes, s->active, true));
  } else if (t.lanes > 1 && s->active.defined()) {
    emit_masked_store(s, index, value);
  } else if (t.lanes == 1 || (s->stride.is_int_imm() && s->stride.int_value() == 1)) {
    b.CreateAlignedStore(value, element_address(buffer, index), align);
  } else if (s->stride.is_int_imm() && s->stride.int_value() == 0) {
    // Every lane writes the same element: the last one wins, as in a scalar loop.
    b.CreateAlignedStore(b.CreateExtractElement(value, static_cast<uint64_t>(t.lanes - 1)),
                         element_address(buffer, index), align);
  } else if (s->stride.is_int_imm() && on_stack(buffer)) {
    // Into a stack slot (a tile transposed through registers, kernels/ops/conv_blocked.cc):
    // one scalar store per lane, which LLVM promotes with the slot; a scatter pins it in
    // memory (to_blocked's 16 x 16 tiles ran at a tenth of a copy's speed).
    Value* stride = b.getInt64(static_cast<uint64_t>(s->stride.int_value()));
    for (int64_t lane = 0; lane < t.lanes; ++lane) {
      Value* at = b.CreateAdd(index, b.CreateMul(stride, b.getInt64(static_cast<uint64_t>(lane))));
      b.CreateAlignedStore(b.CreateExtractElement(value, static_cast<uint64_t>(lane)),
                           element_address(buffer, at), align);
    }
  } else {
    Value* ptrs = element_address(buffer, lane_indices(index, emit_index(s->stride), t.lanes));
    b.CreateMaskedScatter(value, ptrs, align);
  }
}

// A vector store of its active lanes only. Into a stack slot that holds every lane (a
// register tile), it writes them all, the inactive ones with their old values: plain loads
// and stores that LLVM keeps in registers, where masked intrinsics would pin it in memory.
void CodeGenLLVM::emit_masked_store(const tir::Stmt& s, Value* index, Value* value) {
  llvm::IRBuilder<>& b = *b_;
  const tir::Buffer& buffer = *s->buffer;
  const int lanes = s->value.type().lanes;
  DYNVM_INTERNAL_CHECK(s->stride.is_int_imm() && s->stride.int_value() != 0, "masked store to ",
                       buffer.name(), " with a stride that is not a nonzero constant");
  llvm::Align align = element_align(buffer.dtype());
  Value* mask = active_mask(s->active, lanes);
  const bool contiguous = s->stride.int_value() == 1;
  Value* ptr = contiguous
                   ? element_address(buffer, index)
                   : element_address(buffer, lane_indices(index, emit_index(s->stride), lanes));
  if (contiguous && in_stack_slot(buffer, s->indices[0], s->stride, lanes)) {
    Value* old = b.CreateAlignedLoad(value->getType(), ptr, align);
    b.CreateAlignedStore(b.CreateSelect(mask, value, old), ptr, align);
  } else if (contiguous) {
    b.CreateMaskedStore(value, ptr, align, mask);
  } else {
    b.CreateMaskedScatter(value, ptr, align, mask);
  }
}

bool CodeGenLLVM::on_stack(const tir::Buffer& buffer) const {
  const arith::Expr numel = buffer.numel();
  const auto elem_bytes = static_cast<int64_t>(vm::dtype_size(buffer.dtype()));
  return buffer.scope() == tir::BufferScope::kLocal && numel.is_int_imm() &&
         numel.int_value() * elem_bytes <= kMaxStackBytes;
}

void CodeGenLLVM::emit_allocate(const tir::Stmt& s) {
  const tir::Buffer& buffer = *s->buffer;
  if (fs_.buffers.count(&buffer) != 0) {  // hoisted out of the loop around it
    emit_stmt(s->body);
    return;
  }
  if (on_stack(buffer)) {
    // In the entry block, so a buffer inside a loop is one stack slot, not one per trip.
    llvm::IRBuilder<> entry(fs_.entry, fs_.entry->begin());
    auto* array = llvm::ArrayType::get(
        memory_type(buffer.dtype()),
        static_cast<uint64_t>(std::max<int64_t>(buffer.numel().int_value(), 1)));
    llvm::AllocaInst* slot = entry.CreateAlloca(array, nullptr, buffer.name());
    slot->setAlignment(llvm::Align(64));
    fs_.buffers[&buffer] = slot;
    emit_stmt(s->body);
    fs_.buffers.erase(&buffer);
    return;
  }
  Value* ptr = allocate_workspace(buffer, /*at_least_zero=*/false);
  emit_stmt(s->body);
  free_workspace(ptr);
}

// The workspace: symbolic or large sizes. Freed on every exit, errors included.
Value* CodeGenLLVM::allocate_workspace(const tir::Buffer& buffer, bool at_least_zero) {
  llvm::IRBuilder<>& b = *b_;
  auto elem_bytes = static_cast<int64_t>(vm::dtype_size(buffer.dtype()));
  Value* bytes =
      b.CreateNSWMul(emit_index(buffer.numel()), b.getInt64(static_cast<uint64_t>(elem_bytes)));
  // A hoisted buffer's size is computed even where its loop runs no iteration.
  if (at_least_zero) {
    bytes = b.CreateSelect(b.CreateICmpSLT(bytes, b.getInt64(0)), b.getInt64(0), bytes);
  }
  auto* alloc_type = llvm::FunctionType::get(b.getPtrTy(), {b.getPtrTy(), b.getInt64Ty()}, false);
  Value* ptr = b.CreateCall(alloc_type, runtime_callback(2), {fs_.ctx, bytes}, buffer.name());
  return_on_failure(b.CreateIsNotNull(ptr), b.getInt32(kStatusOutOfMemory), [&] {
    report_numbers(str_cat(lowered_->func.name, ": cannot allocate "), bytes,
                   str_cat(" bytes of workspace for ", buffer.name()), nullptr, "");
  });
  fs_.buffers[&buffer] = ptr;
  fs_.live_workspaces.push_back(ptr);
  fs_.workspace_buffers.push_back(&buffer);
  return ptr;
}

void CodeGenLLVM::free_workspace(Value* ptr) {
  llvm::IRBuilder<>& b = *b_;
  DYNVM_INTERNAL_CHECK(!fs_.live_workspaces.empty() && fs_.live_workspaces.back() == ptr,
                       "workspaces freed out of order");
  fs_.live_workspaces.pop_back();
  fs_.buffers.erase(fs_.workspace_buffers.back());
  fs_.workspace_buffers.pop_back();
  auto* free_type = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy()}, false);
  b.CreateCall(free_type, runtime_callback(3), {fs_.ctx, ptr});
}

void CodeGenLLVM::emit_parallel_call(const tir::Stmt& s) {
  llvm::IRBuilder<>& b = *b_;
  size_t index = s->region;
  DYNVM_INTERNAL_CHECK(index < lowered_->regions.size(), "parallel call of region ", index,
                       " but kernel ", lowered_->func.name, " has ", lowered_->regions.size());
  const tir::ParallelRegion& region = lowered_->regions[index];
  if (region_fns_[index]->empty()) emit_region(index, s->extent);

  llvm::StructType* type = closure_types_[index];
  llvm::IRBuilder<> entry(fs_.entry, fs_.entry->begin());
  Value* closure = entry.CreateAlloca(type, nullptr, region.name + ".closure");
  b.CreateStore(fs_.ctx, b.CreateStructGEP(type, closure, 0));
  unsigned field = 1;
  for (const arith::Expr& v : region.captured_vars) {
    b.CreateStore(emit_index(v), b.CreateStructGEP(type, closure, field++));
  }
  for (const tir::BufferRef& buf : region.captured_buffers) {
    b.CreateStore(buffer_base(*buf), b.CreateStructGEP(type, closure, field++));
  }
  Value* extent = emit_index(s->extent);
  // Chunks of at least kMinParallelChunkWork (stores and loads): a call with less work than two
  // chunks runs on the calling thread (the runtime runs a range no longer than the grain inline).
  // Above that, TBB's partitioner sizes the chunks.
  Value* grain = emit_index(
      arith::max(arith::make_int(1), arith::floordiv(arith::make_int(tir::kMinParallelChunkWork),
                                                     arith::max(region.work_per_iteration, 1))));
  auto* pf_type = llvm::FunctionType::get(
      b.getInt32Ty(),
      {b.getPtrTy(), b.getInt64Ty(), b.getInt64Ty(), b.getInt64Ty(), b.getPtrTy(), b.getPtrTy()},
      false);
  Value* status =
      b.CreateCall(pf_type, runtime_callback(1),
                   {fs_.ctx, b.getInt64(0), extent, grain, region_fns_[index], closure});
  // The region reported its error already; pass its status up.
  return_on_failure(b.CreateICmpEQ(status, b.getInt32(0)), status, nullptr);
}

void CodeGenLLVM::emit_region(size_t index, const arith::Expr& extent) {
  const tir::ParallelRegion& region = lowered_->regions[index];
  llvm::IRBuilder<>& b = *b_;
  llvm::IRBuilderBase::InsertPoint saved_ip = b.saveIP();
  FunctionState caller = std::move(fs_);
  fs_ = FunctionState{};
  // Facts about the caller's variables hold in the region too when it has one call site:
  // it sees the same values. Otherwise only the kernel-wide facts do.
  bool one_site = region_calls_[index] == 1;
  fs_.analyzer = one_site ? caller.analyzer : kernel_analyzer_;
  fs_.fn = region_fns_[index];
  fs_.entry = llvm::BasicBlock::Create(context_, "entry", fs_.fn);
  b.SetInsertPoint(fs_.entry);
  fs_.runtime = b.CreateLoad(b.getPtrTy(), runtime_global_, "runtime");
  Value* closure = fs_.fn->getArg(2);
  llvm::StructType* type = closure_types_[index];
  fs_.ctx = b.CreateLoad(b.getPtrTy(), b.CreateStructGEP(type, closure, 0), "ctx");
  unsigned field = 1;
  for (const arith::Expr& v : region.captured_vars) {
    bind_var(v, b.CreateLoad(b.getInt64Ty(), b.CreateStructGEP(type, closure, field++), v->name));
  }
  for (const tir::BufferRef& buf : region.captured_buffers) {
    fs_.buffers[buf.get()] =
        b.CreateLoad(b.getPtrTy(), b.CreateStructGEP(type, closure, field++), buf->name());
  }
  if (one_site) {
    bind_loop_range(fs_.analyzer, region.loop_var, arith::make_int(0), extent);
  } else {
    fs_.analyzer.bind(arith::Var(region.loop_var), 0, arith::kPosInf);
  }
  emit_loop_hoisting_workspaces(region.loop_var, fs_.fn->getArg(0), fs_.fn->getArg(1), region.body,
                                {});
  b.CreateRet(b.getInt32(0));
  fs_ = std::move(caller);
  b.restoreIP(saved_ip);
}

}  // namespace dynvm::codegen
