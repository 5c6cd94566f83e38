// Memory planning (compiler/lower/plan_memory.h), the liveness under it and register
// allocation (allocate_registers.h) after it: how many allocations and registers a
// lowered function keeps, which storages it shares, and that the planned executables
// still compute the right values (references computed here with <cmath> or by hand, not
// by dynvm's kernels).
#include "compiler/lower/plan_memory.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "compiler/ir/parser.h"
#include "compiler/lower/allocate_registers.h"
#include "compiler/lower/generate_kernels.h"
#include "compiler/lower/insert_frees.h"
#include "compiler/lower/liveness.h"
#include "compiler/pipeline.h"
#include "vm/asm/assembler.h"
#include "vm/asm/disassembler.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

// Five elementwise kernels in a chain (not fused: fuse_ops is not run here). Each value
// dies as the next is computed, so two storages of 64 * n bytes can hold them all.
constexpr const char* kChain = R"(dim n: 1..1024
fn @main(%x: f32[n, 16]) {
  %a = Exp(%x)
  %b = Neg(%a)
  %c = Sigmoid(%b)
  %d = Tanh(%c)
  %e = Abs(%d)
  return %e
}
)";

// The same chain with static shapes: its storages go into one arena.
constexpr const char* kStaticChain = R"(
fn @main(%x: f32[4, 16]) {
  %a = Exp(%x)
  %b = Neg(%a)
  %c = Sigmoid(%b)
  %d = Tanh(%c)
  %e = Abs(%d)
  return (%e, %c)
}
)";

// A smaller value may take a dead larger storage (16 n floats >= n floats for every n),
// never the other way round.
constexpr const char* kShrinkThenGrow = R"(dim n: 1..1024
fn @main(%x: f32[n, 16]) {
  %a = Exp(%x)
  %s = ReduceMax(%a, const(i64[1], [1])) {keepdims=1}
  %t = Neg(%s)
  %u = Sigmoid(%t)
  %g = Add(%x, %u)
  return %g
}
)";

struct Planned {
  vm::Executable exe;
  MemoryPlanStats stats;
};

// The lowering steps one by one (as the pipeline runs them), memory planned or not.
Planned lower_text(const char* text, bool plan) {
  TypedModule typed = infer_types_with_facts(parse_module(text));
  LowerOptions options;
  Lowered lowered = emit_bytecode(typed, place_devices(typed), options);
  Planned out;
  vm::Function& fn = lowered.exe.functions.at(0);
  if (plan) plan_memory(fn, lowered.exe.inputs, &out.stats);
  insert_frees(fn);
  allocate_registers(fn);
  generate_kernels(lowered, options);
  out.exe = std::move(lowered.exe);
  return out;
}

size_t count(const vm::Function& fn, vm::Opcode op) {
  size_t n = 0;
  for (const vm::Instruction& ins : fn.code) n += ins.op == op;
  return n;
}

vm::Tensor ramp(std::vector<int64_t> shape) {
  vm::Tensor t = vm::Tensor::empty(shape, vm::DType::kFloat32);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data_as<float>()[i] = static_cast<float>((i * 7) % 19 - 9) / 6.0f;
  }
  return t;
}

double chain(double x) { return std::abs(std::tanh(1.0 / (1.0 + std::exp(std::exp(x))))); }

TEST(PlanMemory, AChainOfKernelsSharesTwoStorages) {
  Planned planned = lower_text(kChain, true);
  EXPECT_EQ(planned.stats.storages, 5u);
  EXPECT_EQ(planned.stats.in_symbolic_arenas, 4u);  // %a..%d; %e is the result
  EXPECT_EQ(count(planned.exe.functions[0], vm::Opcode::AllocStorage), 2u);
  EXPECT_EQ(count(lower_text(kChain, false).exe.functions[0], vm::Opcode::AllocStorage), 5u);

  vm::VirtualMachine machine(vm::Program::load(std::move(planned.exe)));
  for (int64_t n : {1, 7, 300}) {
    vm::Tensor x = ramp({n, 16});
    std::vector<vm::Value> in{x};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{n, 16}));
    for (int64_t i = 0; i < x.numel(); ++i) {
      EXPECT_NEAR(y.data_as<float>()[i], chain(x.data_as<float>()[i]), 1e-5) << "n " << n;
    }
  }
}

