// simplify: which calls it bypasses or merges (and which it must keep: a real cast, a
// non-neutral constant, a broadcast that grows, a float x + 0.0), inside If branches and
// Loop bodies too, the dims it re-simplifies, and a simplified module lowered and run
// against values worked out by hand.
#include "compiler/passes/simplify.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/passes/dce.h"
#include "compiler/pipeline.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

// infer_types, simplify, then dce (which removes the bypassed lets).
TypedModule simplified(const std::string& text, SimplifyStats* stats = nullptr) {
  TypedModule t = simplify(infer_types_with_facts(parse_module(text)), stats);
  t.module = dce(t).module;
  return t;
}

void collect_calls(const Expr& e, std::vector<std::string>& out) {
  if (!e.defined()) return;
  if (e.kind() == ExprKind::kLoop) collect_calls(e->body->body, out);
  for (const Expr& o : e->operands) collect_calls(o, out);
  if (e.kind() == ExprKind::kCall) out.push_back(e->name);
}

// The ops the entry still calls, in evaluation order (nested bodies included).
std::vector<std::string> calls(const TypedModule& t) {
  std::vector<std::string> out;
  collect_calls(t.module.find_function(t.module.entry)->body, out);
  return out;
}

using Ops = std::vector<std::string>;

TEST(Simplify, IdentitiesAndSameDtypeCastsAreBypassed) {
  SimplifyStats stats;
  TypedModule t = simplified(R"(dim n: 1..64
fn @main(%x: f32[n, 8]) {
  %a = Identity(%x)
  %b = Cast(%a) {to=1}
  %c = Dropout(%b)
  %d = Relu(%c)
  %e = Cast(%d) {to=10}
  return %e
})",
                             &stats);
  EXPECT_EQ(calls(t), (Ops{"Relu", "Cast"})) << print_module(t.module);  // to f16 stays
  EXPECT_EQ(stats.identities, 3u);
  // Relu reads the parameter itself.
  const std::string text = print_module(t.module);
  EXPECT_NE(text.find("Relu(%x)"), std::string::npos) << text;
}

TEST(Simplify, DropoutGoesOnlyAtInference) {
  TypedModule t = simplified(R"(fn @main(%x: f32[4]) {
  %infer = Dropout(%x, const(f32[], [0.5]), const(bool[], [false]))
  %train = Dropout(%infer, const(f32[], [0.5]), const(bool[], [true]))
  return %train
})");
  EXPECT_EQ(calls(t), (Ops{"Dropout"}));
  const std::string text = print_module(t.module);
  EXPECT_NE(text.find("Dropout(%x, "), std::string::npos) << text;
}

TEST(Simplify, ShapeOpsThatKeepTheirInputGo) {
  SimplifyStats stats;
  TypedModule t = simplified(R"(dim n: 1..64
fn @main(%x: f32[n, 8]) {
  %r = Reshape(%x, Shape(%x))
  %t = Transpose(%r) {perm=[0, 1]}
  %s = Slice(%t, const(i64[2], [0, 0]), const(i64[2], [9223372036854775807, 8]), const(i64[2], [0, 1]))
  %c = Concat(%s) {axis=1}
  %p = Pad(%c, const(i64[4], [0, 0, 0, 0]))
  %e = Expand(%p, const(i64[2], [1, 8]))
  %f = Flatten(%e) {axis=1}
  %y = Relu(%f)
  %half = Slice(%y, const(i64[1], [0]), const(i64[1], [4]), const(i64[1], [1]))
  %rev = Slice(%y, const(i64[1], [-1]), const(i64[1], [-9223372036854775807]), const(i64[1], [1]), const(i64[1], [-1]))
  return (%half, %rev)
})",
                             &stats);
  // Shape stays only as long as the Reshape reads it: dce takes both.
  EXPECT_EQ(calls(t), (Ops{"Relu", "Slice", "Slice"})) << print_module(t.module);
  EXPECT_EQ(stats.noop_moves, 7u);
}

TEST(Simplify, ExpandThatBroadcastsStays) {
  TypedModule t = simplified(R"(dim n: 1..64
fn @main(%x: f32[n, 1]) {
  %e = Expand(%x, const(i64[2], [1, 8]))
  return %e
})");
  EXPECT_EQ(calls(t), (Ops{"Expand"}));
}

