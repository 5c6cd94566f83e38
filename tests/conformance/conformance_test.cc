// The ONNX backend node tests (onnx 1.12, opsets <= 17; scripts/gen-conformance.sh) run
// through our stack, in phases:
//   import   frontends/onnx (cases whose operators, domains or value kinds the importer
//            does not accept are skipped as unsupported);
//   types    compiler/passes/infer_types: the inferred output dtypes and shapes must be the
//            expected outputs';
//   kernel   single-operator models: the op's binding (compiler/op/binding.h) builds its
//            kernel for the test's static input types; kernels are compiled grouped by op
//            (LLVM's O3 dominates), run serially on the inputs and compared (f32 rtol 1e-4,
//            atol 1e-5; integers and bools exactly). View and alias bindings are checked
//            against their input's data; host values are skipped.
// expected_failures.txt lists `test_name phase reason` for cases we knowingly fail; an
// unlisted failure fails the test, and so does a listed case that passes that phase (the
// list stays honest). Each test prints a summary line per phase.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "compiler/op/binding.h"
#include "compiler/passes/infer_types.h"
#include "tests/conformance/conformance_case.h"
#include "tests/kernels/support/op_runner.h"

namespace dynvm::conformance {
namespace {

namespace fs = std::filesystem;
using compiler::Expr;
using compiler::ExprKind;

constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

struct Listed {
  std::string phase;
  std::string reason;
};

// expected_failures.txt: `test_name phase reason`.
std::map<std::string, Listed> expected_failures() {
  std::map<std::string, Listed> out;
  for (const auto& [name, rest] : read_case_list(DYNVM_EXPECTED_FAILURES)) {
    const size_t space = rest.find(' ');
    Listed l{rest.substr(0, space), space == std::string::npos ? "" : rest.substr(space + 1)};
    EXPECT_TRUE(l.phase == "import" || l.phase == "types" || l.phase == "kernel")
        << "expected_failures.txt: bad phase for " << name << ": " << l.phase;
    EXPECT_FALSE(l.reason.empty()) << "expected_failures.txt: no reason for " << name;
    out.emplace(name, l);
  }
  return out;
}

// Tallies one phase and checks each outcome against the list.
class Phase {
 public:
  // `report`: outcomes become test failures (off when another test reports this phase).
  Phase(std::string name, const std::map<std::string, Listed>& listed, bool report = true)
      : name_(std::move(name)), listed_(listed), report_(report) {}
  void pass(const std::string& test) {
    auto it = listed_.find(test);
    if (report_ && it != listed_.end() && it->second.phase == name_) {
      ADD_FAILURE() << test << " passes the " << name_
                    << " phase but expected_failures.txt lists it (" << it->second.reason
                    << "): remove it";
    }
    ++passed_;
  }
  void fail(const std::string& test, const std::string& why) {
    auto it = listed_.find(test);
    if (it != listed_.end() && it->second.phase == name_) {
      ++expected_;
      return;
    }
    if (report_) ADD_FAILURE() << test << " fails the " << name_ << " phase: " << why;
    ++failed_;
  }
  void skip(const std::string& reason) { ++skipped_[reason]; }
  // A listed case of this phase that never reached it.
  void check_reached(const std::set<std::string>& reached) const {
    for (const auto& [test, l] : listed_) {
      if (l.phase == name_ && !reached.count(test)) {
        ADD_FAILURE() << test << " is listed for the " << name_
                      << " phase but does not reach it: remove it";
      }
    }
  }
  void print() const {
    int64_t skipped = 0;
    std::string detail;
    for (const auto& [reason, n] : skipped_) {
      skipped += n;
      detail += (detail.empty() ? "" : ", ") + reason + " " + std::to_string(n);
    }
    std::cout << "[conformance] " << name_ << ": " << passed_ << " passed, " << expected_
              << " failed as expected, " << failed_ << " failed, " << skipped << " skipped"
              << (detail.empty() ? "" : " (" + detail + ")") << "\n";
  }