TEST(PlanMemory, SymbolicSizesThatDieShareOneArena) {
  Planned planned = lower_text(kShrinkThenGrow, true);
  // %a [n,16], %s, %t and %u [n,1] die in the block: one arena of symbolic size holds
  // them (64n for %a, then %s above it while ReduceMax reads %a, %t where %a was, %u
  // above %t...); %g, the result, has its own storage.
  EXPECT_EQ(planned.stats.storages, 5u);
  EXPECT_EQ(planned.stats.symbolic_arenas, 1u);
  EXPECT_EQ(planned.stats.in_symbolic_arenas, 4u) << vm::disassemble(planned.exe);
  EXPECT_EQ(planned.stats.reused, 0u);
  EXPECT_EQ(count(planned.exe.functions[0], vm::Opcode::AllocStorage), 2u);

  vm::VirtualMachine machine(vm::Program::load(std::move(planned.exe)));
  for (int64_t n : {1, 5, 64}) {
    vm::Tensor x = ramp({n, 16});
    std::vector<vm::Value> in{x};
    const vm::Tensor g = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(g.shape(), (vm::Shape{n, 16}));
    const float* xv = x.data_as<float>();
    for (int64_t i = 0; i < n; ++i) {
      double m = -1e30;
      for (int64_t j = 0; j < 16; ++j) m = std::max(m, std::exp(double{xv[i * 16 + j]}));
      double u = 1.0 / (1.0 + std::exp(m));
      for (int64_t j = 0; j < 16; ++j) {
        EXPECT_NEAR(g.data_as<float>()[i * 16 + j], xv[i * 16 + j] + u, 1e-5);
      }
    }
  }
}

// A value that dies alone (%b is a result too) is no arena; %e, allocated after %a died,
// takes its storage (provably as large: [n, 16] both).
constexpr const char* kOneDeadValue = R"(dim n: 1..1024
fn @main(%x: f32[n, 16]) {
  %a = Exp(%x)
  %b = Neg(%a)
  %e = Abs(%b)
  return (%e, %b)
}
)";

TEST(PlanMemory, AResultTakesTheStorageOfADeadValueOfTheSameSize) {
  Planned planned = lower_text(kOneDeadValue, true);
  EXPECT_EQ(planned.stats.storages, 3u);
  EXPECT_EQ(planned.stats.in_symbolic_arenas, 0u);
  EXPECT_EQ(planned.stats.reused, 1u) << vm::disassemble(planned.exe);
  vm::VirtualMachine machine(vm::Program::load(std::move(planned.exe)));
  vm::Tensor x = ramp({3, 16});
  std::vector<vm::Value> in{x};
  const std::vector<vm::Value> out = machine.run(in);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double b = -std::exp(double{x.data_as<float>()[i]});
    EXPECT_NEAR(out.at(0).as_tensor().data_as<float>()[i], std::abs(b), 1e-5);
    EXPECT_NEAR(out.at(1).as_tensor().data_as<float>()[i], b, 1e-5);
  }
}

TEST(PlanMemory, StaticSizesShareOneArena) {
  Planned planned = lower_text(kStaticChain, true);
  // %a, %b, %d die in the function: one arena; %c and %e are results (their own storage).
  EXPECT_EQ(planned.stats.arenas, 1u);
  EXPECT_EQ(planned.stats.in_arenas, 3u);
  EXPECT_EQ(planned.stats.static_bytes, 3 * 256);
  // %a and %b overlap (Neg reads %a while writing %b), %d comes after both died.
  EXPECT_EQ(planned.stats.arena_bytes, 2 * 256);
  // The arena and the results' two storages.
  EXPECT_EQ(count(planned.exe.functions[0], vm::Opcode::AllocStorage), 3u);

  vm::VirtualMachine machine(vm::Program::load(std::move(planned.exe)));
  vm::Tensor x = ramp({4, 16});
  std::vector<vm::Value> in{x};
  std::vector<vm::Value> out = machine.run(in);
  ASSERT_EQ(out.size(), 2u);
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = x.data_as<float>()[i];
    double c = 1.0 / (1.0 + std::exp(std::exp(v)));
    EXPECT_NEAR(out[0].as_tensor().data_as<float>()[i], chain(v), 1e-5);
    EXPECT_NEAR(out[1].as_tensor().data_as<float>()[i], c, 1e-5);
  }
}