TEST(Simplify, NeutralArithmeticGoesOnlyWhenExact) {
  SimplifyStats stats;
  TypedModule t = simplified(R"(dim n: 1..64
fn @main(%x: f32[n, 8], %k: i64[n]) {
  %a = Mul(%x, const(f32[], [1]))
  %b = Div(%a, const(f32[8], [1, 1, 1, 1, 1, 1, 1, 1]))
  %c = Sub(%b, const(f32[], [0]))
  %d = Mul(const(f32[1, 1], [1]), %c)
  %i = Add(const(i64[], [0]), %k)
  return (%d, %i)
})",
                             &stats);
  EXPECT_EQ(calls(t), Ops{}) << print_module(t.module);
  EXPECT_EQ(stats.arithmetic, 5u);

  // Kept: a non-neutral constant; a float + 0.0 (it turns -0.0 into +0.0); a zero that
  // broadcasts x to a bigger shape; x - 0 with x as the subtrahend; a dtype mismatch is
  // not even typed, so it is not tried here.
  t = simplified(R"(dim n: 1..64
fn @main(%x: f32[n, 8], %v: f32[n, 1]) {
  %a = Add(%x, const(f32[], [2]))
  %b = Add(%a, const(f32[], [0]))
  %g = Sub(%v, const(f32[1, 8], [0, 0, 0, 0, 0, 0, 0, 0]))
  %s = Sub(const(f32[], [0]), %b)
  return (%s, %g)
})");
  EXPECT_EQ(calls(t), (Ops{"Add", "Add", "Sub", "Sub"})) << print_module(t.module);
}

TEST(Simplify, InverseTransposesCancelAndOthersCompose) {
  SimplifyStats stats;
  TypedModule t = simplified(R"(dim n: 1..64
fn @main(%x: f32[n, 2, 4]) {
  %t = Transpose(%x) {perm=[0, 2, 1]}
  %u = Transpose(%t) {perm=[0, 2, 1]}
  %v = Transpose(%u) {perm=[2, 0, 1]}
  %w = Transpose(%v)
  return %w
})",
                             &stats);
  // %u is %x; %w = reverse(%v): axis k of %w is %v's 2 - k, %x's [2, 0, 1][2 - k].
  EXPECT_EQ(calls(t), (Ops{"Transpose"})) << print_module(t.module);
  const std::string text = print_module(t.module);
  EXPECT_NE(text.find("Transpose(%x) {perm=[1, 0, 2]}"), std::string::npos) << text;
  EXPECT_NE(text.find("f32[2, n, 4]"), std::string::npos) << text;
  EXPECT_EQ(stats.transposes_merged, 2u);
}

TEST(Simplify, ViewChainsShorten) {
  SimplifyStats stats;
  TypedModule t = simplified(R"(dim n: 1..64
fn @main(%x: f32[n, 2, 4], %z: f32[2, 3, 4]) {
  %u = Unsqueeze(%x, const(i64[1], [1]))
  %s = Squeeze(%u, const(i64[1], [1]))
  %f = Flatten(%s) {axis=1}
  %back = Reshape(%f, Shape(%x))
  %a = Reshape(%z, const(i64[2], [6, 4]))
  %b = Reshape(%a, const(i64[2], [4, -1]))
  %keep = Reshape(%a, const(i64[3], [0, 2, 2]))
  return (%back, %b, %keep)
})",
                             &stats);
  // Squeeze(Unsqueeze) and the Flatten / Reshape round trip are %x; %b reshapes %z
  // directly; %keep's 0 copies %a's dim, so it keeps reading %a.
  EXPECT_EQ(calls(t), (Ops{"Reshape", "Reshape", "Reshape"})) << print_module(t.module);
  const std::string text = print_module(t.module);
  EXPECT_NE(text.find("Reshape(%z, const(i64[2], [4, -1]))"), std::string::npos) << text;
  EXPECT_NE(text.find("Reshape(%a, const(i64[3], [0, 2, 2]))"), std::string::npos) << text;
  EXPECT_EQ(stats.view_chains, 2u);
  EXPECT_EQ(stats.reshapes_merged, 1u);
}

