// TIR statements, buffers and functions: loop nests over buffers, the form every kernel
// takes between TE lowering and code generation. Before storage flattening a buffer access
// has one index per dim; after it, exactly one flat (row-major) index.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/tir/expr.h"

namespace dynvm::tir {

enum class BufferScope : uint8_t {
  kGlobal,     // a kernel argument (DLTensor data)
  kLocal,      // a small, statically sized scratch array on the stack (register tiles)
  kWorkspace,  // scratch from the runtime's workspace_alloc (large or symbolic size)
};

// A named region of memory with an element type and a (possibly symbolic) shape.
// Identity is the object: two Buffers with the same name are different buffers.
class Buffer {
 public:
  Buffer(std::string name, vm::DType dtype, std::vector<arith::Expr> shape,
         BufferScope scope = BufferScope::kGlobal);
  const std::string& name() const { return name_; }
  vm::DType dtype() const { return dtype_; }
  const std::vector<arith::Expr>& shape() const { return shape_; }
  BufferScope scope() const { return scope_; }
  // Row-major strides (in elements) and element count, as arith expressions.
  std::vector<arith::Expr> strides() const;
  arith::Expr numel() const;

 private:
  std::string name_;
  vm::DType dtype_;
  std::vector<arith::Expr> shape_;
  BufferScope scope_;
};
using BufferRef = std::shared_ptr<const Buffer>;

enum class ForKind : uint8_t {
  kSerial,
  kParallel,    // iterations run via the runtime's parallel_for (outlined by a pass)
  kVectorized,  // constant extent; becomes vector code (vectorize pass)
  kUnrolled,    // constant extent; replicated (unroll pass)
  kGpuBlock,    // bound to blockIdx.{x,y,z}  (thread_axis says which)
  kGpuThread,   // bound to threadIdx.{x,y,z}
};
const char* for_kind_name(ForKind k);

enum class StmtKind : uint8_t {
  kFor,       // for loop_var in [min, min + extent)
  kSeq,       // children in order
  kIf,        // if condition (arith, boolean) then_case [else else_case]
  kStore,     // buffer[indices] = value; value lanes > 1: lane l writes index + l * stride
  kAllocate,  // buffer lives for body
  kLetIndex,  // let var = int64(value) in body (the var may appear in index expressions)
  kParallelCall,  // run regions[region] over [0, extent) through the runtime's parallel_for
  kNop,
};

struct StmtNode;

class Stmt {
 public:
  Stmt() = default;
  explicit Stmt(std::shared_ptr<const StmtNode> node) : node_(std::move(node)) {}
  bool defined() const { return node_ != nullptr; }
  const StmtNode* operator->() const { return node_.get(); }
  const StmtNode& operator*() const { return *node_; }
  const StmtNode* get() const { return node_.get(); }
  StmtKind kind() const;

 private:
  std::shared_ptr<const StmtNode> node_;
};

struct StmtNode {
  StmtKind kind;
  // kFor
  arith::Expr loop_var;  // a kVar
  arith::Expr min;
  arith::Expr extent;
  ForKind for_kind = ForKind::kSerial;
  int thread_axis = 0;  // 0, 1, 2 = x, y, z for GPU binds
  // kIf
  arith::Expr condition;
  Stmt then_case;
  Stmt else_case;  // may be undefined
  // kStore
  BufferRef buffer;  // also kAllocate
  std::vector<arith::Expr> indices;
  arith::Expr stride;  // vector stores only
  arith::Expr active;  // vector stores: only lanes [0, active) write; undefined: every lane
  Expr value;          // also kLetIndex's value
  // kLetIndex
  arith::Expr let_var;  // a kVar
  // kFor, kAllocate, kLetIndex
  Stmt body;
  // kSeq
  std::vector<Stmt> seq;
  // kParallelCall (extent in `extent`)
  size_t region = 0;
};

Stmt make_for(arith::Var var, arith::Expr min, arith::Expr extent, ForKind kind, Stmt body,
              int thread_axis = 0);
Stmt make_seq(std::vector<Stmt> stmts);  // flattens nested seqs, drops nops
Stmt make_if(arith::Expr condition, Stmt then_case, Stmt else_case = Stmt());
Stmt make_store(BufferRef buffer, std::vector<arith::Expr> indices, Expr value);
// `active` (optional): the number of lanes that write (StmtNode::active).
Stmt make_vector_store(BufferRef buffer, arith::Expr flat_base, arith::Expr stride, Expr value,
                       arith::Expr active = arith::Expr());
Stmt make_allocate(BufferRef buffer, Stmt body);
Stmt make_let_index(arith::Var var, Expr value, Stmt body);
Stmt make_nop();
Stmt make_parallel_call(size_t region, arith::Expr extent);

// A kernel: parameters are the kernel ABI's arguments (inputs, then outputs). Symbolic
// dims are the arith::Vars that appear in the parameters' shapes; generated code binds
// each from the first (param, dim) that is exactly that var, and checks every other dim
// against the value it implies (a mismatch is reported through the runtime's set_error).
struct PrimFunc {
  std::string name;
  std::vector<BufferRef> params;
  size_t num_inputs = 0;
  Stmt body;
};

}  // namespace dynvm::tir

namespace dynvm::tir {

// A parallel loop's body after outlining (tir/passes/outline_parallel.cc): code generation
// emits it as a separate function `int32 body(int64 begin, int64 end, void* closure)` that
// runs iterations [begin, end) of `loop_var`, with every free variable and buffer of the
// body passed through the closure.
struct ParallelRegion {
  std::string name;
  arith::Expr loop_var;  // a kVar
  std::vector<arith::Expr> captured_vars;  // kVar arith expressions used in body
  std::vector<BufferRef> captured_buffers;
  Stmt body;
  // Stores and loads one iteration runs, roughly (outline_parallel), in the call site's variables:
  // code generation asks parallel_for for chunks of at least kMinParallelChunkWork.
  arith::Expr work_per_iteration = arith::make_int(1);
};

// The least work (stores and their loads, as counted in ParallelRegion::work_per_iteration)
// worth one chunk of a parallel loop: below twice this, a parallel call runs on the calling
// thread, since handing a chunk to another thread costs microseconds (bench/README.md,
// "parallel grain"). 16,384 stores when only stores counted: an elementwise binary op's
// vector (a store and two loads) weighs what it did.
inline constexpr int64_t kMinParallelChunkWork = 3 * 16384;

// What code generation consumes: the kernel and its outlined parallel regions.
struct LoweredFunc {
  PrimFunc func;
  std::vector<ParallelRegion> regions;
};

}  // namespace dynvm::tir