// Random DAGs of kernels, views and reductions over [n, 16], [16n] (a Reshape view) and
// [n, 1] values, several of them results: planning must not change a single bit. (Each
// kernel's values are checked against <cmath> elsewhere; this checks that no planned
// storage is shared by two values alive at once, views and tuples included.)
std::string random_module(uint32_t seed) {
  std::mt19937 rng(seed);
  struct Value {
    std::string name;
    int kind;  // 0: [n, 16], 1: [16n] view, 2: [n, 1]
  };
  std::vector<Value> values{{"%x", 0}};
  std::string body;
  auto pick = [&](int kind) -> const Value* {
    std::vector<const Value*> of;
    for (const Value& v : values)
      if (v.kind == kind) of.push_back(&v);
    if (of.empty()) return nullptr;
    return of[std::uniform_int_distribution<size_t>(0, of.size() - 1)(rng)];
  };
  const char* unary[] = {"Tanh", "Sigmoid", "Neg", "Abs"};
  const char* binary[] = {"Add", "Mul", "Sub"};
  for (int k = 0; k < 30; ++k) {
    const std::string name = "%v" + std::to_string(k);
    int choice = std::uniform_int_distribution<int>(0, 5)(rng);
    const Value* a = pick(std::uniform_int_distribution<int>(0, 2)(rng));
    if (a == nullptr) a = &values[0];
    std::string call;
    int kind = a->kind;
    if (choice <= 1) {
      call =
          std::string(unary[std::uniform_int_distribution<int>(0, 3)(rng)]) + "(" + a->name + ")";
    } else if (choice <= 3) {
      const Value* b = pick(a->kind == 1 ? 1 : std::uniform_int_distribution<int>(0, 1)(rng) * 2);
      if (b == nullptr || (a->kind == 2 && b->kind == 0)) b = a;
      call = std::string(binary[std::uniform_int_distribution<int>(0, 2)(rng)]) + "(" + a->name +
             ", " + b->name + ")";
      kind = std::min(a->kind, b->kind);
    } else if (choice == 4) {
      if (a->kind == 0) {
        call = "Reshape(" + a->name + ", const(i64[1], [-1]))";
        kind = 1;
      } else if (a->kind == 1) {
        call = "Reshape(" + a->name + ", const(i64[2], [-1, 16]))";
        kind = 0;
      } else {
        call = "Tanh(" + a->name + ")";
      }
    } else {
      if (a->kind != 0) a = &values[0];
      call = "ReduceMax(" + a->name + ", const(i64[1], [1])) {keepdims=1}";
      kind = 2;
    }
    body += "  " + name + " = " + call + "\n";
    values.push_back({name, kind});
  }
  const size_t last = values.size() - 1;
  const size_t other = std::uniform_int_distribution<size_t>(1, last - 1)(rng);
  return "dim n: 1..256\nfn @main(%x: f32[n, 16]) {\n" + body + "  return (" + values[last].name +
         ", " + values[other].name + ", " + values[other / 2 + 1].name + ")\n}\n";
}

TEST(PlanMemory, RandomGraphsComputeTheSameBitsPlannedOrNot) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    const std::string text = random_module(seed);
    Planned planned = lower_text(text.c_str(), true), plain = lower_text(text.c_str(), false);
    EXPECT_GT(planned.stats.reused + planned.stats.in_arenas + planned.stats.in_symbolic_arenas, 0u)
        << text;
    vm::VirtualMachine a(vm::Program::load(std::move(planned.exe)));
    vm::VirtualMachine b(vm::Program::load(std::move(plain.exe)));
    for (int64_t n : {1, 9, 40}) {
      std::vector<vm::Value> in{ramp({n, 16})};
      std::vector<vm::Value> x = a.run(in), y = b.run(in);
      ASSERT_EQ(x.size(), y.size());
      for (size_t k = 0; k < x.size(); ++k) {
        const vm::Tensor &p = x[k].as_tensor(), &q = y[k].as_tensor();
        ASSERT_EQ(p.shape(), q.shape()) << text;
        EXPECT_EQ(std::memcmp(p.data(), q.data(), static_cast<size_t>(p.numel()) * 4), 0)
            << "seed " << seed << " n " << n << " output " << k << "\n"
            << text;
      }
    }
  }
}

