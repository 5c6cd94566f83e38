// Lowering TE + schedule to TIR (see lower_te.h). The steps, in order:
//   1. arguments become kGlobal buffers;
//   2. inlined stages are substituted into their readers ("effective bodies"), which tells
//      who reads whom;
//   3. compute_at attachments are checked and recorded on their consumers;
//   4. bound inference, consumers first: each stage's region and loop extents (bound.cc);
//   5. buffers for the intermediates (kLocal when small and static, else kWorkspace);
//   6. emission: each root stage's loop nest, attached stages inside their consumer's loop;
//   7. loops that repeat an enclosing loop's name are renamed, for readable dumps.
#include "kernels/te/lower_te.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "kernels/arith/analyzer.h"
#include "kernels/arith/printer.h"
#include "kernels/te/bound.h"
#include "kernels/te/expr_rewrite.h"
#include "vm/error.h"

namespace dynvm::te {
namespace {

using arith::Expr;

// kAuto intermediates up to this size live on the stack; cache_write("local") ones up to
// the larger limit (a register tile that big is a schedule bug, but still correct code).
constexpr int64_t kAutoLocalBytes = 16 * 1024;
constexpr int64_t kMaxLocalBytes = 1024 * 1024;

struct StageInfo {
  const Stage* stage = nullptr;
  tir::Expr body;  // the stage's computation with inlined stages substituted
  bool live = false;
  bool is_arg = false;
  std::vector<const Stage*> consumers;
  // Stages compute_at'ed at each leaf position of this stage, producers first.
  std::map<size_t, std::vector<StageInfo*>> attached;
  StageLoops loops;
  tir::BufferRef buffer;
  ScatterUpdate update;  // scatters: the update with inlined stages substituted
};

// The leaf position of `consumer` at which `attached` is computed.
size_t attach_position(const StageInfo& consumer, const StageInfo& attached) {
  for (const auto& [p, list] : consumer.attached) {
    if (std::find(list.begin(), list.end(), &attached) != list.end()) return p;
  }
  DYNVM_INTERNAL_CHECK(false, attached.stage->name(), " is not computed in ",
                       consumer.stage->name());
  return 0;
}

void collect_vars(const Expr& e, std::unordered_set<arith::VarId>& out) {
  if (!e.defined()) return;
  if (e.kind() == arith::ExprKind::kVar) {
    out.insert(e->var_id);
    return;
  }
  for (int i = 0; i < arith::kind_arity(e.kind()); ++i) collect_vars(e.operand(i), out);
}

// Whether an index expression of `e` (a load's or an index value's) names variable `id`.
bool uses_index_var(const tir::Expr& e, arith::VarId id) {
  bool used = false;
  tir::visit(e, [&](const tir::Expr& x) {
    auto check = [&](const Expr& index) { used |= index.defined() && arith::uses_var(index, id); };
    check(x->index);
    check(x->stride);
    for (const Expr& index : x->indices) check(index);
  });
  return used;
}

tir::Expr combine(tir::ReduceOp op, tir::Expr acc, tir::Expr value) {
  switch (op) {
    case tir::ReduceOp::kSum:
      return acc + value;
    case tir::ReduceOp::kProd:
      return acc * value;
    case tir::ReduceOp::kMax:
      return tir::max(acc, value);
    case tir::ReduceOp::kMin:
      return tir::min(acc, value);
    default:
      break;
  }
  DYNVM_INTERNAL_CHECK(false, "combine: not a plain reduction");
  return {};
}

// Whether the reduce loops, in their loop order, visit the reduction's elements in
// row-major order (splits and fuses that keep the original order, no reorder among reduce
// loops). Then "the first extreme" of argmax / argmin is the first one the loops meet (and
// the last extreme the last one).
bool reduce_loops_row_major(const Stage& stage) {
  std::vector<const AxisNode*> natural;
  for (size_t j = stage.num_axes(); j < stage.root_axes().size(); ++j) {
    natural.push_back(stage.root_axes()[j].get());
  }
  for (const AxisRelation& rel : stage.relations()) {
    if (!(rel.kind == AxisRelation::Kind::kSplit ? rel.parent : rel.outer)->is_reduce) continue;
    if (rel.kind == AxisRelation::Kind::kSplit) {
      auto it = std::find(natural.begin(), natural.end(), rel.parent.get());
      it = natural.erase(it);
      natural.insert(it, {rel.outer.get(), rel.inner.get()});
    } else {
      auto it = std::find(natural.begin(), natural.end(), rel.outer.get());
      if (it + 1 == natural.end() || *(it + 1) != rel.inner.get()) return false;
      *it = rel.fused.get();
      natural.erase(it + 1);
    }
  }
  std::vector<const AxisNode*> loops;
  for (const IterVarRef& leaf : stage.leaf_axes()) {
    if (leaf->is_reduce) loops.push_back(leaf.get());
  }
  return loops == natural;
}

class Lowerer {
 public:
  Lowerer(const Schedule& schedule, const std::vector<TensorRef>& args, std::string name)
      : schedule_(schedule), args_(args), name_(std::move(name)) {}

