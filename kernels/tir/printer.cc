// The TIR printer. Readability first: values print fully parenthesised so that no reader
// needs precedence rules, while index expressions use arith's printer (fewest parentheses).
#include "kernels/tir/printer.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "kernels/arith/printer.h"
#include "kernels/te/tensor.h"
#include "vm/error.h"

namespace dynvm::tir {
namespace {

std::string index_str(const arith::Expr& e) { return e.defined() ? arith::to_string(e) : "?"; }

std::string indices_str(const std::vector<arith::Expr>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + index_str(v[i]);
  return s;
}

std::string ramp_str(const arith::Expr& base, const arith::Expr& stride, int lanes,
                     const arith::Expr& active = arith::Expr()) {
  if (active.defined()) {
    return str_cat("ramp(", index_str(base), ", ", index_str(stride), ", ", lanes, ", active ",
                   index_str(active), ")");
  }
  return str_cat("ramp(", index_str(base), ", ", index_str(stride), ", ", lanes, ")");
}

std::string float_str(double v, vm::DType t) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << std::setprecision(t == vm::DType::kFloat32 ? std::numeric_limits<float>::max_digits10
                                                   : std::numeric_limits<double>::max_digits10)
     << v;
  std::string s = os.str();
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string const_str(const Expr& e) {
  DataType t = e.type();
  if (t.is_bool()) return e->ivalue ? "true" : "false";
  if (t.elem == vm::DType::kFloat32) return float_str(e->fvalue, t.elem) + "f";
  if (t.elem == vm::DType::kFloat64) return float_str(e->fvalue, t.elem);
  if (t.is_float()) return str_cat(to_string(t), "(", float_str(e->fvalue, t.elem), ")");
  if (t.elem == vm::DType::kInt64) return std::to_string(e->ivalue);
  return str_cat(to_string(t), "(", e->ivalue, ")");
}

class Printer {
 public:
  std::string expr(const Expr& e) {
    if (!e.defined()) return "<undefined>";
    const auto& ops = e->operands;
    switch (e.kind()) {
      case ExprKind::kConst:
        return const_str(e);
      case ExprKind::kIndexValue:
        if (e.type().lanes > 1) {
          return str_cat(to_string(e.type()), "(", ramp_str(e->index, e->stride, e.type().lanes),
                         ")");
        }
        return str_cat(to_string(e.type()), "(", index_str(e->index), ")");
      case ExprKind::kTensorRead:
        return str_cat(e->tensor ? e->tensor->name() : "?", "(", indices_str(e->indices), ")");
      case ExprKind::kBufferLoad:
        if (e.type().lanes > 1) {
          return str_cat(e->buffer->name(), "[",
                         ramp_str(e->indices[0], e->stride, e.type().lanes, e->active), "]");
        }
        return str_cat(e->buffer->name(), "[", indices_str(e->indices), "]");
      case ExprKind::kBinary:
        switch (e->binary_op) {
          case BinaryOp::kMin:
          case BinaryOp::kMax:
          case BinaryOp::kPow:
            return str_cat(binary_op_name(e->binary_op), "(", expr(ops[0]), ", ", expr(ops[1]),
                           ")");
          default:
            return str_cat("(", expr(ops[0]), " ", binary_op_name(e->binary_op), " ", expr(ops[1]),
                           ")");
        }
      case ExprKind::kCompare:
        return str_cat("(", expr(ops[0]), " ", compare_op_name(e->compare_op), " ", expr(ops[1]),
                       ")");
      case ExprKind::kLogical:
        if (e->logical_op == LogicalOp::kNot) return str_cat("!", expr(ops[0]));
        return str_cat("(", expr(ops[0]), e->logical_op == LogicalOp::kAnd ? " && " : " || ",
                       expr(ops[1]), ")");
      case ExprKind::kCall:
        return str_cat(intrinsic_name(e->intrinsic), "(", expr(ops[0]), ")");
      case ExprKind::kCast:
        return str_cat(to_string(e.type()), "(", expr(ops[0]), ")");
      case ExprKind::kSelect:
        return str_cat("select(", expr(ops[0]), ", ", expr(ops[1]), ", ", expr(ops[2]), ")");
      case ExprKind::kBroadcast:
        return str_cat("broadcast(", expr(ops[0]), ", ", e.type().lanes, ")");
      case ExprKind::kReduce: {
        std::string axes;
        for (size_t i = 0; i < e->reduce_axes.size(); ++i) {
          axes += str_cat(i ? ", " : "", e->reduce_axes[i].var.name(), ":",
                          index_str(e->reduce_axes[i].extent));
        }
        std::string init = ops.size() > 1 && ops[1].defined() ? ", init=" + expr(ops[1]) : "";
        return str_cat(reduce_op_name(e->reduce_op), "(", expr(ops[0]), ", axes=[", axes, "]", init,
                       ")");
      }
      case ExprKind::kLetIndex:
        return str_cat("(let ", index_str(e->let_var), " = ", expr(ops[0]), " in ", expr(ops[1]),
                       ")");
    }
    return "?";
  }

