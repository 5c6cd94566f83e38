// A step function repeated over a sequence (steps.h).
#include "kernels/ops/steps.h"

#include <map>
#include <memory>
#include <utility>

#include "kernels/tir/functor.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

// Where one of the step's buffers lies in the kernel: `buffer` at `prefix` followed by the
// step's own indices.
struct Place {
  tir::BufferRef buffer;
  std::vector<arith::Expr> prefix;
};
using Places = std::map<const tir::Buffer*, Place>;

class Rebind : public tir::StmtMutator {
 public:
  explicit Rebind(const Places& places) : places_(places) {}

 protected:
  tir::Expr visit_buffer_load(const tir::Expr& e) override {
    tir::Expr load = tir::StmtMutator::visit_buffer_load(e);
    auto it = places_.find(load->buffer.get());
    if (it == places_.end()) return load;
    DYNVM_INTERNAL_CHECK(load.type().lanes == 1, "over_steps: runs before vectorization");
    return tir::buffer_load(it->second.buffer, at(it->second, load->indices));
  }

  tir::Stmt visit_store(const tir::Stmt& s) override {
    tir::Stmt store = tir::StmtMutator::visit_store(s);
    auto it = places_.find(store->buffer.get());
    if (it == places_.end()) return store;
    return tir::make_store(it->second.buffer, at(it->second, store->indices), store->value);
  }

 private:
  static std::vector<arith::Expr> at(const Place& p, const std::vector<arith::Expr>& indices) {
    std::vector<arith::Expr> out = p.prefix;
    out.insert(out.end(), indices.begin(), indices.end());
    return out;
  }
  const Places& places_;
};

// Every element of `to` set from `from` (same shape).
tir::Stmt copy_all(const tir::BufferRef& to, const tir::BufferRef& from) {
  std::vector<arith::Var> vars;
  std::vector<arith::Expr> idx;
  for (size_t d = 0; d < to->shape().size(); ++d) {
    vars.emplace_back("i" + std::to_string(d));
    idx.push_back(vars.back());
  }
  tir::Stmt body = tir::make_store(to, idx, tir::buffer_load(from, idx));
  for (size_t d = vars.size(); d-- > 0;) {
    body = tir::make_for(vars[d], arith::make_int(0), to->shape()[d], tir::ForKind::kSerial, body);
  }
  return body;
}

}  // namespace

tir::PrimFunc over_steps(const tir::PrimFunc& step, const std::vector<StepArgument>& roles,
                         const std::vector<te::TensorRef>& kernel_args, size_t num_inputs,
                         const arith::Expr& steps) {
  DYNVM_INTERNAL_CHECK(step.params.size() == roles.size(), "over_steps: ", step.name, " has ",
                       step.params.size(), " parameters for ", roles.size(), " roles");
  tir::PrimFunc kernel;
  kernel.num_inputs = num_inputs;
  std::map<const te::Tensor*, tir::BufferRef> buffer_of;
  for (const te::TensorRef& t : kernel_args) {
    kernel.params.push_back(std::make_shared<tir::Buffer>(t->name(), t->dtype(), t->shape()));
    buffer_of[t.get()] = kernel.params.back();
  }
  auto buffer = [&](const te::TensorRef& t) {
    auto it = t ? buffer_of.find(t.get()) : buffer_of.end();
    DYNVM_INTERNAL_CHECK(it != buffer_of.end(), "over_steps: a role names no kernel argument");
    return it->second;
  };

  arith::Var t("t");
  Places first, later;                                            // step 0; steps 1 and on
  std::vector<std::pair<tir::BufferRef, tir::BufferRef>> finals;  // (state, initial)
  for (size_t i = 0; i < roles.size(); ++i) {
    const tir::Buffer* param = step.params[i].get();
    const StepArgument& r = roles[i];
    tir::BufferRef whole = buffer(r.whole);
    const bool sliced = whole->shape().size() == param->shape().size() + 1;
    DYNVM_INTERNAL_CHECK(sliced || whole->shape().size() == param->shape().size(),
                         "over_steps: ", param->name(), "'s kernel argument has another rank");
    switch (r.role) {
      case StepArgument::Role::kWhole:
        first[param] = later[param] = Place{whole, {}};
        break;
      case StepArgument::Role::kAtStep:
        first[param] = Place{whole, {arith::make_int(0)}};
        later[param] = Place{whole, {t}};
        break;
      case StepArgument::Role::kCarried:
        first[param] = Place{buffer(r.initial), {}};
        later[param] = Place{whole, sliced ? std::vector<arith::Expr>{t - arith::make_int(1)}
                                           : std::vector<arith::Expr>{}};
        if (!sliced) finals.emplace_back(whole, buffer(r.initial));
        break;
    }
  }

  // The step's top-level allocations (its intermediates) once, around every step.
  std::vector<tir::BufferRef> allocated;
  tir::Stmt body = step.body;
  while (body.kind() == tir::StmtKind::kAllocate) {
    allocated.push_back(body->buffer);
    body = body->body;
  }
  tir::Stmt run =
      tir::make_seq({Rebind(first).mutate_stmt(body),
                     tir::make_for(t, arith::make_int(1), steps - arith::make_int(1),
                                   tir::ForKind::kSerial, Rebind(later).mutate_stmt(body))});
  std::vector<tir::Stmt> none;
  for (const auto& [state, initial] : finals) none.push_back(copy_all(state, initial));
  kernel.body = tir::make_if(arith::gt(steps, arith::make_int(0)), run,
                             none.empty() ? tir::Stmt() : tir::make_seq(none));
  for (size_t k = allocated.size(); k-- > 0;) {
    kernel.body = tir::make_allocate(allocated[k], kernel.body);
  }
  kernel.name = step.name;
  return kernel;
}

}  // namespace dynvm::ops