  tir::PrimFunc run() {
    tir::PrimFunc func;
    func.name = name_;
    make_params(func);
    collect_stages();
    attach_stages();
    infer_bounds();
    make_buffers();
    std::vector<tir::Stmt> top;
    for (const auto& stage : schedule_.stages()) {
      StageInfo& info = infos_.at(stage.get());
      if (info.live && stage->attach_kind() == AttachKind::kRoot) top.push_back(emit(info));
    }
    tir::Stmt body = tir::make_seq(std::move(top));
    for (auto it = schedule_.stages().rbegin(); it != schedule_.stages().rend(); ++it) {
      const StageInfo& info = infos_.at(it->get());
      if (info.live && !info.is_arg && (*it)->attach_kind() == AttachKind::kRoot) {
        body = tir::make_allocate(info.buffer, body);
      }
    }
    func.body = rename_shadowing_loops(body, qualified_names_);
    return func;
  }

 private:
  // ---- 1. arguments ----
  void make_params(tir::PrimFunc& func) {
    if (name_.empty()) user_error("lower: the kernel needs a name");
    std::unordered_set<const Tensor*> seen;
    bool seen_output = false;
    for (const TensorRef& t : args_) {
      if (!t) user_error("lower ", name_, ": null argument");
      if (!seen.insert(t.get()).second) {
        user_error("lower ", name_, ": argument ", t->name(), " is listed twice");
      }
      if (t->kind() == Tensor::Kind::kPlaceholder) {
        if (seen_output) {
          user_error("lower ", name_, ": input ", t->name(),
                     " comes after an output (inputs first, then outputs)");
        }
        ++func.num_inputs;
      } else {
        if (!schedule_.find(t.get())) {
          user_error("lower ", name_, ": argument ", t->name(), " is not computed by the schedule");
        }
        seen_output = true;
      }
      auto buffer = std::make_shared<tir::Buffer>(t->name(), t->dtype(), t->shape(),
                                                  tir::BufferScope::kGlobal);
      params_[t.get()] = buffer;
      func.params.push_back(buffer);
    }
    if (!seen_output) user_error("lower ", name_, ": no output among the arguments");
    for (const TensorRef& out : schedule_.outputs()) {
      if (!seen.count(out.get())) {
        user_error("lower ", name_, ": output ", out->name(), " is not among the arguments");
      }
    }
  }

  // ---- 2. effective bodies and readers ----
  tir::Expr effective_body(const Stage* stage) {
    auto it = bodies_.find(stage);
    if (it != bodies_.end()) return it->second;
    tir::Expr body = inline_reads(stage->body());
    bodies_[stage] = body;
    return body;
  }

  // expr with every read of an inlined stage replaced by that stage's effective body.
  tir::Expr inline_reads(const tir::Expr& expr) {
    if (!expr.defined()) return expr;
    return substitute(expr, {}, [&](const tir::Expr& read) {
      const Stage* producer = schedule_.find(read->tensor.get());
      if (!producer || producer->attach_kind() != AttachKind::kInline) return read;
      IndexMap map;
      for (size_t d = 0; d < read->indices.size(); ++d) {
        map[producer->op_axis()[d].id()] = read->indices[d];
      }
      return substitute(effective_body(producer), map);
    });
  }

  void collect_stages() {
    for (const auto& stage : schedule_.stages()) {
      StageInfo& info = infos_[stage.get()];
      info.stage = stage.get();
      info.is_arg = params_.count(stage->tensor().get()) > 0;
      if (stage->attach_kind() == AttachKind::kInline) {
        if (info.is_arg) {
          user_error("lower ", name_, ": ", stage->name(),
                     " is a kernel argument and cannot be inlined");
        }
        continue;
      }
      info.body = effective_body(stage.get());
      if (stage->tensor()->is_scan()) check_scan(info);
      if (stage->tensor()->is_scatter()) check_scatter(info);
      if (stage->is_reduction()) {
        for (const IterVar& r : root_reduction(info.body)->reduce_axes) {
          for (const arith::Var& v : stage->op_axis()) {
            if (arith::uses_var(r.extent, v.id())) {
              user_error("lower ", name_, ": the extent of reduce axis ", r.var.name(), " of ",
                         stage->name(), " depends on the tensor's own axis ", v.name());
            }
          }
        }
      }
    }
    // Readers, now that inlined stages are gone from the bodies.
    for (const auto& stage : schedule_.stages()) {
      if (stage->attach_kind() == AttachKind::kInline) continue;
      const StageInfo& reader = infos_.at(stage.get());
      std::vector<tir::Expr> exprs = {reader.body, reader.update.when, reader.update.value};
      for (const auto& let : reader.update.lets) exprs.push_back(let.second);
      for (const tir::Expr& expr : exprs) {
        if (!expr.defined()) continue;
        tir::visit(expr, [&](const tir::Expr& e) {
          if (e.kind() != tir::ExprKind::kTensorRead) return;
          const Tensor* t = e->tensor.get();
          if (t->kind() == Tensor::Kind::kPlaceholder) {
            if (!params_.count(t) && t != stage->tensor()->self_state().get()) {
              user_error("lower ", name_, ": ", stage->name(), " reads ", t->name(),
                         ", which is not among the arguments");
            }
            return;
          }
          const Stage* producer = schedule_.find(t);
          DYNVM_INTERNAL_CHECK(producer, "no stage for ", t->name());
          auto& consumers = infos_.at(producer).consumers;
          if (std::find(consumers.begin(), consumers.end(), stage.get()) == consumers.end()) {
            consumers.push_back(stage.get());
          }
        });
      }
    }
    for (auto& [stage, info] : infos_) {
      info.live =
          stage->attach_kind() != AttachKind::kInline && (info.is_arg || !info.consumers.empty());
    }
  }

