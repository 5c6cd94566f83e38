// The graph IR printer (see printer.h).
#include "compiler/ir/printer.h"

#include <set>
#include <sstream>
#include <unordered_map>

#include "compiler/ir/functor.h"
#include "compiler/ir/tensor_text.h"
#include "kernels/tir/arith_util.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

std::string sanitize(const std::string& hint) {
  std::string out;
  for (char c : hint) {
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  }
  return out.empty() ? "v" : out;
}

class Printer {
 public:
  explicit Printer(const PrintOptions& options) : options_(options) {}

  void function(const Function& f, std::ostream& os) {
    names_.clear();
    used_.clear();
    os << "fn @" << f.name << "(" << params(f.params) << ")";
    if (f.result_type.defined()) os << " -> " << to_string(f.result_type);
    if (f.primitive) os << " primitive";
    os << " ";
    block(f.body, 0, os);
    os << "\n";
  }

  std::string inline_expr(const Expr& e, int indent) {
    std::ostringstream os;
    value(e, indent, os);
    return os.str();
  }

 private:
  std::string params(const std::vector<Expr>& ps) {
    std::string out;
    for (size_t i = 0; i < ps.size(); ++i) {
      out += (i ? ", " : "") + bind(ps[i]);
      if (ps[i].type().defined()) out += ": " + to_string(ps[i].type());
    }
    return out;
  }

  // A fresh unique name for a var being bound.
  std::string bind(const Expr& var) {
    std::string base = "%" + sanitize(var->name), name = base;
    for (int k = 1; used_.count(name); ++k) name = base + "_" + std::to_string(k);
    used_.insert(name);
    names_[var->var_id] = name;
    return name;
  }

  std::string var_name(const Expr& var) {
    auto it = names_.find(var->var_id);
    return it != names_.end() ? it->second : bind(var);  // free var: named on first use
  }

  // `{`, one line per let binding, `return e`, `}`.
  void block(const Expr& body, int indent, std::ostream& os) {
    std::string pad(static_cast<size_t>(indent + 2), ' ');
    os << "{\n";
    LetChain chain = flatten_lets(body);
    for (const Binding& b : chain.bindings) {
      std::string value_text = inline_expr(b.value, indent + 2);  // before binding: no recursion
      os << pad << bind(b.var);
      const Type& t = b.var.type().defined() ? b.var.type() : b.value.type();
      if (options_.types && t.defined()) os << ": " << to_string(t);
      os << " = " << value_text << "\n";
    }
    os << pad << "return " << inline_expr(chain.body, indent + 2) << "\n"
       << std::string(static_cast<size_t>(indent), ' ') << "}";
  }

  void args(const std::vector<Expr>& es, size_t from, int indent, std::ostream& os) {
    for (size_t i = from; i < es.size(); ++i) {
      if (i > from) os << ", ";
      value(es[i], indent, os);
    }
  }

  void value(const Expr& e, int indent, std::ostream& os) {
    switch (e.kind()) {
      case ExprKind::kVar:
        os << var_name(e);
        return;
      case ExprKind::kConstant:
        constant(e->value, os);
        return;
      case ExprKind::kCall:
        os << e->name << "(";
        args(e->operands, 0, indent, os);
        os << ")";
        if (!e->attrs.empty()) {
          os << " {";
          bool first = true;
          for (const auto& [k, v] : e->attrs) {
            os << (first ? "" : ", ") << k << "=" << to_string(v);
            first = false;
          }
          os << "}";
        }
        return;
      case ExprKind::kTuple:
        os << "(";
        args(e->operands, 0, indent, os);
        os << (e->operands.size() == 1 ? ",)" : ")");
        return;
      case ExprKind::kGetItem: {
        const Expr& t = e->operands[0];
        bool simple = t.kind() == ExprKind::kVar || t.kind() == ExprKind::kTuple ||
                      t.kind() == ExprKind::kCall || t.kind() == ExprKind::kGetItem ||
                      t.kind() == ExprKind::kCallFunction;
        if (!simple) os << "(";
        value(t, indent, os);
        if (!simple) os << ")";
        os << "." << e->index;
        return;
      }
      case ExprKind::kLet:
        block(e, indent, os);
        return;
      case ExprKind::kIf:
        os << "if ";
        value(e->operands[0], indent, os);
        os << " ";
        block(e->operands[1], indent, os);
        os << " else ";
        block(e->operands[2], indent, os);
        return;
      case ExprKind::kLoop: {
        os << "loop(max_trip=";
        optional(loop_max_trip(e), indent, os);
        os << ", cond=";
        optional(loop_cond(e), indent, os);
        if (e->operands.size() > 2) os << ", ";
        args(e->operands, 2, indent, os);
        os << ") scan_outputs=" << e->index << " fn(" << params(e->body->params) << ") ";
        block(e->body->body, indent, os);
        return;
      }
      case ExprKind::kCallFunction:
        os << "@" << e->name << "(";
        args(e->operands, 0, indent, os);
        os << ")";
        return;
    }
  }

