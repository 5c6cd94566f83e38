// CodeGenLLVM's module-level half: the module and its ABI symbols, the type mapping
// (register vs memory types), element conversions (bool, f16, bf16, casts) and the
// per-function bookkeeping that add_function drives.
#include "kernels/codegen/codegen_llvm.h"

#include <dlpack/dlpack.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <cctype>
#include <cstddef>

#include "vm/error.h"
#include "vm/kernel_abi.h"

namespace dynvm::codegen {

using llvm::Value;

CodeGenLLVM::CodeGenLLVM(llvm::LLVMContext& context, llvm::TargetMachine& tm, Target target)
    : context_(context), tm_(tm), target_(std::move(target)) {
  module_ = std::make_unique<llvm::Module>("dynvm_kernels", context_);
  module_->setTargetTriple(target_.triple);
  module_->setDataLayout(tm_.createDataLayout());
  b_ = std::make_unique<llvm::IRBuilder<>>(context_);
  // a * b + c may become one fma (as clang's -ffp-contract=on); nothing else is relaxed.
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);
  b_->setFastMathFlags(fmf);
  math_ = std::make_unique<MathLibrary>(*module_, *this);

  llvm::Type* ptr = b_->getPtrTy();
  llvm::Type* i32 = b_->getInt32Ty();
  // Mirrors DynvmRuntimeCallbacks (vm/kernel_abi.h) and DLTensor (dlpack.h).
  callbacks_type_ =
      llvm::StructType::create(context_, {i32, ptr, ptr, ptr, ptr}, "DynvmRuntimeCallbacks");
  dltensor_type_ = llvm::StructType::create(context_,
                                            {ptr, i32, i32, i32, b_->getInt8Ty(), b_->getInt8Ty(),
                                             b_->getInt16Ty(), ptr, ptr, b_->getInt64Ty()},
                                            "DLTensor");
  const llvm::DataLayout& dl = module_->getDataLayout();
  const llvm::StructLayout* t = dl.getStructLayout(dltensor_type_);
  DYNVM_INTERNAL_CHECK(t->getSizeInBytes() == sizeof(DLTensor) &&
                           t->getElementOffset(3) == offsetof(DLTensor, ndim) &&
                           t->getElementOffset(4) == offsetof(DLTensor, dtype) &&
                           t->getElementOffset(7) == offsetof(DLTensor, shape) &&
                           t->getElementOffset(9) == offsetof(DLTensor, byte_offset),
                       "DLTensor layout differs from dlpack.h");
  const llvm::StructLayout* c = dl.getStructLayout(callbacks_type_);
  DYNVM_INTERNAL_CHECK(c->getElementOffset(1) == offsetof(DynvmRuntimeCallbacks, parallel_for) &&
                           c->getElementOffset(4) == offsetof(DynvmRuntimeCallbacks, set_error),
                       "DynvmRuntimeCallbacks layout differs from vm/kernel_abi.h");

  // Set once by dynvm_library_init; each load of the library has its own copy.
  runtime_global_ = new llvm::GlobalVariable(
      *module_, ptr, /*isConstant=*/false, llvm::GlobalValue::InternalLinkage,
      llvm::ConstantPointerNull::get(b_->getPtrTy()), "dynvm.runtime");
}

CodeGenLLVM::~CodeGenLLVM() = default;

void CodeGenLLVM::add_function_attributes(llvm::Function* f) const {
  f->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) f->addFnAttr("target-features", target_.features);
  f->addFnAttr(llvm::Attribute::NoUnwind);
}

// ---- Types. ----

llvm::Type* CodeGenLLVM::value_scalar_type(vm::DType t) {
  switch (t) {
    case vm::DType::kFloat32:
    case vm::DType::kFloat16:
    case vm::DType::kBFloat16:
      return b_->getFloatTy();
    case vm::DType::kFloat64:
      return b_->getDoubleTy();
    case vm::DType::kInt8:
    case vm::DType::kUInt8:
      return b_->getInt8Ty();
    case vm::DType::kInt16:
    case vm::DType::kUInt16:
      return b_->getInt16Ty();
    case vm::DType::kInt32:
    case vm::DType::kUInt32:
      return b_->getInt32Ty();
    case vm::DType::kInt64:
    case vm::DType::kUInt64:
      return b_->getInt64Ty();
    case vm::DType::kBool:
      return b_->getInt1Ty();
    case vm::DType::kComplex64:
    case vm::DType::kComplex128:
      break;
  }
  user_error("the CPU code generator does not support element type ", vm::dtype_name(t));
}