  // A scan's recurrence runs its axis as one serial loop, in scan order, around or inside
  // the other loops (each element needs only the previous one along the axis).
  void check_scan(StageInfo& info) {
    const Stage& stage = *info.stage;
    const IterVarRef& axis = stage.root_axes()[stage.tensor()->scan_axis()];
    const auto& leaves = stage.leaf_axes();
    if (std::find(leaves.begin(), leaves.end(), axis) == leaves.end()) {
      user_error("lower ", name_, ": the scan axis ", axis->name, " of ", stage.name(),
                 " was split or fused (it must stay one serial loop)");
    }
    tir::ForKind kind = stage.annotation(axis).kind;
    if (kind != tir::ForKind::kSerial && kind != tir::ForKind::kUnrolled) {
      user_error("lower ", name_, ": the scan axis ", axis->name, " of ", stage.name(), " is ",
                 tir::for_kind_name(kind), " (it must stay one serial loop)");
    }
    if (stage.attach_kind() != AttachKind::kRoot) {
      user_error("lower ", name_, ": the scan ", stage.name(), " must be computed at the root");
    }
    self_states_[stage.tensor()->scan_state().get()] = &info;
  }

  // A scatter's pass runs after its init, over the whole tensor: it is computed at the
  // root, and the update reads what inlined stages compute through their bodies.
  void check_scatter(StageInfo& info) {
    const Stage& stage = *info.stage;
    if (stage.attach_kind() != AttachKind::kRoot) {
      user_error("lower ", name_, ": the scatter ", stage.name(), " must be computed at the root");
    }
    const ScatterSpec& spec = *stage.tensor()->scatter();
    info.update = spec.update;
    for (auto& let : info.update.lets) let.second = inline_reads(let.second);
    info.update.when = inline_reads(info.update.when);
    info.update.value = inline_reads(info.update.value);
    self_states_[spec.self.get()] = &info;
  }

  // ---- 3. compute_at ----
  void attach_stages() {
    for (const auto& stage : schedule_.stages()) {
      StageInfo& info = infos_.at(stage.get());
      if (!info.live || stage->attach_kind() != AttachKind::kAt) continue;
      const Stage* consumer = stage->attach_stage();
      if (info.is_arg) {
        user_error("compute_at: ", stage->name(), " is a kernel argument (computed whole)");
      }
      if (consumer->attach_kind() == AttachKind::kInline) {
        user_error("compute_at: ", stage->name(), " is attached to ", consumer->name(),
                   ", which is inlined");
      }
      // Another reader must be computed inside the same consumer at the same loop (after
      // this stage, as producers come first: softmax's row max, read by the row's sum and
      // by the output, all inside the output's row loop) or at a loop inside it (a
      // depthwise conv's padded rows, read by the accumulator of each column tile).
      const auto& leaves = consumer->leaf_axes();
      auto position = [&](const IterVarRef& axis) {
        return std::find(leaves.begin(), leaves.end(), axis) - leaves.begin();
      };
      for (const Stage* reader : info.consumers) {
        if (reader == consumer) continue;
        // A reader computed inside another stage that is (a chain of such stages ending in
        // one that is) computed at the consumer's loop: the product stage of a kernel whose
        // output computes its workspaces per chunk of its own loop (conv_winograd.cc).
        const Stage* outer = reader;
        while (outer->attach_kind() == AttachKind::kAt && outer->attach_stage() != consumer) {
          outer = outer->attach_stage();
        }
        if (outer->attach_kind() != AttachKind::kAt ||
            position(outer->attach_axis()) < position(stage->attach_axis())) {
          user_error("compute_at: ", stage->name(), " is also read by ", reader->name(),
                     "; it may only be read by ", consumer->name(),
                     ", where it is computed, and by stages computed at that loop or inside it");
        }
      }
      DYNVM_INTERNAL_CHECK(infos_.at(consumer).live, "compute_at into dead stage ",
                           consumer->name());
      auto pos = std::find(leaves.begin(), leaves.end(), stage->attach_axis());
      if (pos == leaves.end()) {
        user_error("compute_at: axis ", stage->attach_axis()->name, " of ", consumer->name(),
                   " is no longer a loop (it was split or fused after compute_at)");
      }
      infos_.at(consumer).attached[static_cast<size_t>(pos - leaves.begin())].push_back(&info);
    }
  }