  void stmt(const Stmt& s, int indent) {
    if (!s.defined()) {
      line(indent, "<undefined>");
      return;
    }
    switch (s.kind()) {
      case StmtKind::kFor: {
        std::string kind;
        if (s->for_kind == ForKind::kGpuBlock || s->for_kind == ForKind::kGpuThread) {
          kind = str_cat(" ", for_kind_name(s->for_kind), ".", "xyz"[s->thread_axis]);
        } else if (s->for_kind != ForKind::kSerial) {
          kind = str_cat(" ", for_kind_name(s->for_kind));
        }
        line(indent, str_cat("for (", index_str(s->loop_var), ", ", index_str(s->min), ", ",
                             index_str(s->extent), ")", kind, ":"));
        stmt(s->body, indent + 1);
        break;
      }
      case StmtKind::kSeq:
        for (const Stmt& c : s->seq) stmt(c, indent);
        break;
      case StmtKind::kIf:
        line(indent, str_cat("if (", index_str(s->condition), "):"));
        stmt(s->then_case, indent + 1);
        if (s->else_case.defined()) {
          line(indent, "else:");
          stmt(s->else_case, indent + 1);
        }
        break;
      case StmtKind::kStore:
        if (s->stride.defined()) {
          line(indent, str_cat(s->buffer->name(), "[",
                               ramp_str(s->indices[0], s->stride, s->value.type().lanes, s->active),
                               "] = ", expr(s->value)));
        } else {
          line(indent,
               str_cat(s->buffer->name(), "[", indices_str(s->indices), "] = ", expr(s->value)));
        }
        break;
      case StmtKind::kAllocate: {
        const char* scope = s->buffer->scope() == BufferScope::kLocal ? "local" : "workspace";
        line(indent, str_cat("allocate ", to_string(*s->buffer), " ", scope, ":"));
        stmt(s->body, indent + 1);
        break;
      }
      case StmtKind::kLetIndex:
        line(indent, str_cat("let ", index_str(s->let_var), " = ", expr(s->value)));
        stmt(s->body, indent);
        break;
      case StmtKind::kParallelCall:
        line(indent, str_cat("parallel_call(region ", s->region, ", ", index_str(s->extent), ")"));
        break;
      case StmtKind::kNop:
        line(indent, "nop");
        break;
    }
  }

  void line(int indent, const std::string& text) {
    os_ << std::string(static_cast<size_t>(indent) * 2, ' ') << text << "\n";
  }

  std::string take() { return os_.str(); }

 private:
  std::ostringstream os_;
};

std::string signature(const PrimFunc& f) {
  std::string params;
  for (size_t i = 0; i < f.params.size(); ++i) {
    params += str_cat(i ? ", " : "", i >= f.num_inputs ? "out " : "", to_string(*f.params[i]));
  }
  return str_cat("def ", f.name, "(", params, "):");
}

}  // namespace

std::string to_string(const Buffer& b) {
  std::string dims;
  for (size_t i = 0; i < b.shape().size(); ++i) dims += (i ? ", " : "") + index_str(b.shape()[i]);
  return str_cat(b.name(), ": ", vm::dtype_name(b.dtype()), "[", dims, "]");
}

std::string to_string(const Expr& e) { return Printer().expr(e); }

std::string to_string(const Stmt& s) {
  Printer p;
  p.stmt(s, 0);
  return p.take();
}

std::string to_string(const PrimFunc& f) {
  Printer p;
  p.line(0, signature(f));
  p.stmt(f.body, 1);
  return p.take();
}

std::string to_string(const LoweredFunc& f) {
  Printer p;
  p.line(0, signature(f.func));
  p.stmt(f.func.body, 1);
  for (size_t i = 0; i < f.regions.size(); ++i) {
    const ParallelRegion& r = f.regions[i];
    std::string captures;
    for (const auto& v : r.captured_vars)
      captures += str_cat(captures.empty() ? "" : ", ", index_str(v));
    for (const auto& b : r.captured_buffers) {
      captures += str_cat(captures.empty() ? "" : ", ", b->name());
    }
    p.line(0, str_cat("region ", i, " ", r.name, "(", index_str(r.loop_var), "; captures ",
                      captures.empty() ? "nothing" : captures, "):"));
    p.stmt(r.body, 1);
  }
  return p.take();
}

std::ostream& operator<<(std::ostream& os, const Expr& e) { return os << to_string(e); }
std::ostream& operator<<(std::ostream& os, const Stmt& s) { return os << to_string(s); }

}  // namespace dynvm::tir
