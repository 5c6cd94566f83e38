// Shape specialization end to end: the variants the specializer plans for a matmul with
// symbolic M and an add with a symbolic last dim, compiled into one library, embedded in
// an executable and run by the VM, whose InvokeKernel picks the variant. Values are
// checked against double-precision loops, the picked variant against the conditions.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "kernels/dispatch/kernel_set.h"
#include "kernels/dispatch/specialize.h"
#include "kernels/ops/elementwise.h"
#include "kernels/ops/matmul.h"
#include "tests/support/expect_user_error.h"
#include "vm/asm/assembler.h"
#include "vm/interpreter.h"
#include "vm/kernel_call.h"
#include "vm/kernel_library.h"
#include "vm/parallel.h"
#include "vm/program.h"

namespace dynvm::dispatch {
namespace {

constexpr vm::DType kF32 = vm::DType::kFloat32;
constexpr int64_t kK = 24, kN = 40;

OpBuilder matmul_builder() {
  return [](const std::vector<ops::TensorType>& in) { return ops::matmul(in[0], in[1]); };
}
OpBuilder add_builder() {
  return [](const std::vector<ops::TensorType>& in) {
    return ops::binary(ops::BinaryOp::kAdd, in[0], in[1]);
  };
}

std::vector<ops::TensorType> matmul_inputs(const arith::Var& m) {
  return {{kF32, {m, kK}}, {kF32, {kK, kN}}};
}

TEST(Specialize, PlansStaticThenResidueThenSymbolic) {
  arith::Var m("m");
  SpecializeOptions options;
  options.static_shapes = {{{"m", 37}}, {{"m", 1}}, {{"m", 37}}};  // 37 twice: made once
  SpecializedOp op = specialize("mm", matmul_builder(), matmul_inputs(m), options);
  ASSERT_EQ(op.variants.size(), 4u);
  EXPECT_EQ(op.num_inputs, 2u);
  EXPECT_EQ(op.num_outputs, 1u);
  using K = vm::DimPredicateKind;
  EXPECT_EQ(op.variants[0].symbol, "mm__static_m37");
  EXPECT_EQ(op.variants[0].conditions, (std::vector<vm::DimPredicate>{{0, 0, K::kEq, 37, 0}}));
  EXPECT_EQ(op.variants[1].symbol, "mm__static_m1");
  EXPECT_EQ(op.variants[2].symbol, "mm__mod_m8");  // matmul's tile_m default
  EXPECT_EQ(op.variants[2].description, "m % 8 == 0");
  EXPECT_EQ(op.variants[2].conditions, (std::vector<vm::DimPredicate>{{0, 0, K::kModEq, 8, 0}}));
  EXPECT_EQ(op.variants[3].symbol, "mm");
  EXPECT_TRUE(op.variants[3].conditions.empty());
  // Each variant is the op re-instantiated: the static one has a constant M.
  EXPECT_TRUE(op.variants[0].op.outputs[0]->shape()[0].is_int_imm());
  EXPECT_EQ(op.variants[0].op.outputs[0]->shape()[0].int_value(), 37);
  EXPECT_FALSE(op.variants[3].op.outputs[0]->shape()[0].is_int_imm());

  vm::Kernel table = dispatch_table(op, 2);
  EXPECT_EQ(table.name, "mm");
  EXPECT_EQ(table.library, 2u);
  ASSERT_EQ(table.variants.size(), 4u);
  EXPECT_EQ(table.variants[2].symbol, "mm__mod_m8");
}

TEST(Specialize, StaticOpHasOneUnconditionalVariant) {
  SpecializedOp op =
      specialize("mm", matmul_builder(), {{kF32, {arith::make_int(5), kK}}, {kF32, {kK, kN}}});
  ASSERT_EQ(op.variants.size(), 1u);
  EXPECT_TRUE(op.variants[0].conditions.empty());
}

TEST(Specialize, NoResidueVariantsWhenTurnedOff) {
  SpecializeOptions options;
  options.residue_classes = false;
  SpecializedOp op = specialize("mm", matmul_builder(), matmul_inputs(arith::Var("m")), options);
  ASSERT_EQ(op.variants.size(), 1u);
}

TEST(Specialize, BadStaticShapesAreUserErrors) {
  arith::Var m("m"), n("n");
  SpecializeOptions unknown;
  unknown.static_shapes = {{{"batch", 4}}};
  EXPECT_USER_ERROR(specialize("mm", matmul_builder(), matmul_inputs(m), unknown),
                    "no symbolic dim named 'batch' (symbolic dims: m)");
  SpecializeOptions negative;
  negative.static_shapes = {{{"m", -1}}};
  EXPECT_USER_ERROR(specialize("mm", matmul_builder(), matmul_inputs(m), negative), "< 0");
  // n appears only as n + 1: nothing at run time reads it alone.
  SpecializeOptions hidden;
  hidden.static_shapes = {{{"n", 3}}};
  std::vector<ops::TensorType> in{{kF32, {m, arith::Expr(n) + 1}}, {kF32, {m, arith::Expr(n) + 1}}};
  EXPECT_USER_ERROR(specialize("add", add_builder(), in, hidden), "only inside expressions");
  SpecializeOptions on_static;
  on_static.static_shapes = {{{"m", 3}}};
  EXPECT_USER_ERROR(specialize("mm", matmul_builder(),
                               {{kF32, {arith::make_int(5), kK}}, {kF32, {kK, kN}}}, on_static),
                    "every dim is already static");
}

// The symbolic matmul runs its M tail (m % 8 rows) as a second parallel region; the
// residue variant proves 8 divides M and has none.
TEST(Specialize, ResidueVariantHasNoTailRegion) {
  SpecializedOp op = specialize("mm", matmul_builder(), matmul_inputs(arith::Var("m")));
  ASSERT_EQ(op.variants.size(), 2u);
  auto regions = [](const Variant& v) {
    return ops::lower_op(v.op, v.knobs, v.symbol).regions.size();
  };
  EXPECT_EQ(regions(op.variants[0]), 1u);
  EXPECT_EQ(regions(op.variants[1]), 2u);
}

// An add of inputs whose dims are different symbols has run-time selects as output dims
// (equal, or one is 1) and a kernel that broadcasts every index; the specializer adds the
// plain add for the run where they are equal, with its own residue class in front.
TEST(Specialize, EqualDimVariantsForBroadcastDimsNotProvedEqual) {
  arith::Var r("r"), c("c"), r2("r2"), c2("c2");
  SpecializedOp op = specialize("add", add_builder(), {{kF32, {r, c}}, {kF32, {r2, c2}}});
  using K = vm::DimPredicateKind;
  const std::vector<vm::DimPredicate> equal{{1, 0, K::kDimEq, 0, 0}, {1, 1, K::kDimEq, 0, 1}};
  ASSERT_EQ(op.variants.size(), 3u);  // equal with a residue class, equal, any
  EXPECT_EQ(op.variants[0].symbol.rfind("add__eq__mod", 0), 0u) << op.variants[0].symbol;
  ASSERT_EQ(op.variants[0].conditions.size(), 3u);
  EXPECT_EQ(op.variants[0].conditions[0], equal[0]);
  EXPECT_EQ(op.variants[0].conditions[1], equal[1]);
  EXPECT_EQ(op.variants[0].conditions[2].kind, K::kModEq);
  EXPECT_EQ(op.variants[1].symbol, "add__eq");
  EXPECT_EQ(op.variants[1].description, "r2 == r, c2 == c");
  EXPECT_EQ(op.variants[1].conditions, equal);
  EXPECT_TRUE(op.variants[2].conditions.empty());
  // The equal variant's output dims are its inputs' own; the broadcasting one's are selects.
  for (size_t axis = 0; axis < 2; ++axis) {
    EXPECT_EQ(op.variants[1].op.outputs[0]->shape()[axis].kind(), arith::ExprKind::kVar);
    EXPECT_EQ(op.variants[2].op.outputs[0]->shape()[axis].kind(), arith::ExprKind::kSelect);
  }
  // Turned off, or with dims already one symbol: no such variants.
  SpecializeOptions off;
  off.equal_dim_variants = false;
  EXPECT_EQ(specialize("add", add_builder(), {{kF32, {r, c}}, {kF32, {r2, c2}}}, off)
                .variants.back()
                .symbol,
            "add");
  for (const Variant& v :
       specialize("add", add_builder(), {{kF32, {r, c}}, {kF32, {r, c}}}).variants) {
    EXPECT_EQ(v.symbol.find("__eq"), std::string::npos) << v.symbol;
  }
}

// ---- through the VM ----

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

vm::Tensor tensor(const vm::Shape& shape, const std::vector<float>& values) {
  vm::Tensor t = vm::Tensor::empty(shape, kF32);
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

// (The library goes through a file named by the process id: ctest runs each test of this
// suite in its own process, all setting up at once.)
// main(a, b) = kernel 0 (a, b) into a fresh [dim0(a), out_cols] f32 tensor (out_cols = 0:
// dim1 of a, for elementwise ops). `signature`: the .input / .output lines.
std::shared_ptr<const vm::Program> make_program(const CompiledKernels& compiled,
                                                const std::string& signature, int64_t out_cols,
                                                const std::string& tmp) {
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(reinterpret_cast<const char*>(compiled.library.bytes.data()),
            static_cast<std::streamsize>(compiled.library.bytes.size()));
  }
  std::string cols = out_cols > 0 ? str_cat("load_imm r3, ", out_cols) : "dim r3, r0, 1";
  std::string text = str_cat(R"(
.target "host"
)",
                             signature, R"(
.library ")",
                             tmp, R"(" target=")", compiled.library.target, R"("
.kernel k inputs=2 outputs=1 library=0
    variant replaced_by_the_dispatch_table
.func main params=2
    dim r2, r0, 0
    )",
                             cols, R"(
    make_shape r4, r2, r3
    mul r5, r2, r3
    load_imm r6, 4
    mul r7, r5, r6
    alloc_storage r8, r7, cpu
    load_imm r9, 0
    alloc_tensor r10, r8, r9, r4, f32
    invoke_kernel k, 2, r0, r1, r10
    ret r10
.end
)");
  vm::Executable exe = vm::assemble(text, "dispatch_test.vmasm", ".");
  std::filesystem::remove(tmp);
  exe.kernels = compiled.kernels;
  return vm::Program::load(exe);
}

