// Type inference (see infer_types.h).
#include "compiler/passes/infer_types.h"

#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "compiler/ir/fresh_copy.h"
#include "compiler/ir/functor.h"
#include "compiler/ir/printer.h"
#include "compiler/op/ops_sequence.h"
#include "compiler/op/registry.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

// What is known about a value: facts of a tensor, or those of a tuple's fields.
struct Info {
  ValueFacts facts;
  std::vector<Info> fields;  // a tuple's
  Type type() const { return facts.type; }
};

Info tensor_info(ValueFacts f) { return Info{std::move(f), {}}; }

Info tuple_info(std::vector<Info> fields) {
  std::vector<Type> types;
  for (const Info& f : fields) types.push_back(f.type());
  Info i;
  i.facts.type = tuple_type(types);
  i.fields = std::move(fields);
  return i;
}

// A run-time error in place of a value (lowered to Fatal with its `message`).
constexpr const char* kUnreachable = "dynvm.Unreachable";

// An If whose branches' types have no join (ranks or dtypes differ) and whose condition
// the dims do not decide: caught where the If is bound, whose continuation then moves into
// the branches (TypeInferencer::visit_let).
class BranchesDiffer : public UserError {
 public:
  using UserError::UserError;
};

int64_t integer_element(const vm::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case vm::DType::kInt64:
      return t.data_as<int64_t>()[i];
    case vm::DType::kInt32:
      return t.data_as<int32_t>()[i];
    case vm::DType::kInt16:
      return t.data_as<int16_t>()[i];
    case vm::DType::kInt8:
      return t.data_as<int8_t>()[i];
    case vm::DType::kUInt8:
    case vm::DType::kBool:
      return t.data_as<uint8_t>()[i];
    case vm::DType::kUInt16:
      return t.data_as<uint16_t>()[i];
    case vm::DType::kUInt32:
      return t.data_as<uint32_t>()[i];
    default:
      return static_cast<int64_t>(t.data_as<uint64_t>()[i]);
  }
}

// The join of two types at an If or a loop back edge: same structure, dims that differ
// become Any. UserError when dtypes, ranks or tuple shapes differ.
Type join(const Type& a, const Type& b, const std::string& where) {
  if (!a.defined() || !b.defined()) user_error(where, ": a value has no type");
  if (a.kind() != b.kind()) user_error(where, ": ", to_string(a), " vs ", to_string(b));
  if (a.kind() == TypeKind::kTuple) {
    if (a->fields.size() != b->fields.size()) {
      user_error(where, ": ", to_string(a), " vs ", to_string(b));
    }
    std::vector<Type> fields;
    for (size_t k = 0; k < a->fields.size(); ++k)
      fields.push_back(join(a->fields[k], b->fields[k], where));
    return tuple_type(fields);
  }
  if (a.kind() == TypeKind::kOptional) {
    return optional_type(join(a->fields[0], b->fields[0], where));
  }
  if (a.kind() == TypeKind::kSequence) {
    if (a->dtype != b->dtype) user_error(where, ": ", to_string(a), " vs ", to_string(b));
    if (a->no_elements) return b;  // any element type fits a sequence known to be empty
    if (b->no_elements) return a;
    const Type* ea = element_type(a);
    const Type* eb = element_type(b);
    return sequence_type(a->dtype, ea && eb ? join_elements(*ea, *eb) : Type());
  }
  if (a->dtype != b->dtype || a->dims.size() != b->dims.size()) {
    user_error(where, ": ", to_string(a), " vs ", to_string(b));
  }
  std::vector<Dim> dims;
  for (size_t k = 0; k < a->dims.size(); ++k) {
    dims.push_back(a->dims[k].same_as(b->dims[k]) ? a->dims[k] : Dim::any());
  }
  return tensor_type(a->dtype, dims);
}