 private:
  std::string name_;
  const std::map<std::string, Listed>& listed_;
  bool report_ = true;
  int64_t passed_ = 0, expected_ = 0, failed_ = 0;
  std::map<std::string, int64_t> skipped_;
};

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

// The static value of an inferred dim: a constant, or a dim symbol bound to one value.
std::optional<int64_t> static_dim(const compiler::Module& m, const compiler::Dim& d) {
  if (d.is_const()) return d.value();
  if (d.is_any() || d.expr().kind() != arith::ExprKind::kVar) return std::nullopt;
  const compiler::DimSymbol* sym = m.find_dim(arith::Var(d.expr()).name());
  if (sym != nullptr && sym->min == sym->max) return sym->min;
  return std::nullopt;
}

// The entry's output types, one per graph output.
std::vector<compiler::Type> output_types(const compiler::Module& m) {
  const compiler::Function* f = m.find_function(m.entry);
  compiler::Type t = f->body.type();
  if (t.defined() && t.kind() == compiler::TypeKind::kTuple) return t->fields;
  return {t};
}

// "" when the types match the expected outputs, else what differs.
std::string check_types(const compiler::Module& m, const std::vector<vm::Tensor>& expected) {
  std::vector<compiler::Type> types = output_types(m);
  if (types.size() != expected.size()) {
    return std::to_string(types.size()) + " outputs, expected " + std::to_string(expected.size());
  }
  for (size_t k = 0; k < types.size(); ++k) {
    const compiler::Type& t = types[k];
    if (!t.is_tensor()) return "output " + std::to_string(k) + " is " + compiler::to_string(t);
    if (t->dtype != expected[k].dtype()) {
      return "output " + std::to_string(k) + " is " + compiler::to_string(t) + ", expected " +
             std::string(vm::dtype_name(expected[k].dtype())) + dims_text(expected[k].shape());
    }
    bool same = t->dims.size() == expected[k].shape().size();
    for (size_t d = 0; same && d < t->dims.size(); ++d) {
      std::optional<int64_t> v = static_dim(m, t->dims[d]);
      same = v && *v == expected[k].shape()[d];
    }
    if (!same) {
      return "output " + std::to_string(k) + " is " + compiler::to_string(t) + ", expected " +
             std::string(vm::dtype_name(expected[k].dtype())) + dims_text(expected[k].shape());
    }
  }
  return "";
}

struct Typed {
  NodeCase c;
  compiler::Module module;
};

// Loads every case and runs the import and types phases; returns the cases that pass both.
std::vector<Typed> import_and_type(const std::map<std::string, Listed>& listed, bool report) {
  Phase import("import", listed, report), types("types", listed, report);
  std::set<std::string> reached_import, reached_types;
  std::vector<Typed> typed;
  for (const fs::path& dir : case_dirs(DYNVM_DEFAULT_CONFORMANCE_DIR)) {
    NodeCase c;
    try {
      c = load_case(dir);
    } catch (const std::exception& e) {
      ADD_FAILURE() << dir.filename().string() << ": " << e.what();
      continue;
    }
    if (!c.unsupported.empty()) {
      import.skip("unsupported");
      continue;
    }
    reached_import.insert(c.name);
    compiler::Module m;
    try {
      m = frontends::onnx_import::import_onnx_bytes(c.model_bytes, c.name, c.options);
    } catch (const std::exception& e) {
      import.fail(c.name, e.what());
      continue;
    }
    import.pass(c.name);
    reached_types.insert(c.name);
    std::string why;
    try {
      m = compiler::infer_types_with_facts(m).module;
      why = check_types(m, c.outputs);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (!why.empty()) {
      types.fail(c.name, why);
      continue;
    }
    types.pass(c.name);
    typed.push_back({std::move(c), std::move(m)});
  }
  if (report) {
    import.check_reached(reached_import);
    types.check_reached(reached_types);
    import.print();
    types.print();
  }
  return typed;
}

TEST(Conformance, ImportAndTypes) {
  std::map<std::string, Listed> listed = expected_failures();
  auto t0 = std::chrono::steady_clock::now();
  import_and_type(listed, true);
  std::cout << "[conformance] import + types: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
}

// ---- the kernel phase ----

// A single-call model: its call, the call's operands resolved, and which call output each
// graph output is.
struct SingleCall {
  Expr call;
  std::vector<compiler::ValueFacts> facts;   // per operand
  std::vector<int> operand_input;            // run-time input index, or -1
  std::vector<vm::Tensor> operand_constant;  // the constant (when not a run-time input)
  std::vector<size_t> output_of;             // per graph output: the call's output index
  size_t num_call_outputs = 1;
};

std::optional<SingleCall> single_call(const compiler::Module& m) {
  const compiler::Function* f = m.find_function(m.entry);
  std::map<uint64_t, Expr> lets;
  std::map<uint64_t, size_t> params;
  for (size_t k = 0; k < f->params.size(); ++k) params[f->params[k]->var_id] = k;
  Expr e = f->body;
  SingleCall sc;
  uint64_t call_var = 0;
  int calls = 0;
  while (e.kind() == ExprKind::kLet) {
    const Expr& var = e->operands[0];
    const Expr& value = e->operands[1];
    if (value.kind() == ExprKind::kCall) {
      if (++calls > 1) return std::nullopt;
      sc.call = value;
      call_var = var->var_id;
    } else if (value.kind() != ExprKind::kConstant && value.kind() != ExprKind::kGetItem) {
      return std::nullopt;
    }
    lets[var->var_id] = value;
    e = e->operands[2];
  }
  if (calls != 1) return std::nullopt;
  for (const Expr& operand : sc.call->operands) {
    if (operand.kind() == ExprKind::kCall || operand.kind() == ExprKind::kGetItem) {
      return std::nullopt;
    }
  }
  std::vector<Expr> outs = e.kind() == ExprKind::kTuple ? e->operands : std::vector<Expr>{e};
  const compiler::Type& ct = sc.call.type();
  sc.num_call_outputs = ct.kind() == compiler::TypeKind::kTuple ? ct->fields.size() : 1;
  for (const Expr& o : outs) {
    if (o.kind() != ExprKind::kVar || !lets.count(o->var_id)) return std::nullopt;
    if (o->var_id == call_var) {
      sc.output_of.push_back(0);
      continue;
    }
    const Expr& v = lets[o->var_id];
    if (v.kind() != ExprKind::kGetItem || v->operands[0].kind() != ExprKind::kVar ||
        v->operands[0]->var_id != call_var) {
      return std::nullopt;
    }
    sc.output_of.push_back(static_cast<size_t>(v->index));
  }
  for (const Expr& operand : sc.call->operands) {
    compiler::ValueFacts facts;
    int input = -1;
    vm::Tensor constant;
    if (operand.kind() == ExprKind::kTuple && operand->operands.empty()) {
      // absent: undefined type
    } else if (operand.kind() == ExprKind::kConstant) {
      constant = operand->value;
    } else if (operand.kind() == ExprKind::kVar && params.count(operand->var_id)) {
      input = static_cast<int>(params[operand->var_id]);
      facts.type = f->params[static_cast<size_t>(input)].type();
    } else if (operand.kind() == ExprKind::kVar && lets.count(operand->var_id) &&
               lets[operand->var_id].kind() == ExprKind::kConstant) {
      constant = lets[operand->var_id]->value;
    } else {
      return std::nullopt;
    }
    if (constant.defined()) {
      facts.constant = constant;
      std::vector<compiler::Dim> dims;
      for (int64_t d : constant.shape()) dims.emplace_back(d);
      facts.type = compiler::tensor_type(constant.dtype(), dims);
    }
    if (facts.type.defined() && !facts.type.is_tensor()) return std::nullopt;
    sc.facts.push_back(std::move(facts));
    sc.operand_input.push_back(input);
    sc.operand_constant.push_back(constant);
  }
  return sc;
}

std::vector<compiler::Type> call_outputs(const Expr& call) {
  const compiler::Type& t = call.type();
  if (t.kind() == compiler::TypeKind::kTuple) return t->fields;
  return {t};
}

ops::TensorType static_type(const vm::Tensor& t) {
  ops::TensorType out;
  out.dtype = t.dtype();
  for (int64_t d : t.shape()) out.shape.push_back(arith::make_int(d));
  return out;
}

struct KernelJob {
  std::string test;
  std::string op;
  std::string symbol;
  ops::OpInstance instance;
  std::vector<vm::Tensor> args;      // inputs, then outputs (poisoned)
  std::vector<vm::Tensor> expected;  // per kernel output
};

vm::Tensor poisoned(const vm::Tensor& like) {
  vm::Tensor t = vm::Tensor::empty(like.shape(), like.dtype());
  if (t.nbytes() > 0) std::memset(t.data(), 0xCD, t.nbytes());
  return t;
}

TEST(Conformance, Kernels) {
  std::map<std::string, Listed> listed = expected_failures();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Typed> typed = import_and_type(listed, false);
  Phase phase("kernel", listed);
  std::set<std::string> reached;
  std::map<std::string, std::vector<KernelJob>> by_op;
  int64_t num_jobs = 0;
  std::set<std::string> no_binding;
  for (Typed& t : typed) {
    const NodeCase& c = t.c;
    std::optional<SingleCall> sc = single_call(t.module);
    if (!sc) {
      phase.skip("not one call");
      continue;
    }
    const std::string op = sc->call->name;
    const compiler::BindFn* bind = compiler::find_binding(op);
    if (bind == nullptr) {
      no_binding.insert(op);
      phase.skip("no binding");
      continue;
    }
    reached.insert(c.name);
    auto operand_tensor = [&](size_t i) {
      return sc->operand_input[i] >= 0 ? c.inputs.at(static_cast<size_t>(sc->operand_input[i]))
                                       : sc->operand_constant[i];
    };
    compiler::KernelBinding b;
    ops::OpInstance instance;
    std::vector<vm::Tensor> args;
    try {
      compiler::BindContext ctx("node " + c.name + " (" + op + ")", sc->call->attrs, sc->facts,
                                call_outputs(sc->call));
      b = (*bind)(ctx);
      if (b.kind == compiler::LoweringKind::kHost) {
        reached.erase(c.name);
        phase.skip("host value");
        continue;
      }
      if (b.kind != compiler::LoweringKind::kKernel) {
        // A view or alias: output 0 is input 0's elements.
        const vm::Tensor in = operand_tensor(0);
        const vm::Tensor& want = c.outputs.at(0);
        if (in.dtype() != want.dtype() || in.numel() != want.numel() ||
            std::memcmp(in.data(), want.data(), want.nbytes()) != 0) {
          phase.fail(c.name, "the view's elements differ from its input's");
        } else {
          phase.pass(c.name);
        }
        continue;
      }
      std::vector<ops::TensorType> types;
      for (size_t i : b.args) {
        args.push_back(operand_tensor(i));
        types.push_back(static_type(args.back()));
      }
      instance = b.build(types);
    } catch (const std::exception& e) {
      phase.fail(c.name, std::string("binding: ") + e.what());
      continue;
    }
    if (instance.outputs.size() != sc->num_call_outputs ||
        sc->output_of.size() != sc->num_call_outputs) {
      phase.fail(c.name, "the kernel computes " + std::to_string(instance.outputs.size()) +
                             " of the call's " + std::to_string(sc->num_call_outputs) +
                             " outputs (" + std::to_string(sc->output_of.size()) + " used)");
      continue;
    }
    KernelJob job{c.name, op, "k" + std::to_string(num_jobs++), std::move(instance), args, {}};
    job.expected.resize(sc->num_call_outputs);
    for (size_t k = 0; k < sc->output_of.size(); ++k) {
      job.expected.at(sc->output_of[k]) = c.outputs[k];
    }
    for (const vm::Tensor& want : job.expected) job.args.push_back(poisoned(want));
    by_op[op].push_back(std::move(job));
  }

  // One library per op; when it does not build, each kernel alone finds the culprits.
  for (auto& [op, jobs] : by_op) {
    auto run_all = [&phase](const ops::testing::OpLibrary& lib, std::vector<KernelJob*> js) {
      for (KernelJob* j : js) {
        ops::testing::OpResult r = lib.run(j->symbol, j->args, /*parallel=*/false);
        if (!r.ok()) {
          phase.fail(j->test, "kernel status " + std::to_string(r.status) + ": " + r.error);
          continue;
        }
        std::string why;
        bool ok = true;
        const size_t n_in = j->args.size() - j->expected.size();
        for (size_t k = 0; ok && k < j->expected.size(); ++k) {
          ok = tensors_match(j->args[n_in + k], j->expected[k], kRtol, kAtol, &why);
          if (!ok) why = "output " + std::to_string(k) + ": " + why;
        }
        if (ok) {
          phase.pass(j->test);
        } else {
          phase.fail(j->test, why);
        }
      }
    };
    std::vector<ops::testing::OpToBuild> all;
    std::vector<KernelJob*> ptrs;
    for (KernelJob& j : jobs) {
      all.push_back({j.symbol, j.instance, {}});
      ptrs.push_back(&j);
    }
    try {
      run_all(ops::testing::OpLibrary::build(all), ptrs);
    } catch (const std::exception&) {
      for (KernelJob& j : jobs) {
        try {
          run_all(ops::testing::OpLibrary::build({{j.symbol, j.instance, {}}}), {&j});
        } catch (const std::exception& e) {
          phase.fail(j.test, std::string("compile: ") + e.what());
        }
      }
    }
  }
  phase.check_reached(reached);
  phase.print();
  std::string ops;
  for (const std::string& op : no_binding) ops += " " + op;
  std::cout << "[conformance] ops without a binding:" << ops << "\n";
  std::cout << "[conformance] kernel phase (with import + types): "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
}

}  // namespace
}  // namespace dynvm::conformance