TEST(Simplify, RewritesInsideLoopBodiesAndIfBranches) {
  TypedModule t = simplified(R"(fn @main(%x: f32[2], %c: bool[]) {
  %l = loop(max_trip=const(i64[], [3]), cond=none, %x) scan_outputs=0 fn(%i: i64[], %go: bool[], %h: f32[2]) {
    %same = Identity(%h)
    %next = Add(%same, const(f32[2], [1, 2]))
    return (%go, %next)
  }
  %r = if %c {
    %m = Mul(%l.0, const(f32[], [1]))
    return Neg(%m)
  } else {
    return %l.0
  }
  return %r
})");
  EXPECT_EQ(calls(t), (Ops{"Add", "Neg"})) << print_module(t.module);
  const std::string text = print_module(t.module);
  EXPECT_NE(text.find("Add(%h, "), std::string::npos) << text;
}

TEST(Simplify, DimsAndFactsGetTheirCanonicalForm) {
  // Not typed by infer_types (which simplifies as it goes): the types as written.
  TypedModule typed;
  typed.module = parse_module(R"(dim n: 1..64
fn @main(%x: f32[n * 2 - n, 3 + 1]) -> f32[n + 0, 4] {
  return %x
})");
  const Expr& x = typed.module.functions[0]->params[0];
  const arith::Var n = typed.module.dims[0].var;
  typed.facts[x->var_id] =
      ValueFacts{x.type(), std::vector<Dim>{Dim(arith::Expr(n) * 3 - n * 2)}, {}};
  SimplifyStats stats;
  TypedModule t = simplify(typed, &stats);
  const Function& f = *t.module.functions[0];
  EXPECT_EQ(to_string(f.params[0].type()), "f32[n, 4]");
  EXPECT_EQ(to_string(f.result_type), "f32[n, 4]");
  EXPECT_EQ(to_string(f.body.type()), "f32[n, 4]");
  EXPECT_EQ(to_string(t.facts.at(x->var_id).type), "f32[n, 4]");
  EXPECT_EQ(to_string((*t.facts.at(x->var_id).value)[0]), "n");
  EXPECT_GE(stats.dims_simplified, 3u);
}

// y[j, i, k] = x[i, k, j] + bias[k] after the Transposes compose into one and the Mul by
// one and the Identity go; the second output is x itself (a Reshape to its own shape).
TEST(Simplify, SimplifiedModuleComputesTheSameValues) {
  SimplifyStats stats;
  TypedModule t = simplified(R"(dim n: 1..16
fn @main(%x: f32[n, 2, 4]) {
  %t = Transpose(%x) {perm=[0, 2, 1]}
  %u = Transpose(%t) {perm=[1, 0, 2]}
  %m = Mul(%u, const(f32[], [1]))
  %i = Identity(%m)
  %a = Add(%i, const(f32[2], [10, 20]))
  %r = Reshape(%x, Shape(%x))
  return (%a, %r)
})",
                             &stats);
  EXPECT_EQ(calls(t), (Ops{"Transpose", "Add"})) << print_module(t.module);
  EXPECT_EQ(stats.calls_rewritten(), 4u);

  vm::VirtualMachine machine(vm::Program::load(lower_module(t)));
  for (int64_t n : {1, 3, 7}) {
    vm::Tensor x = vm::Tensor::empty({n, 2, 4}, vm::DType::kFloat32);
    for (int64_t e = 0; e < x.numel(); ++e) x.data_as<float>()[e] = static_cast<float>(e) * 0.5f;
    std::vector<vm::Value> in{x};
    std::vector<vm::Value> out = machine.run(in);
    ASSERT_EQ(out.size(), 2u);
    const vm::Tensor y = out[0].as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{4, n, 2}));
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < 2; ++k) {
          const float want = static_cast<float>((i * 2 + k) * 4 + j) * 0.5f + (k == 0 ? 10 : 20);
          EXPECT_EQ(y.data_as<float>()[(j * n + i) * 2 + k], want) << j << " " << i << " " << k;
        }
      }
    }
    const vm::Tensor r = out[1].as_tensor();
    ASSERT_EQ(r.shape(), (vm::Shape{n, 2, 4}));
    for (int64_t e = 0; e < r.numel(); ++e) {
      EXPECT_EQ(r.data_as<float>()[e], static_cast<float>(e) * 0.5f);
    }
  }
}

}  // namespace
}  // namespace dynvm::compiler