Info join_info(const Info& a, const Info& b, const std::string& where) {
  if (!a.fields.empty() || !b.fields.empty()) {
    if (a.fields.size() != b.fields.size()) {
      user_error(where, ": ", to_string(a.type()), " vs ", to_string(b.type()));
    }
    std::vector<Info> fields;
    for (size_t k = 0; k < a.fields.size(); ++k)
      fields.push_back(join_info(a.fields[k], b.fields[k], where));
    return tuple_info(fields);
  }
  Info out;
  out.facts.type = join(a.type(), b.type(), where);
  if (a.facts.value && b.facts.value && a.facts.value->size() == b.facts.value->size()) {
    std::vector<Dim> v;
    for (size_t k = 0; k < a.facts.value->size(); ++k) {
      const Dim& x = (*a.facts.value)[k];
      v.push_back(x.same_as((*b.facts.value)[k]) ? x : Dim::any());
    }
    out.facts.value = v;
  }
  return out;
}

// A mutator that types every node it rebuilds. Besides the typed expression, each visit
// leaves what is known about its value in `info_` (read right after, by `typed`).
class TypeInferencer : public ExprMutator {
 public:
  explicit TypeInferencer(const Module& m) : module_(m) {
    // No tensor dim comes near 2^48 elements (that many bytes are 256 TiB), and knowing
    // it lets clamps against "past the end" (Slice's 2^48) drop out of the types.
    constexpr int64_t kLargestDim = int64_t{1} << 48;
    for (const DimSymbol& d : m.dims) {
      analyzer_.bind(d.var, d.min, std::max(d.min, std::min(d.max, kLargestDim)));
    }
  }

  // What was known about each let-bound tensor, after run().
  std::unordered_map<uint64_t, ValueFacts> take_facts() { return std::move(facts_); }
  std::unordered_map<arith::VarId, RuntimeSymbol> take_symbols() { return std::move(symbols_); }
  std::unordered_map<uint64_t, std::vector<RunCheck>> take_checks() { return std::move(checks_); }
  std::vector<std::string> take_warnings() { return std::move(warnings_); }

  Module run() {
    Module out;
    out.dims = module_.dims;
    out.entry = module_.entry;
    for (const auto& f : module_.functions) {
      std::vector<Info> args;
      for (const Expr& p : f->params) {
        if (!p.type().defined()) user_error("@", f->name, ": parameter %", p->name, " has no type");
        args.push_back(info_of_type(simplified(p.type())));
      }
      out.functions.push_back(function(*f, args).first);
    }
    return out;
  }

 private:
  // t with its dims simplified over the dims' declared ranges.
  Type simplified(const Type& t) const {
    if (t.kind() == TypeKind::kTuple) {
      std::vector<Type> fields;
      for (const Type& f : t->fields) fields.push_back(simplified(f));
      return tuple_type(fields);
    }
    if (t.kind() != TypeKind::kTensor) return t;
    std::vector<Dim> dims;
    for (const Dim& d : t->dims) dims.push_back(d.is_any() ? d : Dim(analyzer_.simplify(d.expr())));
    return tensor_type(t->dtype, dims);
  }

  static Info info_of_type(const Type& t) {
    if (t.kind() == TypeKind::kTuple) {
      std::vector<Info> fields;
      for (const Type& f : t->fields) fields.push_back(info_of_type(f));
      return tuple_info(fields);
    }
    return tensor_info(ValueFacts{t, std::nullopt, {}});
  }

  // The function typed for `args`, and the info of its result.
  std::pair<std::shared_ptr<Function>, Info> function(const Function& f,
                                                      const std::vector<Info>& args) {
    if (active_.count(f.name)) {
      user_error("@", f.name, " is called recursively; recursion is not supported yet");
    }
    active_.insert(f.name);
    SizesScope scope(sizes_);
    struct Leave {  // also when typing fails (a failed If branch is caught and compiling goes on)
      std::set<std::string>& active;
      const std::string& name;
      ~Leave() { active.erase(name); }
    } leave{active_, f.name};
    auto typed = std::make_shared<Function>();
    typed->name = f.name;
    for (size_t k = 0; k < f.params.size(); ++k) {
      typed->params.push_back(bind(f.params[k], args[k]));
    }
    auto [body, info] = typed_expr(f.body);
    typed->body = body;
    typed->result_type = info.type();
    typed->result_names = f.result_names;
    return {typed, info};
  }

