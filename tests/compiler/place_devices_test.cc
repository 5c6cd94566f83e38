// place_devices: where each value lives with kernels on a CUDA device (decisions only:
// dynvm has no CUDA code generator, so these modules are not lowered for CUDA), that the
// CPU kernel device needs no copy, and the values of the same modules lowered and run on
// the CPU (references worked out by hand in each test).
#include "compiler/passes/place_devices.h"

#include <gtest/gtest.h>

#include <functional>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"
#include "compiler/pipeline.h"
#include "tests/support/expect_user_error.h"
#include "vm/interpreter.h"
#include "vm/program.h"

namespace dynvm::compiler {
namespace {

const vm::Device kCuda{vm::DeviceType::kCUDA, 0};

// Shape -> Gather -> Concat on the host, a Reshape view of the input (host, like its
// source), a kernel reading that view, and a Reshape view of the kernel's output.
constexpr const char* kShapeChain = R"(dim n: 1..64
fn @main(%x: f32[n, 4, 4]) {
  %s = Shape(%x)
  %batch = Gather(%s, const(i64[1], [0])) {axis=0}
  %shape = Concat(%batch, const(i64[1], [16])) {axis=0}
  %r = Reshape(%x, %shape)
  %m = MatMul(%r, const(f32[16, 2], [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]))
  %a = Add(%m, %m)
  %v = Reshape(%a, const(i64[1], [-1]))
  return %v
}
)";

// The last row of x, selected by an index the host computes from the dims (n - 1).
constexpr const char* kHostIndex = R"(dim n: 1..64
fn @main(%x: f32[n, 3]) {
  %s = Shape(%x)
  %batch = Gather(%s, const(i64[1], [0])) {axis=0}
  %last = Sub(%batch, const(i64[1], [1]))
  %row = Gather(%x, %last) {axis=0}
  return %row
}
)";

// A branch on a value a kernel computes: sum(x) > 0 ? x + x : -x.
constexpr const char* kKernelCondition = R"(dim n: 1..64
fn @main(%x: f32[n]) {
  %sum = ReduceSum(%x) {keepdims=0}
  %c = Greater(%sum, const(f32[], [0]))
  %r = if %c {
    return Add(%x, %x)
  } else {
    return Neg(%x)
  }
  return %r
}
)";

// acc starts as x (an input, on the host) and becomes acc + x each iteration (a kernel):
// the carried value lives on the kernel device, its initial value is copied there.
// Scans collect acc before each addition: row k is (k + 1) * x; the final acc is (n + 1) * x.
constexpr const char* kLoop = R"(dim n: 1..64
fn @main(%x: f32[n]) {
  %s = Shape(%x)
  %trips = Gather(%s, const(i64[], [0])) {axis=0}
  %l = loop(max_trip=%trips, cond=none, %x) scan_outputs=1 fn(%i: i64[], %go: bool[], %acc: f32[n]) {
    %next = Add(%acc, %x)
    return (%go, %next, %acc)
  }
  return (%l.0, %l.1)
}
)";

// Two carried values swapped each iteration: the moves back are parallel.
constexpr const char* kSwap = R"(dim n: 1..64
fn @main(%x: f32[n], %y: f32[n]) {
  %s = Shape(%x)
  %trips = Gather(%s, const(i64[], [0])) {axis=0}
  %l = loop(max_trip=%trips, cond=none, %x, %y) scan_outputs=0 fn(%i: i64[], %go: bool[], %a: f32[n], %b: f32[n]) {
    return (%go, %b, %a)
  }
  return (%l.0, %l.1)
}
)";

// The var_id of the variable named `name` anywhere in the module (lets, loop parameters).
uint64_t var_named(const Module& m, const std::string& name) {
  uint64_t found = 0;
  std::function<void(const Expr&)> visit = [&](const Expr& e) {
    if (!e.defined()) return;
    if (e.kind() == ExprKind::kVar && e->name == name) found = e->var_id;
    for (const Expr& o : e->operands) visit(o);
    if (e.kind() == ExprKind::kLoop) {
      for (const Expr& p : e->body->params) visit(p);
      visit(e->body->body);
    }
  };
  for (const auto& f : m.functions) {
    for (const Expr& p : f->params) visit(p);
    visit(f->body);
  }
  EXPECT_NE(found, 0u) << "no %" << name;
  return found;
}

// The first If or Loop node in `e`.
const ExprNode* first_of(const Expr& e, ExprKind kind) {
  if (!e.defined()) return nullptr;
  if (e.kind() == kind) return e.get();
  for (const Expr& o : e->operands) {
    if (const ExprNode* n = first_of(o, kind)) return n;
  }
  return nullptr;
}

struct Placed {
  TypedModule typed;
  Placement placement;
  vm::Device device(const std::string& name, size_t field = 0) const {
    return placement.device_of(var_named(typed.module, name), field);
  }
  std::vector<vm::Device> copies(const std::string& name, size_t field = 0) const {
    return placement.copies_after(var_named(typed.module, name), field);
  }
};