  // ---- 4. bound inference ----
  Expr constant_bound(const Expr& e) const {
    if (e.is_int_imm()) return e;
    arith::Bounds b = analyzer_.const_bounds(e);
    if (b.max == arith::kPosInf) return e;
    return Expr(std::max<int64_t>(b.max, 0));
  }

  void bind_loop_var(const arith::Var& v, const Expr& extent, const Stage& stage) {
    loop_vars_.insert(v.id());
    qualified_names_[v.id()] = stage.name() + "." + v.name();
    if (extent.is_int_imm()) {
      analyzer_.bind(v, 0, std::max<int64_t>(extent.int_value() - 1, 0));
    } else {
      analyzer_.bind(v, Expr(0), analyzer_.simplify(extent - Expr(1)));
    }
  }

  void infer_bounds() {
    // Dims are never negative; knowing it lets guards and extents simplify.
    for (const auto& stage : schedule_.stages()) {
      for (const Expr& dim : stage->tensor()->shape()) bind_shape_vars(dim);
      // The effective body's reduce extents: the variables its lets bind are renamed there,
      // and a let-bound extent is never negative (tensor.h).
      const tir::Expr& body = infos_.at(stage.get()).body;
      if (stage->is_reduction() && body.defined()) {
        for (const IterVar& r : root_reduction(body)->reduce_axes) bind_shape_vars(r.extent);
      }
    }
    for (const auto& [tensor, buffer] : params_) {
      for (const Expr& dim : buffer->shape()) bind_shape_vars(dim);
    }
    for (auto it = schedule_.stages().rbegin(); it != schedule_.stages().rend(); ++it) {
      const Stage& stage = **it;
      StageInfo& info = infos_.at(&stage);
      if (!info.live) continue;
      StageLoops& loops = info.loops;
      loops.stage = &stage;
      const auto& shape = stage.tensor()->shape();
      if (stage.attach_kind() == AttachKind::kAt) {
        const StageInfo& consumer = infos_.at(stage.attach_stage());
        size_t pos = 0;
        for (const auto& [p, list] : consumer.attached) {
          if (std::find(list.begin(), list.end(), &info) != list.end()) pos = p;
        }
        // What the consumer reads under the loop, and what each sibling reader (attached
        // at that loop or inside it, and which may be the only reader) reads in all its
        // iterations, over every iteration of the consumer's loops between the two.
        std::optional<Region> region;
        for (const Stage* reader : info.consumers) {
          const bool direct = reader == stage.attach_stage();
          const StageInfo* r = direct ? &consumer : &infos_.at(reader);
          Region read = infer_region(r->loops, r->body, direct ? pos : kNoFixedLoops,
                                     stage.tensor().get(), shape, analyzer_);
          if (!direct) {
            // Up the chain of stages the reader is computed in, every loop of each down to
            // where the next one in is computed, to the stage computed at the consumer.
            while (r->stage->attach_stage() != stage.attach_stage()) {
              const StageInfo& in = infos_.at(r->stage->attach_stage());
              read = relax_region(read, in.loops, kNoFixedLoops, attach_position(in, *r), shape,
                                  analyzer_);
              r = &in;
            }
            read = relax_region(read, consumer.loops, pos, attach_position(consumer, *r), shape,
                                analyzer_);
          }
          region = region ? region_union(*region, read, analyzer_) : read;
        }
        DYNVM_INTERNAL_CHECK(region.has_value(), "compute_at: ", stage.name(), " has no reader");
        loops.root_min = region->min;
        loops.root_extent = region->extent;
        for (const Expr& e : region->extent) loops.root_loop_extent.push_back(constant_bound(e));
      } else {
        for (const Expr& dim : shape) {
          Expr extent = analyzer_.simplify(dim);
          loops.root_min.push_back(Expr(0));
          loops.root_extent.push_back(extent);
          loops.root_loop_extent.push_back(extent);
        }
      }
      if (stage.is_reduction()) {
        for (const IterVar& r : root_reduction(info.body)->reduce_axes) {
          Expr extent = analyzer_.simplify(r.extent);
          loops.root_extent.push_back(extent);
          loops.root_loop_extent.push_back(extent);
        }
      }
      infer_extents(loops, analyzer_);
      for (const IterVarRef& leaf : stage.leaf_axes()) {
        bind_loop_var(leaf->var, loops.extent.at(leaf.get()), stage);
      }
    }
  }

  void bind_shape_vars(const Expr& e) {
    if (!e.defined()) return;
    if (e.kind() == arith::ExprKind::kVar) {
      if (!analyzer_.range(e->var_id)) analyzer_.bind(arith::Var(e), 0, arith::kPosInf);
      return;
    }
    for (int i = 0; i < arith::kind_arity(e.kind()); ++i) bind_shape_vars(e.operand(i));
  }

  // ---- 5. buffers ----
  bool uses_loop_var(const Expr& e) const {
    std::unordered_set<arith::VarId> ids;
    collect_vars(e, ids);
    for (arith::VarId id : ids) {
      if (loop_vars_.count(id)) return true;
    }
    return false;
  }