// Liveness on hand-written bytecode with a branch and a loop:
//   0 load_imm r1, 3        ; trip count
//   1 load_imm r2, 0        ; i
//   2 load_imm r3, 1
//   3 cmp r4, lt, r2, r1    ; head
//   4 if r4, 5, 7
//   5 add r2, r2, r3
//   6 goto 3
//   7 ret r2
TEST(Liveness, ALoopKeepsItsCarriedRegistersLiveAroundTheBackEdge) {
  vm::Function fn;
  fn.num_params = 1;
  fn.num_registers = 5;
  using vm::Opcode;
  fn.code = {
      {Opcode::LoadImm, {1, 3}}, {Opcode::LoadImm, {2, 0}},
      {Opcode::LoadImm, {3, 1}}, {Opcode::CmpI, {4, static_cast<int64_t>(vm::CmpKind::kLt), 2, 1}},
      {Opcode::If, {4, 5, 7}},   {Opcode::AddI, {2, 2, 3}},
      {Opcode::Goto, {3}},       {Opcode::Ret, {2}}};
  Liveness live(fn);
  ASSERT_EQ(live.blocks().size(), 4u);  // [0,3) [3,5) [5,7) [7,8)
  EXPECT_EQ(live.blocks()[1].predecessors.size(), 2u);
  EXPECT_EQ(live.live_in(1).members(), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(live.live_out(2).members(), (std::vector<uint32_t>{1, 2, 3}));
  EXPECT_EQ(live.live_in(3).members(), (std::vector<uint32_t>{2}));
  // r0 (the parameter) is never read: dead everywhere.
  EXPECT_FALSE(live.live_in(0).test(0));

  // Removing instruction 1 and doubling instruction 5 keeps the jumps on their targets.
  std::vector<std::vector<vm::Instruction>> replacement(fn.code.size());
  for (size_t pc = 0; pc < fn.code.size(); ++pc) replacement[pc] = {fn.code[pc]};
  replacement[1].clear();
  replacement[5].push_back(fn.code[5]);
  rewrite_code(fn, replacement);
  ASSERT_EQ(fn.code.size(), 8u);
  EXPECT_EQ(fn.code[3].args, (std::vector<int64_t>{4, 4, 7}));  // if r4, 4, 7
  EXPECT_EQ(fn.code[6].args, (std::vector<int64_t>{2}));        // goto 2
}

}  // namespace
}  // namespace dynvm::compiler

namespace dynvm::compiler {
namespace {

// Register allocation on a hand-written program with a loop: the values that never live
// together share slots, the loop-carried ones keep theirs, and the VM computes the same
// shape, [3 * 4 + 5 + 3, 3] = [20, 3], from the renumbered code.
TEST(AllocateRegisters, ValuesNeverAliveTogetherShareASlot) {
  vm::Executable exe = vm::assemble(R"(
.output y i64 [2]
.func main params=0
    load_imm     r0, 3
    load_imm     r1, 4
    mul          r2, r0, r1
    load_imm     r3, 5
    add          r4, r2, r3
    load_imm     r5, 0
    load_imm     r6, 1
L7: cmp          r7, lt, r5, r0
    if           r7, L9, L12
L9: add          r4, r4, r6
    add          r5, r5, r6
    goto         L7
L12: make_shape  r8, r4, r0
    shape_tensor r9, r8, 1, i64
    ret          r9
.end
)");
  vm::Function& fn = exe.functions[0];
  insert_frees(fn);
  RegisterStats stats;
  allocate_registers(fn, &stats);
  EXPECT_EQ(stats.before, 10u);
  // At most r0, r4, r5, r6 and r7 are alive at once (in the loop).
  EXPECT_LE(stats.after, 6u) << vm::disassemble(exe);
  EXPECT_EQ(fn.num_registers, stats.after);

  vm::VirtualMachine machine(vm::Program::load(std::move(exe)));
  const vm::Tensor y = machine.run({}).at(0).as_tensor();
  ASSERT_EQ(y.numel(), 2);
  EXPECT_EQ(y.data_as<int64_t>()[0], 20);
  EXPECT_EQ(y.data_as<int64_t>()[1], 3);
}

TEST(AllocateRegisters, TheRealPipelineFitsAChainInAFewRegisters) {
  TypedModule typed = infer_types_with_facts(parse_module(kChain));
  LowerOptions options;
  Lowered lowered = emit_bytecode(typed, place_devices(typed), options);
  vm::Function& fn = lowered.exe.functions.at(0);
  plan_memory(fn, lowered.exe.inputs);
  insert_frees(fn);
  RegisterStats stats;
  allocate_registers(fn, &stats);
  EXPECT_LT(stats.after * 2, stats.before);
  EXPECT_EQ(fn.num_registers, stats.after);
}

}  // namespace
}  // namespace dynvm::compiler