Placed place(const char* text, vm::Device kernel_device) {
  TypedModule typed = infer_types_with_facts(parse_module(text));
  Placement p = place_devices(typed, kernel_device);
  return Placed{std::move(typed), std::move(p)};
}

std::vector<vm::Device> none() { return {}; }

vm::Tensor vector_of(std::vector<float> values, std::vector<int64_t> shape) {
  vm::Tensor t = vm::Tensor::empty(shape, vm::DType::kFloat32);
  for (size_t i = 0; i < values.size(); ++i) t.data_as<float>()[i] = values[i];
  return t;
}

std::vector<vm::Value> run_on_cpu(const char* text, std::vector<vm::Value> inputs) {
  vm::VirtualMachine machine(
      vm::Program::load(lower_module(infer_types_with_facts(parse_module(text)))));
  return machine.run(inputs);
}

TEST(PlaceDevices, ShapeArithmeticStaysOnTheHost) {
  Placed p = place(kShapeChain, kCuda);
  for (const char* host : {"s", "batch", "shape"}) {
    EXPECT_TRUE(p.placement.computed_on_host(var_named(p.typed.module, host))) << host;
    EXPECT_EQ(p.device(host), vm::kCpu) << host;
    EXPECT_EQ(p.copies(host), none()) << host << " is read on the host only";
  }
  // A view of the input lives where the input does (inputs arrive on the host); the MatMul
  // kernel reads it, so it is copied to the device once.
  EXPECT_EQ(p.device("x"), vm::kCpu);
  EXPECT_EQ(p.device("r"), vm::kCpu);
  EXPECT_EQ(p.copies("r"), std::vector<vm::Device>{kCuda});
  EXPECT_EQ(p.copies("x"), none());  // only the view is read by a kernel
}

TEST(PlaceDevices, KernelOutputsAndTheirViewsLiveOnTheKernelDevice) {
  Placed p = place(kShapeChain, kCuda);
  EXPECT_EQ(p.device("m"), kCuda);
  EXPECT_EQ(p.device("a"), kCuda);
  EXPECT_FALSE(p.placement.computed_on_host(var_named(p.typed.module, "m")));
  EXPECT_EQ(p.device("v"), kCuda);  // Reshape view of %a: no copy, no kernel
  EXPECT_EQ(p.copies("m"), none());
  EXPECT_EQ(p.copies("a"), none());
  // MatMul's weight is a constant (host memory): copied at the kernel's read.
  EXPECT_EQ(p.placement.read_copies.size(), 1u);
}

TEST(PlaceDevices, AHostValueReadByAKernelIsCopiedToTheDeviceOnce) {
  Placed p = place(kHostIndex, kCuda);
  EXPECT_TRUE(p.placement.computed_on_host(var_named(p.typed.module, "last")));
  EXPECT_EQ(p.device("last"), vm::kCpu);
  EXPECT_EQ(p.copies("last"), std::vector<vm::Device>{kCuda});  // Gather's indices
  EXPECT_EQ(p.copies("x"), std::vector<vm::Device>{kCuda});     // Gather's data
  EXPECT_EQ(p.device("row"), kCuda);
  EXPECT_EQ(p.placement.num_copies(), 2u);
}

TEST(PlaceDevices, AnIfOnAKernelsValueCopiesTheConditionToTheHost) {
  Placed p = place(kKernelCondition, kCuda);
  EXPECT_EQ(p.device("sum"), kCuda);
  EXPECT_EQ(p.device("c"), kCuda);
  EXPECT_EQ(p.copies("c"), std::vector<vm::Device>{vm::kCpu});  // for LoadScalar
  EXPECT_EQ(p.copies("x"), std::vector<vm::Device>{kCuda});  // read by three kernels, copied once
  EXPECT_EQ(p.device("r"), kCuda);  // both branches are kernels: no copy at the join
  const JoinCopies* join =
      p.placement.join(first_of(p.typed.module.find_function("main")->body, ExprKind::kIf));
  ASSERT_NE(join, nullptr);
  EXPECT_FALSE(join->first.at(0).has_value());
  EXPECT_FALSE(join->second.at(0).has_value());
}

TEST(PlaceDevices, ALoopCarriesOnTheDeviceAndReadsItsTripCountOnTheHost) {
  Placed p = place(kLoop, kCuda);
  EXPECT_EQ(p.device("trips"), vm::kCpu);
  EXPECT_EQ(p.copies("trips"), none());
  EXPECT_EQ(p.device("acc"), kCuda);   // the body returns a kernel's value for it
  EXPECT_EQ(p.device("i"), vm::kCpu);  // made on the host each iteration
  EXPECT_EQ(p.device("l", 0), kCuda);
  EXPECT_EQ(p.device("l", 1), kCuda);  // stacked by a kernel
  const JoinCopies* join =
      p.placement.join(first_of(p.typed.module.find_function("main")->body, ExprKind::kLoop));
  ASSERT_NE(join, nullptr);
  ASSERT_EQ(join->first.size(), 1u);
  EXPECT_EQ(join->first[0], std::optional<vm::Device>(kCuda));  // x, the initial acc
  ASSERT_EQ(join->second.size(), 3u);                           // cond', acc', scan
  EXPECT_FALSE(join->second[0].has_value());                    // %go is a host tensor
  EXPECT_FALSE(join->second[1].has_value());
  EXPECT_FALSE(join->second[2].has_value());
}

