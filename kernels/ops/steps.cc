// A step function repeated over a sequence (steps.h).
#include "kernels/ops/steps.h"

#include <map>
#include <memory>
#include <utility>

#include "kernels/tir/functor.h"
#include "vm/error.h"

namespace dynvm::ops {
namespace {

// Where one of the step's buffers lies in the kernel: `buffer` laid out as `layout` says, at
// `direction` and `time` (undefined: none).
struct Place {
  tir::BufferRef buffer;
  ArgumentLayout layout;
  arith::Expr direction, time;
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
    const size_t rank = p.buffer->shape().size();
    std::vector<arith::Expr> out(rank);
    if (p.layout.time_axis >= 0) out[size_t(p.layout.time_axis)] = p.time;
    if (p.layout.direction_axis >= 0) out[size_t(p.layout.direction_axis)] = p.direction;
    size_t next = 0;
    for (arith::Expr& e : out) {
      if (e.defined()) continue;
      DYNVM_INTERNAL_CHECK(next < indices.size(), "over_steps: ", p.buffer->name(), "'s layout");
      e = indices[next++];
    }
    DYNVM_INTERNAL_CHECK(next == indices.size(), "over_steps: ", p.buffer->name(), "'s layout");
    if (p.layout.direction_stride != 0) {
      out.back() = out.back() + p.direction * arith::make_int(p.layout.direction_stride);
    }
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
                         const arith::Expr& steps, const std::vector<bool>& reversed) {
  DYNVM_INTERNAL_CHECK(step.params.size() == roles.size(), "over_steps: ", step.name, " has ",
                       step.params.size(), " parameters for ", roles.size(), " roles");
  DYNVM_INTERNAL_CHECK(!reversed.empty(), "over_steps: no direction");
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

  // The step's top-level allocations (its intermediates): once per direction, around its steps.
  std::vector<tir::BufferRef> allocated;
  tir::Stmt body = step.body;
  while (body.kind() == tir::StmtKind::kAllocate) {
    allocated.push_back(body->buffer);
    body = body->body;
  }

  arith::Var t("t"), d("direction");
  const arith::Expr one = arith::make_int(1);
  std::vector<tir::Stmt> directions;
  for (bool reverse : reversed) {
    // The time of step k.
    auto time = [&](const arith::Expr& k) { return reverse ? steps - one - k : k; };
    Places first, later;  // step 0; steps 1 and on
    for (size_t i = 0; i < roles.size(); ++i) {
      const tir::Buffer* param = step.params[i].get();
      const StepArgument& r = roles[i];
      const Place at_all{buffer(r.whole), r.layout, d, {}};
      switch (r.role) {
        case StepArgument::Role::kWhole:
          first[param] = later[param] = at_all;
          break;
        case StepArgument::Role::kAtStep:
          first[param] = Place{at_all.buffer, r.layout, d, time(arith::make_int(0))};
          later[param] = Place{at_all.buffer, r.layout, d, time(t)};
          break;
        case StepArgument::Role::kCarried:
          first[param] = Place{buffer(r.initial), r.initial_layout, d, {}};
          later[param] = Place{at_all.buffer, r.layout, d, time(t - one)};
          break;
      }
    }
    tir::Stmt run = tir::make_seq(
        {Rebind(first).mutate_stmt(body), tir::make_for(t, one, steps - one, tir::ForKind::kSerial,
                                                        Rebind(later).mutate_stmt(body))});
    for (size_t k = allocated.size(); k-- > 0;) run = tir::make_allocate(allocated[k], run);
    directions.push_back(run);
  }
  tir::Stmt run = directions.back();
  for (size_t k = directions.size() - 1; k-- > 0;) {
    run = tir::make_if(arith::eq(d, arith::make_int(int64_t(k))), directions[k], run);
  }
  const auto count = static_cast<int64_t>(reversed.size());
  run = tir::make_for(d, arith::make_int(0), arith::make_int(count),
                      count > 1 ? tir::ForKind::kParallel : tir::ForKind::kSerial, run);
  std::vector<tir::Stmt> none;
  for (const StepArgument& r : roles) {
    if (r.role == StepArgument::Role::kCarried && r.layout.time_axis < 0) {
      none.push_back(copy_all(buffer(r.whole), buffer(r.initial)));
    }
  }
  kernel.body = tir::make_if(arith::gt(steps, arith::make_int(0)), run,
                             none.empty() ? tir::Stmt() : tir::make_seq(none));
  kernel.name = step.name;
  return kernel;
}

}  // namespace dynvm::ops