  tir::BufferScope scope_for(const std::vector<Expr>& shape, vm::DType dtype,
                             StorageHint hint) const {
    if (hint == StorageHint::kWorkspace) return tir::BufferScope::kWorkspace;
    int64_t bytes = static_cast<int64_t>(vm::dtype_size(dtype));
    for (const Expr& dim : shape) {
      if (!dim.is_int_imm()) return tir::BufferScope::kWorkspace;
      bytes *= dim.int_value();
      if (bytes > kMaxLocalBytes) return tir::BufferScope::kWorkspace;
    }
    int64_t limit = hint == StorageHint::kLocal ? kMaxLocalBytes : kAutoLocalBytes;
    return bytes <= limit ? tir::BufferScope::kLocal : tir::BufferScope::kWorkspace;
  }

  void make_buffers() {
    for (const auto& stage : schedule_.stages()) {
      StageInfo& info = infos_.at(stage.get());
      if (!info.live) continue;
      if (info.is_arg) {
        info.buffer = params_.at(stage->tensor().get());
        continue;
      }
      std::vector<Expr> shape;
      for (size_t d = 0; d < stage->num_axes(); ++d) {
        const Expr& loop_extent = info.loops.root_loop_extent[d];
        if (loop_extent.is_int_imm()) {
          shape.push_back(Expr(std::max<int64_t>(loop_extent.int_value(), 1)));
        } else if (!uses_loop_var(info.loops.root_extent[d])) {
          shape.push_back(info.loops.root_extent[d]);
        } else {
          // A region that moves with the consumer's loops and has no constant bound: the
          // whole dim always holds it.
          shape.push_back(stage->tensor()->shape()[d]);
        }
      }
      auto scope = scope_for(shape, stage->tensor()->dtype(), stage->storage_hint());
      info.buffer = std::make_shared<tir::Buffer>(stage->name(), stage->tensor()->dtype(),
                                                  std::move(shape), scope);
    }
  }

  // ---- 6. emission ----
  // Tensor axes and reduce variables of the stage's body, as loop expressions.
  IndexMap body_map(const StageInfo& info, const AxisExprMap& values) const {
    IndexMap map;
    const Stage& stage = *info.stage;
    const auto& roots = stage.root_axes();
    for (size_t d = 0; d < stage.num_axes(); ++d) {
      map[stage.op_axis()[d].id()] =
          analyzer_.simplify(info.loops.root_min[d] + values.at(roots[d].get()));
    }
    if (stage.is_reduction()) {
      const auto& reduce_axes = root_reduction(info.body)->reduce_axes;
      for (size_t j = 0; j < reduce_axes.size(); ++j) {
        auto it = values.find(roots[stage.num_axes() + j].get());
        if (it != values.end()) map[reduce_axes[j].var.id()] = analyzer_.simplify(it->second);
      }
    }
    return map;
  }

  std::vector<Expr> store_indices(const StageInfo& info, const AxisExprMap& values) const {
    std::vector<Expr> indices;
    for (size_t d = 0; d < info.stage->num_axes(); ++d) {
      indices.push_back(analyzer_.simplify(values.at(info.stage->root_axes()[d].get())));
    }
    return indices;
  }

  // expr with the body's variables replaced and every tensor read turned into a load.
  tir::Expr lower_expr(const tir::Expr& expr, const IndexMap& map) const {
    return substitute(expr, map, [&](const tir::Expr& read) {
      const Tensor* t = read->tensor.get();
      std::vector<Expr> indices = read->indices;
      tir::BufferRef buffer;
      if (auto self = self_states_.find(t); self != self_states_.end()) {
        buffer = self->second->buffer;  // a scan's previous element, a scatter's contents
      } else if (t->kind() == Tensor::Kind::kPlaceholder) {
        buffer = params_.at(t);
      } else {
        const StageInfo& producer = infos_.at(schedule_.find(t));
        buffer = producer.buffer;
        for (size_t d = 0; d < indices.size(); ++d) {
          indices[d] = indices[d] - producer.loops.root_min[d];
        }
      }
      for (Expr& index : indices) index = analyzer_.simplify(index);
      return tir::buffer_load(buffer, std::move(indices));
    });
  }

  static tir::Stmt guarded(const std::vector<Expr>& guards, tir::Stmt stmt) {
    if (guards.empty()) return stmt;
    Expr cond = guards[0];
    for (size_t i = 1; i < guards.size(); ++i) cond = arith::logical_and(cond, guards[i]);
    return tir::make_if(cond, std::move(stmt));
  }

  tir::Stmt make_loop(const StageInfo& info, const IterVarRef& leaf, const Expr& var,
                      tir::Stmt body) const {
    AxisAnnotation ann = info.stage->annotation(leaf);
    const Expr& extent = info.loops.extent.at(leaf.get());
    // A vectorized loop may have a symbolic extent (a tile's remainder: tir's vectorize
    // makes it masked vector code); an unrolled one needs a constant.
    if (ann.kind == tir::ForKind::kUnrolled && !extent.is_int_imm()) {
      user_error("lower ", name_, ": ", tir::for_kind_name(ann.kind), " axis ", leaf->name, " of ",
                 info.stage->name(), " has the non-constant extent ", arith::to_string(extent),
                 " here (split it by a constant)");
    }
    return tir::make_for(arith::Var(var), Expr(0), extent, ann.kind, std::move(body),
                         ann.thread_axis);
  }

