// The kernel of a fused group (see fused_kernel.h).
#include "compiler/lower/fused_kernel.h"

#include <unordered_map>

#include "compiler/ir/functor.h"
#include "kernels/ops/elementwise.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

using ElementMath = std::function<tir::Expr(const std::vector<tir::Expr>&)>;

// Where a follower's operand comes from.
struct Source {
  enum class Kind : uint8_t { kMember, kInput, kImmediate };
  Kind kind = Kind::kMember;
  size_t index = 0;  // kMember: member number (0: the anchor); kInput: epilogue input number
  double value = 0;  // kImmediate
  vm::DType dtype = vm::DType::kFloat32;
};

struct Follower {
  ElementMath math;
  std::vector<Source> sources;  // in the order of the follower's kernel arguments
};

double scalar_value(const vm::Tensor& t) {
  switch (t.dtype()) {
    case vm::DType::kFloat32:
      return t.data_as<float>()[0];
    case vm::DType::kFloat64:
      return t.data_as<double>()[0];
    case vm::DType::kInt32:
      return t.data_as<int32_t>()[0];
    case vm::DType::kInt64:
      return static_cast<double>(t.data_as<int64_t>()[0]);
    default:
      user_error("a fused scalar constant of dtype ", vm::dtype_name(t.dtype()));
  }
}

std::string source_text(const Source& s) {
  switch (s.kind) {
    case Source::Kind::kMember:
      return "m" + std::to_string(s.index);
    case Source::Kind::kInput:
      return "e" + std::to_string(s.index);
    case Source::Kind::kImmediate:
      return std::string(vm::dtype_name(s.dtype)) + ":" + std::to_string(s.value);
  }
  return "";
}

}  // namespace

KernelBinding fused_binding(const Function& f, const std::vector<ValueFacts>& params,
                            const std::string& where) {
  std::unordered_map<uint64_t, size_t> param_of, member_of;
  for (size_t k = 0; k < f.params.size(); ++k) param_of[f.params[k]->var_id] = k;
  std::vector<Type> member_types;

  KernelBinding anchor;
  std::vector<size_t> extra;  // call arguments the epilogue reads, in order
  std::vector<Follower> followers;
  std::string key = "fused[";
  const LetChain members = flatten_lets(f.body);
  for (size_t m = 0; m < members.bindings.size(); ++m) {
    const Expr& var = members.bindings[m].var;
    const Expr& call = members.bindings[m].value;
    DYNVM_INTERNAL_CHECK(call.kind() == ExprKind::kCall, where, ": a fused member is not a call");
    const std::string at = where + " (" + call->name + ")";
    std::vector<ValueFacts> inputs;
    for (const Expr& o : call->operands) {
      ValueFacts facts;
      facts.type = o.type();
      if (o.kind() == ExprKind::kVar && param_of.count(o->var_id)) {
        facts = params.at(param_of[o->var_id]);
      } else if (o.kind() == ExprKind::kVar) {
        facts.type = member_types.at(member_of.at(o->var_id));
      } else if (o.kind() == ExprKind::kConstant) {
        facts.constant = o->value;
      } else if (o.kind() == ExprKind::kTuple && o->operands.empty()) {
        facts = {};  // absent
      }
      inputs.push_back(facts);
    }
    const BindFn* bind = find_binding(call->name);
    DYNVM_INTERNAL_CHECK(bind != nullptr, at, ": no binding");
    KernelBinding b = (*bind)(BindContext(at, call->attrs, inputs, {call.type()}));
    DYNVM_INTERNAL_CHECK(b.kind == LoweringKind::kKernel, at, ": a fused member without kernel");
    key += b.key + "(";
    if (m == 0) {
      for (size_t i : b.args) {
        const Expr& o = call->operands.at(i);
        DYNVM_INTERNAL_CHECK(o.kind() == ExprKind::kVar && param_of.count(o->var_id), at,
                             ": an anchor argument is not a parameter");
        anchor.args.push_back(param_of[o->var_id]);
        key += "p" + std::to_string(param_of[o->var_id]) + ",";
      }
      anchor.build = b.build;
    } else {
      Follower fw;
      std::vector<ops::TensorType> types;
      for (size_t i : b.args) {
        const Expr& o = call->operands.at(i);
        types.push_back(kernel_type(inputs[i].type, at));
        Source s;
        if (o.kind() == ExprKind::kConstant) {
          s.kind = Source::Kind::kImmediate;
          s.value = scalar_value(o->value);
          s.dtype = o->value.dtype();
        } else if (param_of.count(o->var_id)) {
          s.kind = Source::Kind::kInput;
          size_t p = param_of[o->var_id];
          auto pos = std::find(extra.begin(), extra.end(), p);
          s.index = static_cast<size_t>(pos - extra.begin());
          if (pos == extra.end()) extra.push_back(p);
        } else {
          s.index = member_of.at(o->var_id);
        }
        key += source_text(s) + ",";
        fw.sources.push_back(s);
      }
      fw.math = b.build(types).elementwise;
      DYNVM_INTERNAL_CHECK(fw.math != nullptr, at, ": a fused follower is not elementwise");
      followers.push_back(std::move(fw));
    }
    key += ");";
    member_of[var->var_id] = m;
    member_types.push_back(var.type());
  }
  key += "]";

  KernelBinding fused;
  fused.key = key;
  fused.args = anchor.args;
  const size_t num_anchor_args = anchor.args.size();
  fused.args.insert(fused.args.end(), extra.begin(), extra.end());
  fused.build = [anchor_build = anchor.build, num_anchor_args, followers,
                 num_members = followers.size() + 1](const std::vector<ops::TensorType>& types) {
    std::vector<ops::TensorType> anchor_types(types.begin(),
                                              types.begin() + static_cast<long>(num_anchor_args));
    ops::OpInstance anchor_op = anchor_build(anchor_types);
    DYNVM_INTERNAL_CHECK(anchor_op.with_epilogue != nullptr, "a fused anchor takes no epilogue");
    ops::FusedEpilogue epilogue;
    epilogue.name = "_fused" + std::to_string(num_members);
    for (size_t k = num_anchor_args; k < types.size(); ++k) {
      epilogue.inputs.push_back(te::placeholder("E" + std::to_string(k - num_anchor_args),
                                                types[k].shape, types[k].dtype));
    }
    epilogue.apply = [followers, inputs = epilogue.inputs](const tir::Expr& value,
                                                           const te::Indices& i) {
      std::vector<tir::Expr> values{value};
      for (const Follower& fw : followers) {
        std::vector<tir::Expr> xs;
        for (const Source& s : fw.sources) {
          switch (s.kind) {
            case Source::Kind::kMember:
              xs.push_back(values.at(s.index));
              break;
            case Source::Kind::kInput: {
              const te::TensorRef& t = inputs.at(s.index);
              xs.push_back(te::read(t, ops::broadcast_indices(t->shape(), i)));
              break;
            }
            case Source::Kind::kImmediate:
              xs.push_back(tir::make_const(tir::DataType{s.dtype, 1}, s.value));
              break;
          }
        }
        values.push_back(fw.math(xs));
      }
      return values.back();
    };
    return anchor_op.with_epilogue(epilogue);
  };
  return fused;
}

}  // namespace dynvm::compiler