class DispatchThroughVm : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m");
    SpecializeOptions options;
    options.static_shapes = {{{"m", 37}}};
    CompiledKernels mm = compile_kernels(
        {specialize("mm", matmul_builder(), matmul_inputs(m), options)}, codegen::Target::host());
    matmul_ =
        make_program(mm,
                     ".input a f32 [m:1..100000, 24]\n.input b f32 [24, 40]\n"
                     ".output c f32 [m, 40]",
                     kN, testing::TempDir() + "dispatch_mm_" + std::to_string(getpid()) + ".so");

    arith::Var rows("rows"), cols("cols");
    std::vector<ops::TensorType> in{{kF32, {rows, cols}}, {kF32, {rows, cols}}};
    CompiledKernels add =
        compile_kernels({specialize("add", add_builder(), in)}, codegen::Target::host());
    add_ = make_program(add,
                        ".input x f32 [r:1..1000, c:1..1000]\n.input y f32 [r, c]\n"
                        ".output z f32 [r, c]",
                        0, testing::TempDir() + "dispatch_add_" + std::to_string(getpid()) + ".so");

    arith::Var r2("r2"), c2("c2");
    std::vector<ops::TensorType> broadcast_in{{kF32, {rows, cols}}, {kF32, {r2, c2}}};
    CompiledKernels broadcast =
        compile_kernels({specialize("add", add_builder(), broadcast_in)}, codegen::Target::host());
    broadcast_add_ =
        make_program(broadcast,
                     ".input x f32 [r:1..1000, c:1..1000]\n.input y f32 [r2:1..1000, c2:1..1000]\n"
                     ".output z f32 [r, c]",
                     0, testing::TempDir() + "dispatch_badd_" + std::to_string(getpid()) + ".so");
  }
  static void TearDownTestSuite() {
    matmul_.reset();
    add_.reset();
    broadcast_add_.reset();
  }
  static std::shared_ptr<const vm::Program> matmul_, add_, broadcast_add_;
};
std::shared_ptr<const vm::Program> DispatchThroughVm::matmul_, DispatchThroughVm::add_,
    DispatchThroughVm::broadcast_add_;