  // Loops over leaves [begin, end) around body; with stages attached there when `attach`.
  tir::Stmt loop_nest(StageInfo& info, size_t begin, size_t end, tir::Stmt body) {
    const auto& leaves = info.stage->leaf_axes();
    for (size_t k = end; k-- > begin;) {
      body = with_attached(info, k, std::move(body));
      body = make_loop(info, leaves[k], leaves[k]->var, std::move(body));
    }
    return body;
  }

  tir::Stmt with_attached(StageInfo& info, size_t pos, tir::Stmt body) {
    auto it = info.attached.find(pos);
    if (it == info.attached.end()) return body;
    std::vector<tir::Stmt> seq;
    for (StageInfo* producer : it->second) seq.push_back(emit(*producer));
    seq.push_back(std::move(body));
    tir::Stmt out = tir::make_seq(std::move(seq));
    for (auto p = it->second.rbegin(); p != it->second.rend(); ++p) {
      out = tir::make_allocate((*p)->buffer, out);
    }
    return out;
  }

  tir::Stmt emit(StageInfo& info) {
    if (info.stage->is_reduction()) return emit_reduction(info);
    if (info.stage->tensor()->is_scan()) return emit_scan(info);
    if (info.stage->tensor()->is_scatter()) {
      return tir::make_seq({emit_elementwise(info), emit_scatter_pass(info)});
    }
    return emit_elementwise(info);
  }

  tir::Stmt emit_elementwise(StageInfo& info) {
    AxisExprMap own;
    for (const IterVarRef& leaf : info.stage->leaf_axes()) own[leaf.get()] = leaf->var;
    AxisExprMap values = axis_values(info.loops, own);
    tir::Stmt store = tir::make_store(info.buffer, store_indices(info, values),
                                      lower_expr(info.body, body_map(info, values)));
    store = guarded(iteration_guards(info.loops, values, analyzer_), std::move(store));
    return loop_nest(info, 0, info.stage->leaf_axes().size(), std::move(store));
  }

  tir::Stmt emit_reduction(StageInfo& info);

  // The body is select(first element, init, update): an if instead, so that update (which
  // reads the element one step back) never runs at the first element. A reverse scan's
  // loop counts down.
  // A scatter's pass: serial loops over the domain; in them the lets, then, when `when`
  // holds and every index is inside the tensor, the store.
  tir::Stmt emit_scatter_pass(StageInfo& info) {
    const ScatterSpec& spec = *info.stage->tensor()->scatter();
    const ScatterUpdate& u = info.update;
    for (size_t d = 0; d < spec.domain.size(); ++d) {
      bind_loop_var(spec.domain_vars[d], spec.domain[d], *info.stage);
    }
    const auto& shape = info.stage->tensor()->shape();
    std::vector<Expr> at, guards;
    for (size_t d = 0; d < u.at.size(); ++d) {
      at.push_back(analyzer_.simplify(u.at[d]));
      guards.push_back(analyzer_.simplify(arith::ge(at[d], 0)));
      guards.push_back(analyzer_.simplify(arith::lt(at[d], shape[d])));
    }
    std::vector<Expr> kept;
    for (const Expr& g : guards) {
      if (!(g.is_int_imm() && g.int_value() != 0)) kept.push_back(g);
    }
    tir::Stmt body = tir::make_store(info.buffer, at, lower_expr(u.value, {}));
    if (u.when.defined()) {
      arith::Var w("when");
      kept.insert(kept.begin(), arith::ne(w, 0));
      body = guarded(kept, std::move(body));
      body = tir::make_let_index(w, tir::cast(tir::i64(), lower_expr(u.when, {})), body);
    } else {
      body = guarded(kept, std::move(body));
    }
    for (size_t k = u.lets.size(); k-- > 0;) {
      body = tir::make_let_index(u.lets[k].first, lower_expr(u.lets[k].second, {}), body);
    }
    for (size_t d = spec.domain.size(); d-- > 0;) {
      body = tir::make_for(spec.domain_vars[d], Expr(0), spec.domain[d], tir::ForKind::kSerial,
                           std::move(body));
    }
    return body;
  }

  tir::Stmt emit_scan(StageInfo& info) {
    const Stage& stage = *info.stage;
    const IterVarRef& axis = stage.root_axes()[stage.tensor()->scan_axis()];
    AxisExprMap own;
    for (const IterVarRef& leaf : stage.leaf_axes()) own[leaf.get()] = leaf->var;
    if (stage.tensor()->scan_reverse()) {
      own[axis.get()] = info.loops.extent.at(axis.get()) - Expr(1) - axis->var;
    }
    AxisExprMap values = axis_values(info.loops, own);
    IndexMap map = body_map(info, values);
    std::vector<Expr> idx = store_indices(info, values);
    DYNVM_INTERNAL_CHECK(info.body.kind() == tir::ExprKind::kSelect, "scan ", stage.name(),
                         " has no select at its root");
    Expr at_first = analyzer_.simplify(substitute_index(info.body->operands[0]->index, map));
    tir::Stmt store = tir::make_if(
        at_first, tir::make_store(info.buffer, idx, lower_expr(info.body->operands[1], map)),
        tir::make_store(info.buffer, idx, lower_expr(info.body->operands[2], map)));
    store = guarded(iteration_guards(info.loops, values, analyzer_), std::move(store));
    return loop_nest(info, 0, stage.leaf_axes().size(), std::move(store));
  }