llvm::Type* CodeGenLLVM::value_type(tir::DataType t) {
  llvm::Type* s = value_scalar_type(t.elem);
  return t.lanes == 1 ? s : llvm::FixedVectorType::get(s, static_cast<unsigned>(t.lanes));
}

llvm::Type* CodeGenLLVM::memory_type(vm::DType t) {
  if (t == vm::DType::kBool) return b_->getInt8Ty();
  if (t == vm::DType::kFloat16 || t == vm::DType::kBFloat16) return b_->getInt16Ty();
  return value_scalar_type(t);
}

llvm::Align CodeGenLLVM::element_align(vm::DType t) {
  // DLPack data is at least element-aligned; nothing more is promised for views.
  return llvm::Align(vm::dtype_size(t));
}

// ---- Element conversions. ----

namespace {

// The integer type with `bits` bits and v's lanes.
llvm::Type* int_like(llvm::IRBuilder<>& b, Value* v, unsigned bits) {
  llvm::Type* e = b.getIntNTy(bits);
  if (auto* vt = llvm::dyn_cast<llvm::VectorType>(v->getType())) {
    return llvm::VectorType::get(e, vt->getElementCount());
  }
  return e;
}

llvm::Type* float_like(llvm::IRBuilder<>& b, Value* v, llvm::Type* elem) {
  if (auto* vt = llvm::dyn_cast<llvm::VectorType>(v->getType())) {
    return llvm::VectorType::get(elem, vt->getElementCount());
  }
  return elem;
}

Value* splat_int(llvm::Type* type, uint64_t v) { return llvm::ConstantInt::get(type, v); }

}  // namespace

// Round to nearest even, with overflow to inf, subnormals and NaN kept (F. Giesen's
// float_to_half_fast3_rtne), on integer lanes: no F16C or libgcc helper needed.
Value* CodeGenLLVM::emit_f32_to_f16(Value* f) {
  llvm::IRBuilder<>& b = *b_;
  if (has_native_f16_conversion()) {
    return b.CreateBitCast(b.CreateFPTrunc(f, float_like(b, f, b.getHalfTy())), int_like(b, f, 16));
  }
  llvm::Type* i32 = int_like(b, f, 32);
  auto k = [&](uint64_t v) { return splat_int(i32, v); };
  Value* u = b.CreateBitCast(f, i32);
  Value* sign = b.CreateAnd(b.CreateLShr(u, 16), k(0x8000));
  Value* a = b.CreateAnd(u, k(0x7fffffff));
  Value* mant_odd = b.CreateAnd(b.CreateLShr(a, 13), k(1));
  Value* normal = b.CreateLShr(b.CreateAdd(b.CreateAdd(a, k(0xc8000fffu)), mant_odd), 13);
  Value* af = b.CreateBitCast(a, f->getType());
  Value* magic = llvm::ConstantFP::get(f->getType(), 0.5);  // bits 0x3f000000
  Value* subnormal = b.CreateSub(b.CreateBitCast(b.CreateFAdd(af, magic), i32), k(0x3f000000));
  Value* infnan = b.CreateSelect(b.CreateICmpUGT(a, k(0x7f800000)), k(0x7e00), k(0x7c00));
  Value* r = b.CreateSelect(b.CreateICmpULT(a, k(0x38800000)), subnormal, normal);
  r = b.CreateSelect(b.CreateICmpUGE(a, k(0x47800000)), infnan, r);
  return b.CreateTrunc(b.CreateOr(r, sign), int_like(b, f, 16));
}

Value* CodeGenLLVM::emit_f16_to_f32(Value* bits) {
  llvm::IRBuilder<>& b = *b_;
  llvm::Type* ft = float_like(b, bits, b.getFloatTy());
  if (has_native_f16_conversion()) {
    return b.CreateFPExt(b.CreateBitCast(bits, float_like(b, bits, b.getHalfTy())), ft);
  }
  llvm::Type* i32 = int_like(b, bits, 32);
  auto k = [&](uint64_t v) { return splat_int(i32, v); };
  Value* h = b.CreateZExt(bits, i32);
  Value* o = b.CreateShl(b.CreateAnd(h, k(0x7fff)), 13);
  Value* exp = b.CreateAnd(o, k(0x0f800000));
  o = b.CreateAdd(o, k(0x38000000));
  Value* infnan = b.CreateAdd(o, k(0x38000000));
  Value* magic = b.CreateBitCast(k(0x38800000), ft);
  Value* subnormal =
      b.CreateBitCast(b.CreateFSub(b.CreateBitCast(b.CreateAdd(o, k(0x00800000)), ft), magic), i32);
  Value* r = b.CreateSelect(b.CreateICmpEQ(exp, k(0)), subnormal, o);
  r = b.CreateSelect(b.CreateICmpEQ(exp, k(0x0f800000)), infnan, r);
  r = b.CreateOr(r, b.CreateShl(b.CreateAnd(h, k(0x8000)), 16));
  return b.CreateBitCast(r, ft);
}