  // `var` bound to `info`; dims nobody could follow (Any: an If whose branches differ, a
  // Loop's trip count) become run-time symbols read from the value's shape.
  Expr bind(const Expr& var, Info info) {
    name_unknown_dims(&info, var, var->name, 0);
    env_[var->var_id] = info;
    add_sizes(info.type());
    return with_type(var, info.type());
  }

  // A bound tensor's dims are sizes from here to the end of its scope (KnownSizes).
  void add_sizes(const Type& t) {
    if (!t.defined()) return;
    if (t.kind() == TypeKind::kTuple) {
      for (const Type& f : t->fields) add_sizes(f);
    } else if (t.kind() == TypeKind::kTensor) {
      for (const Dim& d : t->dims) {
        if (!d.is_any() && !d.is_const()) sizes_.add(d.expr());
      }
    }
  }

  // The sizes a branch, a loop body or a function learns are forgotten when it ends.
  struct SizesScope {
    explicit SizesScope(KnownSizes& s) : sizes(s), mark(s.mark()) {}
    ~SizesScope() { sizes.restore(mark); }
    KnownSizes& sizes;
    size_t mark;
  };

  void name_unknown_dims(Info* info, const Expr& var, const std::string& name, size_t field) {
    if (!info->fields.empty()) {
      for (size_t k = 0; k < info->fields.size(); ++k)
        name_unknown_dims(&info->fields[k], var, str_cat(name, ".", k), k);
      *info = tuple_info(info->fields);
      return;
    }
    const Type& t = info->type();
    if (!t.is_tensor()) return;
    std::vector<Dim> dims = t->dims;
    bool named = false;
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      if (!dims[axis].is_any()) continue;
      arith::Var sym(str_cat(name, ".dim", axis));
      symbols_[sym.id()] = {var->var_id, field, RuntimeSymbol::Kind::kDim,
                            static_cast<int64_t>(axis)};
      dims[axis] = Dim(sym);
      named = true;
    }
    if (named) info->facts.type = tensor_type(t->dtype, dims);
  }

  // Input `i` of a call (`operand`, typed; `f`, its facts) as one run-time symbol per
  // element: for small integer vectors computed at run time (ctx.values()). Later uses of
  // the same variable share them.
  std::optional<std::vector<Dim>> symbolize(const Expr& operand, const ValueFacts& f) {
    uint64_t var = 0;
    size_t field = 0;
    bool is_field = false;
    std::string name;
    if (operand.kind() == ExprKind::kVar) {
      var = operand->var_id;
      name = operand->name;
    } else if (operand.kind() == ExprKind::kGetItem &&
               operand->operands[0].kind() == ExprKind::kVar) {
      var = operand->operands[0]->var_id;
      field = static_cast<size_t>(operand->index);
      is_field = true;
      name = str_cat(operand->operands[0]->name, ".", field);
    }
    if (var == 0 || f.absent() || !f.type.is_tensor()) return std::nullopt;
    if (f.type->dtype != vm::DType::kInt64 && f.type->dtype != vm::DType::kInt32) {
      return std::nullopt;
    }
    if (f.type->dims.size() > 1) return std::nullopt;
    int64_t n = 1;
    for (const Dim& d : f.type->dims) {
      if (!d.is_const()) return std::nullopt;
      n = d.value();
    }
    if (n == 0) return std::vector<Dim>{};  // nothing to read
    if (n < 0 || n > kMaxTrackedElements) return std::nullopt;
    std::vector<Dim> value;
    for (int64_t k = 0; k < n; ++k) {
      arith::Var sym(f.type->dims.empty() ? name : str_cat(name, "[", k, "]"));
      symbols_[sym.id()] = {var, field, RuntimeSymbol::Kind::kElement, k};
      value.emplace_back(sym);
    }
    auto it = env_.find(var);
    if (it != env_.end()) {
      Info& info = is_field ? it->second.fields.at(field) : it->second;
      if (!info.facts.value) info.facts.value = value;
    }
    return value;
  }

  // `e` typed, and what is known about its value.
  std::pair<Expr, Info> typed_expr(const Expr& e) {
    Expr t = mutate(e);
    return {t, info_};
  }
  // Each of `es` typed, in order.
  void typed_all(const std::vector<Expr>& es, std::vector<Expr>* exprs, std::vector<Info>* infos) {
    for (const Expr& x : es) {
      auto [xe, xi] = typed_expr(x);
      exprs->push_back(std::move(xe));
      infos->push_back(std::move(xi));
    }
  }
  Expr result(std::pair<Expr, Info> typed) {
    info_ = std::move(typed.second);
    return std::move(typed.first);
  }

  Expr visit_var(const Expr& e) override {
    auto it = env_.find(e->var_id);
    if (it == env_.end()) user_error("infer types: %", e->name, " is used but never bound");
    info_ = it->second;
    return with_type(e, it->second.type());
  }
  Expr visit_constant(const Expr& e) override {
    info_ = constant(e->value);
    return e;
  }
  Expr visit_call(const Expr& e) override { return result(call(e)); }
  Expr visit_tuple(const Expr& e) override {
    std::vector<Expr> fields;
    std::vector<Info> infos;
    typed_all(e->operands, &fields, &infos);
    info_ = tuple_info(infos);
    return make_tuple(fields, info_.type());
  }
  Expr visit_get_item(const Expr& e) override {
    auto [te, ti] = typed_expr(e->operands[0]);
    if (ti.type().kind() != TypeKind::kTuple) {
      user_error(where_, ": .", e->index, " of a non-tuple (", to_string(ti.type()), ")");
    }
    if (static_cast<size_t>(e->index) >= ti.fields.size()) {
      user_error(where_, ": .", e->index, " of a ", ti.fields.size(), "-tuple");
    }
    info_ = ti.fields[static_cast<size_t>(e->index)];
    return make_get_item(te, e->index, info_.type());
  }
  // The chain's bindings one by one (the base walks it); the body's info is the chain's.
  Binding rewrite_binding(const Expr& var, const Expr& value) override {
    std::string saved = where_;
    uint64_t saved_var = binding_var_;
    where_ = "%" + var->name;
    binding_var_ = var->var_id;
    auto [ve, vi] = typed_expr(value);
    where_ = saved;
    binding_var_ = saved_var;
    Expr typed_var = bind(var, vi);
    const Info& bound = env_.at(var->var_id);
    if (bound.fields.empty() && bound.type().is_tensor()) facts_[var->var_id] = bound.facts;
    return {typed_var, ve};
  }
  Expr visit_if(const Expr& e) override { return result(if_expr(e)); }
  Expr visit_loop(const Expr& e) override { return result(loop(e)); }
  Expr visit_call_function(const Expr& e) override {
    const Function* callee = module_.find_function(e->name);
    if (callee == nullptr) user_error(where_, ": call of unknown function @", e->name);
    std::vector<Expr> args;
    std::vector<Info> infos;
    typed_all(e->operands, &args, &infos);
    if (args.size() != callee->params.size()) {
      user_error(where_, ": @", e->name, " takes ", callee->params.size(), " arguments, got ",
                 args.size());
    }
    Info r = function(*callee, infos).second;
    info_ = r;
    return make_call_function(e->name, args, r.type());
  }

  static Info constant(const vm::Tensor& t) {
    std::vector<Dim> dims;
    for (int64_t d : t.shape()) dims.emplace_back(d);
    Info i;
    i.facts.type = tensor_type(t.dtype(), dims);
    i.facts.constant = t;
    if ((vm::is_integer(t.dtype()) || t.dtype() == vm::DType::kBool) &&
        t.numel() <= kMaxTrackedElements) {
      std::vector<Dim> v;
      for (int64_t k = 0; k < t.numel(); ++k) v.emplace_back(integer_element(t, k));
      i.facts.value = v;
    }
    return i;
  }

  std::pair<Expr, Info> call(const Expr& e) {
    const std::string where = str_cat(where_.empty() ? "" : where_ + " = ", e->name);
    if (e->name == kUnreachable) {
      // Typed by the If it is a branch of (if_expr); one that is always taken is the error.
      if (!e.type().defined()) {
        user_error(where, ": ", attr_string(e->attrs, "message", "unreachable", where));
      }
      return {e, info_of_type(e.type())};
    }
    const OpDef* op = find_op(e->name);
    if (op == nullptr) user_error(where, ": no operator named ", e->name);
    if (e->operands.size() < op->min_inputs || e->operands.size() > op->max_inputs) {
      user_error(where, ": takes ", op->min_inputs, "..", op->max_inputs, " inputs, got ",
                 e->operands.size());
    }
    std::vector<Expr> args;
    std::vector<ValueFacts> facts;
    for (const Expr& a : e->operands) {
      auto [ae, ai] = typed_expr(a);
      args.push_back(ae);
      bool absent = ae.kind() == ExprKind::kTuple && ae->operands.empty();
      if (!absent &&
          (ai.type().kind() == TypeKind::kTuple || ai.type().kind() == TypeKind::kFunc)) {
        user_error(where, ": an input is a tuple (", to_string(ai.type()), ")");
      }
      facts.push_back(absent ? ValueFacts{} : ai.facts);
    }
    OpContext ctx(where, e->attrs, facts, analyzer_);
    ctx.set_known_sizes(&sizes_);
    ctx.set_symbolizer([&](size_t i) { return symbolize(args.at(i), facts.at(i)); });
    std::vector<ValueFacts> outputs = op->infer(ctx);
    // Dims computed from run-time values may come out negative: checked before the op runs.
    // A dim of a tensor in scope is a size already (KnownSizes): an elementwise op over a
    // conv's output has nothing left to check.
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!outputs[k].type.is_tensor()) continue;
      for (const Dim& d : outputs[k].type->dims) {
        if (d.is_any() || d.is_const() || ctx.is_known_size(d)) continue;
        ctx.require(arith::ge(d.expr(), 0), "output ", k, " would have the negative dim ",
                    to_string(d));
      }
    }
    for (RunCheck& c : ctx.take_checks()) checks_[binding_var_].push_back(std::move(c));
    Info result;
    auto num = e->attrs.find("num_outputs");
    if (num != e->attrs.end()) {
      int64_t n = attr_int(e->attrs, "num_outputs", 1, where);
      if (n < 1 || static_cast<size_t>(n) > outputs.size()) {
        user_error(where, ": num_outputs ", n, " but the operator has ", outputs.size());
      }
      std::vector<Info> fields;
      for (int64_t k = 0; k < n; ++k)
        fields.push_back(tensor_info(outputs[static_cast<size_t>(k)]));
      result = tuple_info(fields);
    } else {
      result = tensor_info(outputs.at(0));
    }
    return {make_call(e->name, args, e->attrs, result.type()), result};
  }

  // f() with the sizes it learns forgotten after (a branch's).
  template <typename F>
  auto scoped(F f) {
    SizesScope scope(sizes_);
    return f();
  }

  std::pair<Expr, Info> if_expr(const Expr& e) {
    const std::string where = where_.empty() ? "if" : where_ + " = if";
    auto [ce, ci] = typed_expr(e->operands[0]);
    if (!ci.type().is_tensor() || ci.type()->dtype != vm::DType::kBool) {
      user_error(where, ": the condition is ", to_string(ci.type()), ", expected bool");
    }
    // A condition decided for every size the dims' ranges allow: the If is its branch.
    if (ci.facts.value && ci.facts.value->size() == 1 && (*ci.facts.value)[0].is_const()) {
      return typed_expr(e->operands[(*ci.facts.value)[0].value() != 0 ? 1 : 2]);
    }
    // version_entry's dispatch (a chain of Ifs ending in a run-time error): every version
    // must type, and the final error takes the last version's type.
    if (is_dispatch(e)) {
      auto [te, ti] = scoped([&] { return version(e->operands[1]); });
      if (untyped_error(e->operands[2])) {
        Expr fails = with_type(e->operands[2], ti.type());
        return {make_if(ce, te, fails, ti.type()), ti};
      }
      auto [ee, ei] = scoped([&] { return typed_expr(e->operands[2]); });
      Info joined = join_info(ti, ei, where + ": the versions' result types differ");
      return {make_if(ce, te, ee, joined.type()), joined};
    }
    // A branch that cannot be typed for the declared dims (exporters keep paths for other
    // input sizes, e.g. Silero's 8 kHz path fed 512-sample chunks) cannot run for them
    // either: it becomes a run-time error, reported if that branch is ever taken, and the
    // compile goes on with the other branch's type.
    // (Unless a branch holds an If that only its enclosing continuation can resolve:
    // visit_let tries that first.)
    std::optional<std::string> then_error, else_error;
    std::pair<Expr, Info> then_typed, else_typed;
    try {
      then_typed = scoped([&] { return typed_expr(e->operands[1]); });
    } catch (const BranchesDiffer& error) {
      if (split_continuations_) throw;
      then_error = error.what();
    } catch (const UserError& error) {
      then_error = error.what();
    }
    try {
      else_typed = scoped([&] { return typed_expr(e->operands[2]); });
    } catch (const BranchesDiffer& error) {
      if (split_continuations_) throw;
      else_error = error.what();
    } catch (const UserError& error) {
      else_error = error.what();
    }
    if (then_error && else_error) throw UserError(*then_error);
    if (then_error || else_error) {
      const std::string& why = then_error ? *then_error : *else_error;
      const Info& good = then_error ? else_typed.second : then_typed.second;
      warnings_.push_back(str_cat(where, ": the ", then_error ? "then" : "else",
                                  " branch cannot run for the declared dims and fails if taken (",
                                  why, ")"));
      Expr unreachable =
          make_call(kUnreachable, {},
                    {{"message", str_cat(where,
                                         ": this branch cannot run for the dims the model was "
                                         "compiled for (",
                                         why, ")")}},
                    good.type());
      Expr te = then_error ? unreachable : then_typed.first;
      Expr ee = else_error ? unreachable : else_typed.first;
      return {make_if(ce, te, ee, good.type()), good};
    }
    auto& [te, ti] = then_typed;
    auto& [ee, ei] = else_typed;
    Info joined;
    try {
      joined =
          join_info(ti, ei,
                    where +
                        ": the branches' types differ and the condition depends on run-time "
                        "values or on dims whose declared ranges do not decide it (bound them with "
                        "--dim)");
    } catch (const UserError& error) {
      throw BranchesDiffer(error.what());
    }
    return {make_if(ce, te, ee, joined.type()), joined};
  }

  // A let chain. A binding `%v = if c {A} else {B}` whose branches' types have no join
  // (a rank that depends on a dim: `if n == 1 then squeeze`) is typed as
  //
  //   if c { %v = A; <the rest of the chain> } else { %v' = B; <a fresh copy of the rest> }
  //
  // so that each copy of the continuation is typed with its branch's type; where the copies
  // reach types that join again (the model's outputs, a later reduction), the code after
  // that point is duplicated, not different. Nested Ifs split inside their own chain first;
  // one that cannot be resolved there moves up to the binding of the If around it. If no
  // split resolves it, the binding is typed as before: a branch that cannot be typed becomes
  // a run-time error (if_expr), or the join's error is reported.
  Expr visit_let(const Expr& e) override {
    std::vector<Binding> done;
    Expr cur = e;
    for (; cur.kind() == ExprKind::kLet; cur = cur->operands[2]) {
      const Expr& var = cur->operands[0];
      const Expr& value = cur->operands[1];
      if (value.kind() != ExprKind::kIf || is_dispatch(value)) {
        done.push_back(rewrite_binding(var, value));
        continue;
      }
      try {
        done.push_back(rewrite_binding(var, value));
        continue;
      } catch (const BranchesDiffer&) {
        // split below, outside the handler
      }
      const bool saved = split_continuations_;
      try {
        split_continuations_ = true;
        Expr typed = mutate(split_continuation(var, value, cur->operands[2]));
        split_continuations_ = saved;
        return make_let_chain(done, typed);
      } catch (const BranchesDiffer&) {
        // typed alone below
      }
      // Not resolved by splitting here: the binding typed alone, as if_expr does it.
      split_continuations_ = false;
      try {
        done.push_back(rewrite_binding(var, value));
      } catch (...) {
        split_continuations_ = saved;
        throw;
      }
      split_continuations_ = saved;
    }
    Expr body = mutate(cur);  // its info is the chain's
    return make_let_chain(done, body);
  }

  // if c { <A's bindings>; %v = <A's result>; rest } else { the same with B and a fresh
  // copy of rest, %v renamed }.
  static Expr split_continuation(const Expr& var, const Expr& if_value, const Expr& rest) {
    auto branch = [](const Expr& v, const Expr& taken, const Expr& continuation) {
      LetChain chain = flatten_lets(taken);
      chain.bindings.push_back({v, chain.body});
      return make_let_chain(chain.bindings, continuation);
    };
    Expr other = make_var(var->name);
    return make_if(if_value->operands[0], branch(var, if_value->operands[1], rest),
                   branch(other, if_value->operands[2], fresh_copy(rest, {{var->var_id, other}})));
  }

  // Whether an If whose branches do not join may move its continuation into them
  // (visit_let); off while a binding is typed the old way after that failed.
  bool split_continuations_ = true;

  // A call of dynvm.Unreachable not yet typed: version_entry's final else.
  static bool untyped_error(const Expr& e) {
    return e.kind() == ExprKind::kCall && e->name == kUnreachable && !e.type().defined();
  }
  static bool is_dispatch(const Expr& e) {
    return e.kind() == ExprKind::kIf &&
           (untyped_error(e->operands[2]) || is_dispatch(e->operands[2]));
  }

  // One version of the entry (version_entry.h), its errors naming the version.
  std::pair<Expr, Info> version(const Expr& branch) {
    std::string label;
    if (branch.kind() == ExprKind::kLet && branch->operands[1].kind() == ExprKind::kCall &&
        branch->operands[1]->name == "dynvm.Refine") {
      const Attrs& a = branch->operands[1]->attrs;
      label = str_cat("the version for ", attr_string(a, "dim", "?", "dynvm.Refine"), " = ",
                      attr_int(a, "value", -1, "dynvm.Refine"), ": ");
    }
    const std::string saved = where_;
    try {
      return typed_expr(branch);
    } catch (const UserError& error) {
      where_ = saved;
      throw UserError(label + error.what());
    }
  }

  std::pair<Expr, Info> loop(const Expr& e) {
    const std::string where = where_.empty() ? "loop" : where_ + " = loop";
    Expr max_trip, cond;
    Info trip_info;
    if (loop_max_trip(e).defined()) std::tie(max_trip, trip_info) = typed_expr(loop_max_trip(e));
    // A condition that starts true and that the body maps true -> true stays true (by
    // induction), so such a loop runs exactly max_trip times, like one without a condition
    // (exporters always pass cond = true).
    bool cond_starts_true = true;
    if (loop_cond(e).defined()) {
      Info ci;
      std::tie(cond, ci) = typed_expr(loop_cond(e));
      cond_starts_true = ci.facts.value && ci.facts.value->size() == 1 &&
                         (*ci.facts.value)[0].is_const() && (*ci.facts.value)[0].value() != 0;
    }
    std::vector<Expr> init;
    std::vector<Info> carried;
    typed_all(loop_carried(e), &init, &carried);
    const Function& body = *e->body;
    // Generalize the carried types until the body maps them onto themselves.
    std::pair<std::shared_ptr<Function>, Info> typed;
    for (int round = 0;; ++round) {
      std::vector<Info> args{
          tensor_info({tensor_type(vm::DType::kInt64, {}), std::nullopt, {}}),
          tensor_info({tensor_type(vm::DType::kBool, {}),
                       cond_starts_true ? std::optional<std::vector<Dim>>(std::vector<Dim>{Dim(1)})
                                        : std::nullopt,
                       {}})};
      for (const Info& c : carried) {
        Info plain;  // values and constants change between iterations
        plain.facts.type = c.type();
        plain.fields = c.fields;
        args.push_back(plain);
      }
      typed = function(body, args);
      const Info& out = typed.second;
      if (out.fields.size() < carried.size() + 1) {
        user_error(where, ": the body returns ", out.fields.size(), " values, expected at least ",
                   carried.size() + 1);
      }
      bool stable = true;
      for (size_t k = 0; k < carried.size(); ++k) {
        Type j = join(carried[k].type(), out.fields[k + 1].type(),
                      where + " (carried value " + std::to_string(k) + ")");
        if (!type_equal(j, carried[k].type())) stable = false;
        carried[k] = info_of_type(j);
      }
      if (stable) break;
      DYNVM_INTERNAL_CHECK(round < 8, "loop types do not settle");
    }
    const Info& out = typed.second;
    const size_t scans = out.fields.size() - 1 - carried.size();
    if (static_cast<int64_t>(scans) != e->index) {
      user_error(where, ": the body returns ", scans, " scan outputs, the loop declares ",
                 e->index);
    }
    Dim trips = Dim::any();
    const auto& next_cond = out.fields[0].facts.value;
    const bool cond_stays_true = cond_starts_true && next_cond && next_cond->size() == 1 &&
                                 (*next_cond)[0].is_const() && (*next_cond)[0].value() != 0;
    if ((!cond.defined() || cond_stays_true) && trip_info.facts.value &&
        trip_info.facts.value->size() == 1) {
      trips = (*trip_info.facts.value)[0];
    }
    std::vector<Info> results = carried;
    for (size_t k = 0; k < scans; ++k) {
      const Type& t = out.fields[1 + carried.size() + k].type();
      if (!t.is_tensor()) user_error(where, ": scan output ", k, " is not a tensor");
      std::vector<Dim> dims{trips};
      dims.insert(dims.end(), t->dims.begin(), t->dims.end());
      results.push_back(tensor_info({tensor_type(t->dtype, dims), std::nullopt, {}}));
    }
    Info result = tuple_info(results);
    return {make_loop(max_trip, cond, init, typed.first, e->index, result.type()), result};
  }

  const Module& module_;
  arith::Analyzer analyzer_;
  KnownSizes sizes_;
  std::unordered_map<uint64_t, Info> env_;
  std::unordered_map<uint64_t, ValueFacts> facts_;  // let-bound tensors, for lowering
  std::unordered_map<arith::VarId, RuntimeSymbol> symbols_;
  std::unordered_map<uint64_t, std::vector<RunCheck>> checks_;  // by binding variable
  uint64_t binding_var_ = 0;  // the let variable whose value is being typed
  std::vector<std::string> warnings_;
  std::set<std::string> active_;
  std::string where_;
  Info info_;  // of the expression visited last (typed_expr)
};

}  // namespace