  void optional(const Expr& e, int indent, std::ostream& os) {
    if (e.defined()) {
      value(e, indent, os);
    } else {
      os << "none";
    }
  }

  void constant(const vm::Tensor& t, std::ostream& os) {
    os << tensor_text(t, options_.max_constant_elements);
  }

  const PrintOptions& options_;
  std::unordered_map<uint64_t, std::string> names_;
  std::set<std::string> used_;
};

// Every dim symbol the module's types mention, in first-use order.
void collect_dims(const Type& t, std::vector<arith::Var>* out, std::set<arith::VarId>* seen) {
  if (!t.defined()) return;
  for (const Dim& d : t->dims) {
    if (d.is_any()) continue;
    tir::for_each_var(d.expr(), [&](const arith::Expr& v) {
      if (seen->insert(v->var_id).second) out->push_back(arith::Var(v));
    });
  }
  for (const Type& f : t->fields) collect_dims(f, out, seen);
  for (const Type& r : t->results) collect_dims(r, out, seen);
}

void collect_dims(const Expr& e, std::vector<arith::Var>* out, std::set<arith::VarId>* seen) {
  if (!e.defined()) return;
  collect_dims(e.type(), out, seen);
  for (const Expr& o : e->operands) collect_dims(o, out, seen);
  if (e.kind() == ExprKind::kLoop) {
    for (const Expr& p : e->body->params) collect_dims(p, out, seen);
    collect_dims(e->body->body, out, seen);
  }
}

}  // namespace

std::string print_function(const Function& function, const PrintOptions& options) {
  std::ostringstream os;
  Printer(options).function(function, os);
  return os.str();
}

std::string print_module(const Module& module, const PrintOptions& options) {
  std::ostringstream os;
  std::vector<arith::Var> dims;
  std::set<arith::VarId> seen;
  for (const DimSymbol& d : module.dims) {
    seen.insert(d.var.id());
    dims.push_back(d.var);
  }
  for (const auto& f : module.functions) {
    for (const Expr& p : f->params) collect_dims(p, &dims, &seen);
    collect_dims(f->body, &dims, &seen);
    collect_dims(f->result_type, &dims, &seen);
  }
  for (const arith::Var& v : dims) {
    os << "dim " << v.name();
    if (const DimSymbol* d = module.find_dim(v.name()); d != nullptr && d->var.id() == v.id()) {
      os << ": " << d->min << "..";
      if (d->max != std::numeric_limits<int64_t>::max()) os << d->max;
    }
    os << "\n";
  }
  if (module.entry != "main") os << "entry @" << module.entry << "\n";
  for (const auto& f : module.functions) {
    os << "\n";
    Printer(options).function(*f, os);
  }
  return os.str();
}

std::string print_expr(const Expr& e, const PrintOptions& options) {
  return Printer(options).inline_expr(e, 0);
}

}  // namespace dynvm::compiler