Value* CodeGenLLVM::emit_f32_to_bf16(Value* f) {
  llvm::IRBuilder<>& b = *b_;
  llvm::Type* i32 = int_like(b, f, 32);
  auto k = [&](uint64_t v) { return splat_int(i32, v); };
  Value* u = b.CreateBitCast(f, i32);
  Value* lsb = b.CreateAnd(b.CreateLShr(u, 16), k(1));
  Value* rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(u, k(0x7fff)), lsb), 16);
  Value* quiet_nan = b.CreateOr(b.CreateLShr(u, 16), k(0x40));
  Value* is_nan = b.CreateICmpUGT(b.CreateAnd(u, k(0x7fffffff)), k(0x7f800000));
  return b.CreateTrunc(b.CreateSelect(is_nan, quiet_nan, rounded), int_like(b, f, 16));
}

Value* CodeGenLLVM::emit_bf16_to_f32(Value* bits) {
  llvm::IRBuilder<>& b = *b_;
  Value* w = b.CreateShl(b.CreateZExt(bits, int_like(b, bits, 32)), 16);
  return b.CreateBitCast(w, float_like(b, bits, b.getFloatTy()));
}

Value* CodeGenLLVM::from_memory(Value* v, vm::DType t) {
  switch (t) {
    case vm::DType::kBool:
      return b_->CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    case vm::DType::kFloat16:
      return emit_f16_to_f32(v);
    case vm::DType::kBFloat16:
      return emit_bf16_to_f32(v);
    default:
      return v;
  }
}

Value* CodeGenLLVM::to_memory(Value* v, vm::DType t) {
  switch (t) {
    case vm::DType::kBool:
      return b_->CreateZExt(v, int_like(*b_, v, 8));
    case vm::DType::kFloat16:
      return emit_f32_to_f16(v);
    case vm::DType::kBFloat16:
      return emit_f32_to_bf16(v);
    default:
      return v;
  }
}

Value* CodeGenLLVM::emit_cast(Value* v, tir::DataType from, tir::DataType to) {
  llvm::IRBuilder<>& b = *b_;
  if (from.elem == to.elem) return v;
  llvm::Type* dst = value_type(to.with_lanes(from.lanes));
  if (to.is_bool()) {
    if (from.is_float()) return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0));
    return b.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  Value* r = nullptr;
  if (from.is_bool()) {
    r = to.is_float() ? b.CreateUIToFP(v, dst) : b.CreateZExt(v, dst);
  } else if (from.is_float() && to.is_float()) {
    r = b.CreateFPCast(v, dst);  // fpext / fptrunc / nothing (f16 registers are f32)
  } else if (from.is_float()) {
    // Saturating: NaN -> 0, out of range -> the type's min/max (no poison).
    auto id = to.is_unsigned_int() ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat;
    r = b.CreateIntrinsic(id, {dst, v->getType()}, {v});
  } else if (to.is_float()) {
    r = from.is_unsigned_int() ? b.CreateUIToFP(v, dst) : b.CreateSIToFP(v, dst);
  } else {
    r = b.CreateIntCast(v, dst, /*isSigned=*/from.is_signed_int());
  }
  // Values of the storage-only float types are rounded to their precision here, so that
  // a cast to f16 means the same in registers as after a store and a load.
  if (to.elem == vm::DType::kFloat16) r = emit_f16_to_f32(emit_f32_to_f16(r));
  if (to.elem == vm::DType::kBFloat16) r = emit_bf16_to_f32(emit_f32_to_bf16(r));
  return r;
}

// ---- Buffers and variables. ----

Value* CodeGenLLVM::buffer_base(const tir::Buffer& buffer) {
  auto it = fs_.buffers.find(&buffer);
  DYNVM_INTERNAL_CHECK(it != fs_.buffers.end(), "buffer ", buffer.name(),
                       " is used but is neither a parameter, allocated, nor captured");
  return it->second;
}

Value* CodeGenLLVM::element_address(const tir::Buffer& buffer, Value* index) {
  return b_->CreateGEP(memory_type(buffer.dtype()), buffer_base(buffer), index);
}