  const Schedule& schedule_;
  const std::vector<TensorRef>& args_;
  std::string name_;
  std::unordered_map<const Tensor*, tir::BufferRef> params_;
  std::unordered_map<const Stage*, StageInfo> infos_;
  std::unordered_map<const Stage*, tir::Expr> bodies_;
  // A scan's or scatter's own-contents placeholder -> its stage.
  std::unordered_map<const Tensor*, const StageInfo*> self_states_;
  std::unordered_set<arith::VarId> loop_vars_;
  std::unordered_map<arith::VarId, std::string> qualified_names_;  // "B.i0.outer"
  arith::Analyzer analyzer_;
};

// A reduction: the loops outside the first reduce loop are shared; inside them an init
// nest (over the remaining data-parallel loops, with fresh variables) stores the identity,
// then the update nest combines. argmax / argmin keep the running extreme in a second
// accumulator and replace the index only on a strictly better value (the first extreme
// wins), or also on an equal one for the *_last forms (the last extreme wins).
tir::Stmt Lowerer::emit_reduction(StageInfo& info) {
  const Stage& stage = *info.stage;
  const auto& leaves = stage.leaf_axes();
  std::vector<const tir::ExprNode*> lets;
  const tir::ExprNode& red = *root_reduction(info.body, &lets);
  const tir::Expr& source = red.operands[0];
  bool is_arg_reduce = tir::is_arg_reduce(red.reduce_op);
  size_t n = leaves.size();
  size_t r0 = 0;
  while (r0 < n && !leaves[r0]->is_reduce) ++r0;
  bool dp_inside = false;
  for (size_t k = r0; k < n; ++k) dp_inside |= !leaves[k]->is_reduce;

  // The running extreme of argmax / argmin: one scalar when every data-parallel loop is
  // outside the reduction, else one per element of the stage's region.
  tir::BufferRef acc;
  if (is_arg_reduce) {
    std::vector<Expr> shape =
        dp_inside ? info.buffer->shape() : std::vector<Expr>(stage.num_axes(), Expr(1));
    auto scope = scope_for(shape, source.type().elem, StorageHint::kAuto);
    acc = std::make_shared<tir::Buffer>(stage.name() + ".acc", source.type().elem, shape, scope);
  }
  auto acc_indices = [&](const std::vector<Expr>& out_indices) {
    return dp_inside ? out_indices : std::vector<Expr>(stage.num_axes(), Expr(0));
  };

  // Init: fresh variables for the data-parallel loops inside the first reduce loop.
  AxisExprMap init_vars;
  for (size_t k = 0; k < n; ++k) {
    if (k < r0) {
      init_vars[leaves[k].get()] = leaves[k]->var;
    } else if (!leaves[k]->is_reduce) {
      arith::Var fresh(leaves[k]->var.name() + ".init");
      bind_loop_var(fresh, info.loops.extent.at(leaves[k].get()), stage);
      init_vars[leaves[k].get()] = fresh;
    }
  }
  AxisExprMap init_values = axis_values(info.loops, init_vars);
  std::vector<Expr> init_idx = store_indices(info, init_values);
  std::vector<tir::Stmt> init_stores;
  if (is_arg_reduce) {
    init_stores.push_back(
        tir::make_store(info.buffer, init_idx, tir::make_const_int(tir::i64(), 0)));
    init_stores.push_back(
        tir::make_store(acc, acc_indices(init_idx), reduce_identity(red.reduce_op, source.type())));
  } else {
    tir::Expr init = red.operands.size() > 1 && red.operands[1].defined()
                         ? lower_expr(red.operands[1], body_map(info, init_values))
                         : reduce_identity(red.reduce_op, red.type);
    init_stores.push_back(tir::make_store(info.buffer, init_idx, init));
  }
  tir::Stmt init = guarded(iteration_guards(info.loops, init_values, analyzer_),
                           tir::make_seq(std::move(init_stores)));
  for (size_t k = n; k-- > r0;) {
    if (!leaves[k]->is_reduce)
      init = make_loop(info, leaves[k], init_vars.at(leaves[k].get()), std::move(init));
  }

  // Update.
  AxisExprMap own;
  for (const IterVarRef& leaf : leaves) own[leaf.get()] = leaf->var;
  AxisExprMap values = axis_values(info.loops, own);
  IndexMap map = body_map(info, values);
  std::vector<Expr> idx = store_indices(info, values);
  std::vector<tir::Stmt> updates;
  if (is_arg_reduce) {
    // Row-major position over the reduce axes, as written in the reduction.
    Expr flat(0);
    for (size_t j = 0; j < red.reduce_axes.size(); ++j) {
      flat =
          flat * info.loops.root_extent[stage.num_axes() + j] + map.at(red.reduce_axes[j].var.id());
    }
    flat = analyzer_.simplify(flat);
    const bool is_max =
        red.reduce_op == tir::ReduceOp::kArgMax || red.reduce_op == tir::ReduceOp::kArgMaxLast;
    const bool last =
        red.reduce_op == tir::ReduceOp::kArgMaxLast || red.reduce_op == tir::ReduceOp::kArgMinLast;
    auto cmp = is_max ? tir::CompareOp::kGt : tir::CompareOp::kLt;
    tir::Expr best = tir::buffer_load(acc, acc_indices(idx));
    tir::Expr flat_value = tir::index_value(flat, tir::i64());
    bool in_order = reduce_loops_row_major(stage);
    // Each use gets its own copy of the source so that no LetIndex is bound twice. Loops
    // that meet elements in row-major order keep the first extreme by replacing only on a
    // strictly better value, the last one by replacing on an equal value too (the
    // identity's init then gives way to the first element even when every value is it).
    // Otherwise an equal value wins when its index is smaller (first) or larger (last).
    auto better = [&] {
      if (in_order && last) {
        return tir::compare(is_max ? tir::CompareOp::kGe : tir::CompareOp::kLe,
                            lower_expr(source, map), best);
      }
      tir::Expr strictly = tir::compare(cmp, lower_expr(source, map), best);
      if (in_order) return strictly;
      tir::Expr tie =
          tir::logical_and(tir::compare(tir::CompareOp::kEq, lower_expr(source, map), best),
                           tir::compare(last ? tir::CompareOp::kGt : tir::CompareOp::kLt,
                                        flat_value, tir::buffer_load(info.buffer, idx)));
      return tir::logical_or(strictly, tie);
    };
    updates.push_back(tir::make_store(
        info.buffer, idx, tir::select(better(), flat_value, tir::buffer_load(info.buffer, idx))));
    updates.push_back(tir::make_store(acc, acc_indices(idx),
                                      tir::select(better(), lower_expr(source, map), best)));
  } else {
    updates.push_back(tir::make_store(
        info.buffer, idx,
        combine(red.reduce_op, tir::buffer_load(info.buffer, idx), lower_expr(source, map))));
  }
  tir::Stmt update =
      guarded(iteration_guards(info.loops, values, analyzer_), tir::make_seq(std::move(updates)));
  update = loop_nest(info, r0, n, std::move(update));

  // Per-element extents: bound around the init and the reduce loops, inside the loops
  // outside the first reduce loop, so a let may read only the indices those loops give
  // (`map` names the others by loops not open there).
  tir::Stmt inner = tir::make_seq({init, update});
  for (auto let = lets.rbegin(); let != lets.rend(); ++let) {
    tir::Expr value = lower_expr((*let)->operands[0], map);
    for (size_t k = r0; k < n; ++k) {
      if (!leaves[k]->is_reduce && uses_index_var(value, leaves[k]->var.id())) {
        user_error("lower ", name_, ": the reduce extent ", arith::Var((*let)->let_var).name(),
                   " of ", stage.name(), " reads an index of loop ", leaves[k]->name,
                   ", which is inside its reduce loops (bind it outside them)");
      }
    }
    inner = tir::make_let_index(arith::Var((*let)->let_var), value, std::move(inner));
  }
  if (is_arg_reduce && !dp_inside) inner = tir::make_allocate(acc, inner);
  tir::Stmt nest = loop_nest(info, 0, r0, std::move(inner));
  if (is_arg_reduce && dp_inside) nest = tir::make_allocate(acc, nest);
  return nest;
}

}  // namespace

tir::Expr reduce_identity(tir::ReduceOp op, tir::DataType t) {
  using tir::ReduceOp;
  bool lowest = op == ReduceOp::kMax || op == ReduceOp::kArgMax || op == ReduceOp::kArgMaxLast;
  if (op == ReduceOp::kSum) return tir::make_const(t, 0);
  if (op == ReduceOp::kProd) return tir::make_const(t, 1);
  if (t.is_float()) {
    double inf = std::numeric_limits<double>::infinity();
    return tir::make_const(t, lowest ? -inf : inf);
  }
  int bits = static_cast<int>(vm::dtype_size(t.elem)) * 8;
  if (t.is_unsigned_int()) {
    // The all-ones pattern: int64 -1 is UINT64_MAX when read as the unsigned type.
    int64_t max = bits == 64 ? -1 : static_cast<int64_t>((uint64_t{1} << bits) - 1);
    return tir::make_const_int(t, lowest ? 0 : max);
  }
  int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max()
                           : static_cast<int64_t>((uint64_t{1} << (bits - 1)) - 1);
  return tir::make_const_int(t, lowest ? -max - 1 : max);
}

tir::PrimFunc lower(const Schedule& schedule, const std::vector<TensorRef>& args,
                    const std::string& name) {
  return Lowerer(schedule, args, name).run();
}

}  // namespace dynvm::te