PassResult infer_types(const TypedModule& in) {
  TypedModule out = infer_types_with_facts(in.module);
  std::string summary = str_cat(out.facts.size(), " tensor values typed");
  if (!out.warnings.empty()) summary += str_cat(", ", out.warnings.size(), " branches unreachable");
  return PassResult(std::move(out), true, summary);
}

TypedModule infer_types_with_facts(const Module& module) {
  TypeInferencer inferencer(module);
  TypedModule out;
  out.module = inferencer.run();
  out.facts = inferencer.take_facts();
  out.runtime_symbols = inferencer.take_symbols();
  out.checks = inferencer.take_checks();
  out.warnings = inferencer.take_warnings();
  return out;
}

ValueFacts operand_facts(const TypedModule& typed, const std::unordered_map<uint64_t, Type>& types,
                         const Expr& operand) {
  if (operand.kind() == ExprKind::kTuple && operand->operands.empty()) return {};
  ValueFacts f;
  f.type = operand.type();
  if (operand.kind() == ExprKind::kVar) {
    auto it = typed.facts.find(operand->var_id);
    if (it != typed.facts.end()) return it->second;
    auto t = types.find(operand->var_id);
    if (t != types.end()) f.type = t->second;
  } else if (operand.kind() == ExprKind::kConstant) {
    f.constant = operand->value;
  }
  return f;
}

}  // namespace dynvm::compiler