Value* CodeGenLLVM::lane_indices(Value* base, Value* stride, int lanes) {
  std::vector<llvm::Constant*> iota;
  for (int i = 0; i < lanes; ++i) iota.push_back(b_->getInt64(i));
  auto ec = llvm::ElementCount::getFixed(static_cast<unsigned>(lanes));
  Value* step = b_->CreateMul(llvm::ConstantVector::get(iota), b_->CreateVectorSplat(ec, stride));
  return b_->CreateAdd(b_->CreateVectorSplat(ec, base), step);
}

Value* CodeGenLLVM::active_mask(const arith::Expr& active, int lanes) {
  std::vector<llvm::Constant*> iota;
  for (int i = 0; i < lanes; ++i) iota.push_back(b_->getInt64(i));
  auto ec = llvm::ElementCount::getFixed(static_cast<unsigned>(lanes));
  return b_->CreateICmpSLT(llvm::ConstantVector::get(iota),
                           b_->CreateVectorSplat(ec, emit_index(active)));
}

int64_t CodeGenLLVM::wide_stride(const arith::Expr& stride, int lanes) {
  constexpr int64_t kMaxWideStride = 4;
  if (!stride.is_int_imm()) return 0;
  const int64_t s = stride.int_value();
  return s >= 2 && s <= kMaxWideStride && s * lanes <= 64 ? s : 0;
}

Value* CodeGenLLVM::wide_mask(int64_t s, int lanes, const arith::Expr& active, bool lanes_only) {
  const int64_t n = s * lanes;
  std::vector<llvm::Constant*> iota, own;
  for (int64_t j = 0; j < n; ++j) {
    iota.push_back(b_->getInt64(static_cast<uint64_t>(j)));
    const bool take = !lanes_only || j % s == 0;
    own.push_back(b_->getInt1(take && (active.defined() || j <= s * (lanes - 1))));
  }
  Value* mask = llvm::ConstantVector::get(own);
  if (!active.defined()) return mask;
  // Element j belongs to a lane below `active` when j <= s * (active - 1).
  auto ec = llvm::ElementCount::getFixed(static_cast<unsigned>(n));
  Value* last = b_->CreateMul(emit_index(active), b_->getInt64(static_cast<uint64_t>(s)));
  last = b_->CreateSub(last, b_->getInt64(static_cast<uint64_t>(s)));
  Value* in_range =
      b_->CreateICmpSLE(llvm::ConstantVector::get(iota), b_->CreateVectorSplat(ec, last));
  return b_->CreateAnd(in_range, mask);
}

bool CodeGenLLVM::in_stack_slot(const tir::Buffer& buffer, const arith::Expr& index,
                                const arith::Expr& stride, int lanes) {
  auto it = fs_.buffers.find(&buffer);
  if (it == fs_.buffers.end() || !llvm::isa<llvm::AllocaInst>(it->second)) return false;
  const arith::Expr numel = buffer.numel();
  if (!index.is_int_imm() || !stride.is_int_imm() || !numel.is_int_imm()) return false;
  const int64_t first = index.int_value();
  const int64_t last = first + stride.int_value() * (lanes - 1);
  return std::min(first, last) >= 0 && std::max(first, last) < numel.int_value();
}

void CodeGenLLVM::bind_var(const arith::Expr& var, Value* value) {
  DYNVM_INTERNAL_CHECK(var.kind() == arith::ExprKind::kVar, "binding a non-variable");
  fs_.vars[var->var_id] = value;
}

void CodeGenLLVM::unbind_var(const arith::Expr& var) { fs_.vars.erase(var->var_id); }

Value* CodeGenLLVM::runtime_callback(int field) {
  Value* slot = b_->CreateStructGEP(callbacks_type_, fs_.runtime, static_cast<unsigned>(field));
  return b_->CreateLoad(field == 0 ? static_cast<llvm::Type*>(b_->getInt32Ty()) : b_->getPtrTy(),
                        slot);
}

llvm::Constant* CodeGenLLVM::string_constant(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  llvm::Constant* c = b_->CreateGlobalStringPtr(s, "dynvm.str", 0, module_.get());
  strings_[s] = c;
  return c;
}

// ---- Functions and the module. ----