TEST(PlaceDevices, TheCpuNeedsNoCopies) {
  for (const char* text : {kShapeChain, kHostIndex, kKernelCondition, kLoop, kSwap}) {
    Placed p = place(text, vm::kCpu);
    EXPECT_EQ(p.placement.num_copies(), 0u) << text;
    for (const auto& [var, devices] : p.placement.devices) {
      for (vm::Device d : devices) EXPECT_EQ(d, vm::kCpu) << text;
    }
  }
  // Host decisions do not depend on the kernel device.
  TypedModule typed = infer_types_with_facts(parse_module(kShapeChain));
  EXPECT_EQ(place_devices(typed, vm::kCpu).host_computed,
            place_devices(typed, kCuda).host_computed);
  EXPECT_EQ(place_devices(typed, kCuda).host_computed.size(), 3u);
}

TEST(PlaceDevices, LoweredForTheCpuTheValuesAreRight) {
  // kHostIndex: the last row of x (indices i64[1]: a [1, 3] result).
  vm::Tensor x = vector_of({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  vm::Tensor row = run_on_cpu(kHostIndex, {x}).at(0).as_tensor();
  ASSERT_EQ(row.shape(), (vm::Shape{1, 3}));
  EXPECT_FLOAT_EQ(row.data_as<float>()[0], 7);
  EXPECT_FLOAT_EQ(row.data_as<float>()[2], 9);

  // kKernelCondition: sum 2 > 0 -> x + x; sum -2 -> -x.
  vm::Tensor pos = run_on_cpu(kKernelCondition, {vector_of({3, -1}, {2})}).at(0).as_tensor();
  EXPECT_FLOAT_EQ(pos.data_as<float>()[0], 6);
  EXPECT_FLOAT_EQ(pos.data_as<float>()[1], -2);
  vm::Tensor neg = run_on_cpu(kKernelCondition, {vector_of({1, -3}, {2})}).at(0).as_tensor();
  EXPECT_FLOAT_EQ(neg.data_as<float>()[0], -1);
  EXPECT_FLOAT_EQ(neg.data_as<float>()[1], 3);

  // kLoop with x = [1, 2]: two iterations; acc = 3x = [3, 6]; scans [[1, 2], [2, 4]].
  std::vector<vm::Value> out = run_on_cpu(kLoop, {vector_of({1, 2}, {2})});
  vm::Tensor acc = out.at(0).as_tensor(), scans = out.at(1).as_tensor();
  EXPECT_FLOAT_EQ(acc.data_as<float>()[0], 3);
  EXPECT_FLOAT_EQ(acc.data_as<float>()[1], 6);
  ASSERT_EQ(scans.shape(), (vm::Shape{2, 2}));
  const float want[] = {1, 2, 2, 4};
  for (int k = 0; k < 4; ++k) EXPECT_FLOAT_EQ(scans.data_as<float>()[k], want[k]) << k;

  // kSwap with n = 3: swapped three times, the results are (y, x).
  std::vector<vm::Value> swapped =
      run_on_cpu(kSwap, {vector_of({1, 2, 3}, {3}), vector_of({4, 5, 6}, {3})});
  EXPECT_FLOAT_EQ(swapped.at(0).as_tensor().data_as<float>()[0], 4);
  EXPECT_FLOAT_EQ(swapped.at(1).as_tensor().data_as<float>()[2], 3);

  // kShapeChain with x[b, i, j] = 1: each row of 16 ones times the 16 rows [1, 0] of the
  // weight gives [16, 0], doubled by the Add: [32, 0] per batch row.
  vm::Tensor ones = vm::Tensor::empty({2, 4, 4}, vm::DType::kFloat32);
  for (int64_t i = 0; i < ones.numel(); ++i) ones.data_as<float>()[i] = 1;
  vm::Tensor v = run_on_cpu(kShapeChain, {ones}).at(0).as_tensor();
  ASSERT_EQ(v.shape(), (vm::Shape{4}));
  const float chain[] = {32, 0, 32, 0};
  for (int k = 0; k < 4; ++k) EXPECT_FLOAT_EQ(v.data_as<float>()[k], chain[k]) << k;
}

// The refusal comes after the bytecode (with its copies) is emitted: an inconsistency
// between placement and lowering would be an InternalError before it.
TEST(PlaceDevices, KernelsForCudaAreRefusedWhereTheyWouldBeGenerated) {
  // (kSwap has no kernel: nothing to refuse.)
  for (const char* text : {kShapeChain, kHostIndex, kKernelCondition, kLoop}) {
    TypedModule typed = infer_types_with_facts(parse_module(text));
    LowerOptions options;
    options.kernel_device = kCuda;
    EXPECT_USER_ERROR(lower_module(typed, options), "kernels for cuda:0 are not generated yet");
  }
}

}  // namespace
}  // namespace dynvm::compiler