TEST_F(DispatchThroughVm, MatmulRunsTheVariantItsShapeSelects) {
  ASSERT_EQ(matmul_->exe().kernels[0].variants.size(), 3u);  // m == 37, m % 8 == 0, any
  vm::VirtualMachine vm(matmul_);
  std::mt19937 rng(3);
  struct Case {
    int64_t m;
    int64_t variant;
  };
  for (Case c : {Case{1, 2}, Case{8, 1}, Case{37, 0}, Case{16, 1}, Case{45, 2}, Case{3, 2},
                 Case{64, 1}, Case{37, 0}}) {
    std::vector<float> a = random_values(static_cast<size_t>(c.m * kK), rng);
    std::vector<float> b = random_values(kK * kN, rng);
    std::vector<vm::Value> in{tensor({c.m, kK}, a), tensor({kK, kN}, b)};
    std::vector<vm::Value> out = vm.run(in);
    EXPECT_EQ(vm.last_variant(0), c.variant) << "m = " << c.m;
    const vm::Tensor& y = out.at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{c.m, kN}));
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        double want = 0;
        for (int64_t k = 0; k < kK; ++k) {
          want += double{a[static_cast<size_t>(i * kK + k)]} * b[static_cast<size_t>(k * kN + j)];
        }
        ASSERT_NEAR(y.data_as<float>()[i * kN + j], want, 1e-4)
            << "m = " << c.m << " at (" << i << ", " << j << ")";
      }
    }
  }
}