void CodeGenLLVM::add_function(const tir::LoweredFunc& f) {
  const std::string& name = f.func.name;
  DYNVM_INTERNAL_CHECK(!name.empty(), "a kernel without a name");
  // A C identifier: the symbol is looked up by this name, and internal symbols (which
  // contain '.') can never collide with it.
  bool identifier = !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) identifier &= std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  if (!identifier) user_error("kernel name '", name, "' is not a C identifier");
  if (std::find(kernel_names_.begin(), kernel_names_.end(), name) != kernel_names_.end() ||
      name.rfind("dynvm_", 0) == 0) {
    user_error("kernel name '", name, "' is used twice or reserved in one library");
  }
  kernel_names_.push_back(name);
  DYNVM_INTERNAL_CHECK(f.func.body.defined(), "kernel ", name, " has no body");

  lowered_ = &f;
  region_fns_.clear();
  closure_types_.clear();
  region_calls_.assign(f.regions.size(), 0);
  count_region_calls(f.func.body);
  llvm::Type* i64 = b_->getInt64Ty();
  auto* region_type = llvm::FunctionType::get(b_->getInt32Ty(), {i64, i64, b_->getPtrTy()}, false);
  for (const tir::ParallelRegion& r : f.regions) {
    std::vector<llvm::Type*> fields{b_->getPtrTy()};  // the call's ctx
    fields.insert(fields.end(), r.captured_vars.size(), i64);
    fields.insert(fields.end(), r.captured_buffers.size(), b_->getPtrTy());
    closure_types_.push_back(llvm::StructType::create(context_, fields, name + ".closure"));
    auto* fn = llvm::Function::Create(region_type, llvm::Function::InternalLinkage,
                                      name + "." + r.name, module_.get());
    add_function_attributes(fn);
    region_fns_.push_back(fn);
  }
  emit_kernel_entry();
  // Regions no ParallelCall refers to were never emitted: drop their declarations.
  for (llvm::Function* fn : region_fns_) {
    if (fn->empty()) fn->eraseFromParent();
  }
  region_fns_.clear();
  lowered_ = nullptr;
}

void CodeGenLLVM::count_region_calls(const tir::Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case tir::StmtKind::kParallelCall:
      if (s->region < region_calls_.size()) {
        ++region_calls_[s->region];
        count_region_calls(lowered_->regions[s->region].body);
      }
      return;
    case tir::StmtKind::kSeq:
      for (const tir::Stmt& c : s->seq) count_region_calls(c);
      return;
    case tir::StmtKind::kIf:
      count_region_calls(s->then_case);
      count_region_calls(s->else_case);
      return;
    default:
      count_region_calls(s->body);
      return;
  }
}

void CodeGenLLVM::emit_abi_symbols() {
  llvm::IRBuilder<>& b = *b_;
  auto* version = llvm::Function::Create(llvm::FunctionType::get(b.getInt32Ty(), false),
                                         llvm::Function::ExternalLinkage,
                                         "dynvm_kernel_abi_version", module_.get());
  add_function_attributes(version);
  b.SetInsertPoint(llvm::BasicBlock::Create(context_, "entry", version));
  b.CreateRet(b.getInt32(DYNVM_KERNEL_ABI_VERSION));

  auto* init =
      llvm::Function::Create(llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy()}, false),
                             llvm::Function::ExternalLinkage, "dynvm_library_init", module_.get());
  add_function_attributes(init);
  llvm::Value* runtime = init->getArg(0);
  auto* entry = llvm::BasicBlock::Create(context_, "entry", init);
  auto* check = llvm::BasicBlock::Create(context_, "check_version", init);
  auto* accept = llvm::BasicBlock::Create(context_, "accept", init);
  auto* refuse = llvm::BasicBlock::Create(context_, "refuse", init);
  b.SetInsertPoint(entry);
  b.CreateCondBr(b.CreateIsNull(runtime), refuse, check);
  b.SetInsertPoint(check);
  Value* v = b.CreateLoad(b.getInt32Ty(), b.CreateStructGEP(callbacks_type_, runtime, 0));
  b.CreateCondBr(b.CreateICmpEQ(v, b.getInt32(DYNVM_KERNEL_ABI_VERSION)), accept, refuse);
  b.SetInsertPoint(accept);
  b.CreateStore(runtime, runtime_global_);
  b.CreateRet(b.getInt32(0));
  b.SetInsertPoint(refuse);
  b.CreateRet(b.getInt32(1));
}

std::unique_ptr<llvm::Module> CodeGenLLVM::finish() {
  emit_abi_symbols();
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(*module_, &os)) {
    os.flush();
    internal_error(__FILE__, __LINE__, "generated LLVM IR does not verify: " + errors);
  }
  return std::move(module_);
}

}  // namespace dynvm::codegen