TEST_F(DispatchThroughVm, SameShapeSameVariantEveryTime) {
  vm::VirtualMachine vm(add_);
  std::mt19937 rng(4);
  for (int round = 0; round < 10; ++round) {
    for (auto [r, c, variant] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {3, 16, 0}, {3, 17, 1}, {1, 8, 0}, {5, 129, 1}, {3, 16, 0}}) {
      std::vector<float> x = random_values(static_cast<size_t>(r * c), rng);
      std::vector<float> y = random_values(static_cast<size_t>(r * c), rng);
      std::vector<vm::Value> in{tensor({r, c}, x), tensor({r, c}, y)};
      std::vector<vm::Value> out = vm.run(in);
      ASSERT_EQ(vm.last_variant(0), variant) << r << "x" << c;
      const float* z = out.at(0).as_tensor().data_as<float>();
      for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(z[i], x[i] + y[i]) << r << "x" << c;
    }
  }
}

// x [r, c] + y [r2, c2]: equal shapes run the plain add (its residue class when c is a
// multiple of the vector width), a y broadcast along either axis runs the symbolic kernel.
TEST_F(DispatchThroughVm, EqualBroadcastDimsRunThePlainAdd) {
  ASSERT_EQ(broadcast_add_->exe().kernels[0].variants.size(), 3u);
  vm::VirtualMachine vm(broadcast_add_);
  std::mt19937 rng(5);
  struct Case {
    int64_t r, c, r2, c2, variant;
  };
  for (Case k : {Case{3, 16, 3, 16, 0}, Case{3, 17, 3, 17, 1}, Case{3, 16, 1, 16, 2},
                 Case{3, 17, 3, 1, 2}, Case{1, 1, 1, 1, 1}, Case{5, 32, 5, 32, 0}}) {
    std::vector<float> x = random_values(static_cast<size_t>(k.r * k.c), rng);
    std::vector<float> y = random_values(static_cast<size_t>(k.r2 * k.c2), rng);
    std::vector<vm::Value> in{tensor({k.r, k.c}, x), tensor({k.r2, k.c2}, y)};
    std::vector<vm::Value> out = vm.run(in);
    const std::string shapes = str_cat(k.r, "x", k.c, " + ", k.r2, "x", k.c2);
    EXPECT_EQ(vm.last_variant(0), k.variant) << shapes;
    const float* z = out.at(0).as_tensor().data_as<float>();
    for (int64_t i = 0; i < k.r; ++i) {
      for (int64_t j = 0; j < k.c; ++j) {
        const float want = x[static_cast<size_t>(i * k.c + j)] +
                           y[static_cast<size_t>((k.r2 == 1 ? 0 : i) * k.c2 + (k.c2 == 1 ? 0 : j))];
        ASSERT_EQ(z[i * k.c + j], want) << shapes << " at (" << i << ", " << j << ")";
      }
    }
  }
}

// The residue variant binds m_div8 = dim floordiv 8 and refuses a dim that is not a
// multiple of 8 (if it were ever called without its condition), naming the dim.
TEST_F(DispatchThroughVm, ResidueVariantRefusesADimOffItsClass) {
  auto library = vm::LoadedLibrary::load(matmul_->exe().libraries[0].bytes, "mm");
  DynvmKernelFn fn = library->kernel("mm__mod_m8");
  vm::Tensor a = vm::Tensor::empty({9, kK}, kF32), b = vm::Tensor::empty({kK, kN}, kF32);
  vm::Tensor c = vm::Tensor::empty({9, kN}, kF32);
  std::vector<DLTensor> args{a.as_dltensor(), b.as_dltensor(), c.as_dltensor()};
  vm::KernelCallContext ctx;
  ctx.parallel = &vm::serial_backend();
  EXPECT_NE(fn(args.data(), 3, &ctx), 0);
  EXPECT_NE(ctx.error.find("dim 0 is 9, expected 8"), std::string::npos) << ctx.error;
}

}  // namespace
}  // namespace dynvm::dispatch
