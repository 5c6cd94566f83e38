// matmul / batch_matmul / gemm end to end: built with their default schedule, compiled for
// the host into one library (LLVM's O3 dominates the run time), loaded from memory and
// called through the kernel ABI on random inputs, outputs poisoned with NaN; values are
// checked against double-precision loops. Symbolic-M kernels are compiled once and called
// at several M, including M not a multiple of the row tile.
#include "kernels/ops/matmul.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/codegen/library_builder.h"
#include "kernels/codegen/target.h"
#include "vm/error.h"
#include "vm/kernel_call.h"
#include "vm/kernel_library.h"
#include "vm/tensor.h"

namespace dynvm::ops {
namespace {

constexpr vm::DType kF32 = vm::DType::kFloat32;

TensorType f32(std::vector<arith::Expr> shape) { return {kF32, std::move(shape)}; }

vm::Tensor random(const vm::Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(vm::shape_numel(shape)));
  for (float& x : v) x = dist(rng);
  return vm::Tensor::from_vector(v, shape, kF32);
}

vm::Tensor poisoned(const vm::Shape& shape) {
  std::vector<float> v(static_cast<size_t>(vm::shape_numel(shape)), NAN);
  return vm::Tensor::from_vector(v, shape, kF32);
}

float at(const vm::Tensor& t, int64_t i) { return t.data_as<float>()[i]; }

// Every kernel the suite needs, compiled into one library once for all tests.
class MatmulKernels {
 public:
  static MatmulKernels& get() {
    static MatmulKernels* kernels = new MatmulKernels();
    return *kernels;
  }
  // Calls kernel `symbol` on (inputs..., output) and returns its status (0 = success).
  int32_t call(const std::string& symbol, const std::vector<const vm::Tensor*>& args) {
    std::vector<DLTensor> dl;
    for (const vm::Tensor* t : args) dl.push_back(t->as_dltensor());
    vm::KernelCallContext ctx;
    int32_t rc = lib_->kernel(symbol)(dl.data(), static_cast<int32_t>(dl.size()), &ctx);
    EXPECT_EQ(rc, 0) << symbol << ": " << ctx.error;
    return rc;
  }

  arith::Var m{"m"};
  arith::Var rows{"rows"};

 private:
  MatmulKernels() {
    std::vector<tir::LoweredFunc> funcs;
    auto add = [&](const OpInstance& op, const std::string& symbol) {
      funcs.push_back(lower_op(op, {}, symbol));
    };
    for (auto [mm, k, n] : std::vector<std::array<int64_t, 3>>{
             {1, 1, 1}, {3, 7, 17}, {129, 65, 33}, {512, 512, 512}}) {
      add(matmul(f32({mm, k}), f32({k, n})), name(mm, k, n));
    }
    add(matmul(f32({m, 40}), f32({40, 70})), "mm_sym_m");
    add(batch_matmul(f32({1, m, 9}), f32({3, 9, 20})), "bmm_bcast_a");
    add(batch_matmul(f32({4, 5, 9}), f32({1, 9, 33})), "bmm_bcast_b");
    add(batch_matmul(f32({2, m, 16}), f32({16, 24})), "bmm_shared_b");
    add(batch_matmul(f32({2, 1, m, 9}), f32({3, 9, 20})), "bmm_4d_bcast");
    add(batch_matmul(f32({m, 7}), f32({2, 7, 18})), "bmm_matrix_a");
    GemmAttrs ta{true, false, 0.5, 2.0, Epilogue::kRelu};
    add(gemm(f32({19, m}), f32({19, 37}), f32({37}), ta), "gemm_ta_bias_n_relu");
    GemmAttrs tb{false, true, 1.0, -1.0, Epilogue::kNone};
    add(gemm(f32({m, 21}), f32({35, 21}), f32({m, 1}), tb), "gemm_tb_bias_m1");
    GemmAttrs both{true, true, 1.5, 1.0, Epilogue::kRelu};
    add(gemm(f32({13, 11}), f32({17, 13}), std::nullopt, both), "gemm_tatb_relu");
    add(matmul_packed_b(f32({m, 40}), f32({3, 40, 16}), 37), "mmp_sym_m");
    add(matmul_packed_b(f32({2, m, 9}), f32({2, 9, 16}), 20), "mmp_batched");
    add(matmul_packed_b(f32({m, rows, 24}), f32({2, 24, 16}), 30), "mmp_batch_and_rows");
    add(matmul_packed_b(f32({3, 5, 24}), f32({2, 24, 16}), 30), "mmp_static_batches");
    add(matmul_packed_b(f32({1, 13, 24}), f32({2, 24, 16}), 30), "mmp_static_one_batch");
    add(matmul_packed_b(f32({m, 1, rows, 3, 24}), f32({2, 24, 16}), 30), "mmp_rank5");
    for (int64_t tile_n : {16, 48}) {
      funcs.push_back(lower_op(matmul_packed_b(f32({m, 40}), f32({3, 40, 16}), 37),
                               {{"tile_n", tile_n}, {"tile_m", 3}},
                               "mmp_tile_n" + std::to_string(tile_n)));
    }
    lib_ = vm::LoadedLibrary::load(codegen::build_library(funcs, codegen::Target::host()).bytes,
                                   "matmul_test");
  }

 public:
  static std::string name(int64_t m, int64_t k, int64_t n) {
    return "mm_" + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
  }

 private:
  std::unique_ptr<vm::LoadedLibrary> lib_;
};

// want[b][i][j] = sum_k a(b, i, k) * b(b, k, j) in double, via accessor functions.
struct Product {
  int64_t batch, m, k, n;
  std::function<double(int64_t, int64_t, int64_t)> a;  // (batch, i, kk)
  std::function<double(int64_t, int64_t, int64_t)> b;  // (batch, kk, j)
  std::vector<double> compute() const {
    std::vector<double> out;
    for (int64_t bb = 0; bb < batch; ++bb) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t kk = 0; kk < k; ++kk) acc += a(bb, i, kk) * b(bb, kk, j);
          out.push_back(acc);
        }
      }
    }
    return out;
  }
};

void expect_close(const vm::Tensor& got, const std::vector<double>& want, int64_t k,
                  const std::string& what) {
  ASSERT_EQ(static_cast<size_t>(got.numel()), want.size()) << what;
  const double tol = 1e-6 * static_cast<double>(k) + 1e-5;
  int reported = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double g = at(got, static_cast<int64_t>(i));
    if (!(std::abs(g - want[i]) <= tol * (1 + std::abs(want[i])))) {
      ADD_FAILURE() << what << " [" << i << "]: got " << g << ", want " << want[i];
      if (++reported == 5) return;
    }
  }
}

void check_matmul(const std::string& symbol, int64_t m, int64_t k, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  vm::Tensor a = random({m, k}, rng), b = random({k, n}, rng), c = poisoned({m, n});
  ASSERT_EQ(MatmulKernels::get().call(symbol, {&a, &b, &c}), 0);
  Product p{1,
            m,
            k,
            n,
            [&](int64_t, int64_t i, int64_t kk) { return at(a, i * k + kk); },
            [&](int64_t, int64_t kk, int64_t j) { return at(b, kk * n + j); }};
  expect_close(c, p.compute(), k, symbol + " M=" + std::to_string(m));
}

TEST(Matmul, StaticShapesMatchDoubleLoops) {
  check_matmul(MatmulKernels::name(1, 1, 1), 1, 1, 1, 1);
  check_matmul(MatmulKernels::name(3, 7, 17), 3, 7, 17, 2);
  check_matmul(MatmulKernels::name(129, 65, 33), 129, 65, 33, 3);
}

TEST(Matmul, Large512SpotChecks) {
  const int64_t s = 512;
  std::mt19937 rng(4);
  vm::Tensor a = random({s, s}, rng), b = random({s, s}, rng), c = poisoned({s, s});
  ASSERT_EQ(MatmulKernels::get().call(MatmulKernels::name(s, s, s), {&a, &b, &c}), 0);
  for (int64_t i = 0; i < s * s; ++i) ASSERT_FALSE(std::isnan(at(c, i))) << "unwritten " << i;
  std::uniform_int_distribution<int64_t> pick(0, s - 1);
  std::vector<std::pair<int64_t, int64_t>> points{{0, 0}, {s - 1, s - 1}, {7, 500}};
  for (int t = 0; t < 200; ++t) points.emplace_back(pick(rng), pick(rng));
  for (auto [i, j] : points) {
    double want = 0;
    for (int64_t kk = 0; kk < s; ++kk) want += double(at(a, i * s + kk)) * at(b, kk * s + j);
    EXPECT_NEAR(at(c, i * s + j), want, 1e-3) << "(" << i << ", " << j << ")";
  }
}

TEST(Matmul, SymbolicMOneKernelManySizes) {
  // Every row count of the M tail tile (each is its own specialized copy), and whole tiles.
  for (int64_t m : {1, 2, 3, 4, 5, 6, 7, 8, 15, 37, 128}) {
    check_matmul("mm_sym_m", m, 40, 70, 10 + m);
  }
}

// B [k, n] in column panels of 16 as matmul.h documents: Bp[p, k, c] = B[k, p*16 + c],
// zero past n (written here independently of the compiler's pack_weights).
vm::Tensor pack_b(const vm::Tensor& b) {
  const int64_t k = b.shape()[0], n = b.shape()[1], panels = (n + 15) / 16;
  std::vector<float> v;
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t c = 0; c < 16; ++c) v.push_back(p * 16 + c < n ? at(b, r * n + p * 16 + c) : 0);
    }
  }
  return vm::Tensor::from_vector(v, {panels, k, 16}, kF32);
}

TEST(MatmulPackedB, MatchesTheProductWithTheUnpackedB) {
  // N = 37: three panels, the last one 5 columns and zeros; every tile_n the template has
  // reads the panels in one-panel vectors, and the M tail too.
  for (const std::string symbol : {"mmp_sym_m", "mmp_tile_n16", "mmp_tile_n48"}) {
    for (int64_t m : {1, 5, 8, 13}) {
      std::mt19937 rng(static_cast<uint32_t>(20 + m));
      vm::Tensor a = random({m, 40}, rng), b = random({40, 37}, rng), c = poisoned({m, 37});
      vm::Tensor bp = pack_b(b);
      ASSERT_EQ(MatmulKernels::get().call(symbol, {&a, &bp, &c}), 0);
      Product p{1,
                m,
                40,
                37,
                [&](int64_t, int64_t i, int64_t kk) { return at(a, i * 40 + kk); },
                [&](int64_t, int64_t kk, int64_t j) { return at(b, kk * 37 + j); }};
      expect_close(c, p.compute(), 40, symbol + " M=" + std::to_string(m));
    }
  }
  std::mt19937 rng(7);
  vm::Tensor a = random({2, 6, 9}, rng), b = random({9, 20}, rng), c = poisoned({2, 6, 20});
  vm::Tensor bp = pack_b(b);
  ASSERT_EQ(MatmulKernels::get().call("mmp_batched", {&a, &bp, &c}), 0);
  Product p{2,
            6,
            9,
            20,
            [&](int64_t bb, int64_t i, int64_t kk) { return at(a, (bb * 6 + i) * 9 + kk); },
            [&](int64_t, int64_t kk, int64_t j) { return at(b, kk * 20 + j); }};
  expect_close(c, p.compute(), 9, "mmp_batched");
}

// [Batch, M, K] runs as one product of Batch*M rows: a batch of one-row matrices (torch's
// [L, n, E] projections at n = 1), row tiles across batches, the tail of the flat rows;
// static batches, and a static batch of one (its own row loop).
TEST(MatmulPackedB, BatchesOfFewRowsRunAsOneProduct) {
  struct Case {
    std::string symbol;
    int64_t batch, m;
  };
  for (const Case& k : std::vector<Case>{{"mmp_batch_and_rows", 13, 1},
                                         {"mmp_batch_and_rows", 5, 3},
                                         {"mmp_batch_and_rows", 1, 7},
                                         {"mmp_batch_and_rows", 3, 8},
                                         {"mmp_static_batches", 3, 5},
                                         {"mmp_static_one_batch", 1, 13}}) {
    const int64_t batch = k.batch, m = k.m;
    std::mt19937 rng(static_cast<uint32_t>(batch * 10 + m));
    vm::Tensor a = random({batch, m, 24}, rng), b = random({24, 30}, rng);
    vm::Tensor c = poisoned({batch, m, 30}), bp = pack_b(b);
    ASSERT_EQ(MatmulKernels::get().call(k.symbol, {&a, &bp, &c}), 0);
    Product p{batch,
              m,
              24,
              30,
              [&](int64_t bb, int64_t i, int64_t kk) { return at(a, (bb * m + i) * 24 + kk); },
              [&](int64_t, int64_t kk, int64_t j) { return at(b, kk * 30 + j); }};
    expect_close(c, p.compute(), 24,
                 k.symbol + " " + std::to_string(batch) + "x" + std::to_string(m));
  }
}

// A channels-last [n, 1, h, w, C]: the rows are n*h*w, the dim of 1 left out of them.
TEST(MatmulPackedB, AnyRankRunsItsLeadingDimsAsRows) {
  for (auto [batch, h] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 5}, {3, 4}}) {
    std::mt19937 rng(static_cast<uint32_t>(batch * 7 + h));
    const int64_t rows = batch * h * 3;
    vm::Tensor a = random({batch, 1, h, 3, 24}, rng), b = random({24, 30}, rng);
    vm::Tensor c = poisoned({batch, 1, h, 3, 30}), bp = pack_b(b);
    ASSERT_EQ(MatmulKernels::get().call("mmp_rank5", {&a, &bp, &c}), 0);
    Product p{1,
              rows,
              24,
              30,
              [&](int64_t, int64_t i, int64_t kk) { return at(a, i * 24 + kk); },
              [&](int64_t, int64_t kk, int64_t j) { return at(b, kk * 30 + j); }};
    expect_close(c, p.compute(), 24,
                 "mmp_rank5 " + std::to_string(batch) + "x" + std::to_string(h));
  }
}

TEST(MatmulPackedB, RejectsAPackingThatDoesNotHoldN) {
  arith::Var m("m");
  EXPECT_THROW(matmul_packed_b(f32({m, 40}), f32({2, 40, 16}), 37), UserError);  // 3 panels
  EXPECT_THROW(matmul_packed_b(f32({m, 40}), f32({3, 40, 8}), 37), UserError);   // not 16 wide
  EXPECT_THROW(matmul_packed_b(f32({m, 41}), f32({3, 40, 16}), 37), UserError);  // K
}

TEST(BatchMatmul, BroadcastsBatchOfAOfBSharedBAndFourD) {
  auto& kernels = MatmulKernels::get();
  std::mt19937 rng(5);
  {  // A [1, 11, 9] against B [3, 9, 20]: A repeats.
    vm::Tensor a = random({1, 11, 9}, rng), b = random({3, 9, 20}, rng);
    vm::Tensor c = poisoned({3, 11, 20});
    ASSERT_EQ(kernels.call("bmm_bcast_a", {&a, &b, &c}), 0);
    Product p{3,
              11,
              9,
              20,
              [&](int64_t, int64_t i, int64_t k) { return at(a, i * 9 + k); },
              [&](int64_t bb, int64_t k, int64_t j) { return at(b, (bb * 9 + k) * 20 + j); }};
    expect_close(c, p.compute(), 9, "bmm_bcast_a");
  }
  {  // A [4, 5, 9] against B [1, 9, 33]: B repeats.
    vm::Tensor a = random({4, 5, 9}, rng), b = random({1, 9, 33}, rng);
    vm::Tensor c = poisoned({4, 5, 33});
    ASSERT_EQ(kernels.call("bmm_bcast_b", {&a, &b, &c}), 0);
    Product p{4,
              5,
              9,
              33,
              [&](int64_t bb, int64_t i, int64_t k) { return at(a, (bb * 5 + i) * 9 + k); },
              [&](int64_t, int64_t k, int64_t j) { return at(b, k * 33 + j); }};
    expect_close(c, p.compute(), 9, "bmm_bcast_b");
  }
  for (int64_t m : {1, 17}) {  // A [2, m, 16] against B [16, 24].
    vm::Tensor a = random({2, m, 16}, rng), b = random({16, 24}, rng);
    vm::Tensor c = poisoned({2, m, 24});
    ASSERT_EQ(kernels.call("bmm_shared_b", {&a, &b, &c}), 0);
    Product p{2,
              m,
              16,
              24,
              [&](int64_t bb, int64_t i, int64_t k) { return at(a, (bb * m + i) * 16 + k); },
              [&](int64_t, int64_t k, int64_t j) { return at(b, k * 24 + j); }};
    expect_close(c, p.compute(), 16, "bmm_shared_b M=" + std::to_string(m));
  }
  for (int64_t m : {1, 13}) {  // A [2, 1, m, 9] against B [3, 9, 20]: batch [2, 3].
    vm::Tensor a = random({2, 1, m, 9}, rng), b = random({3, 9, 20}, rng);
    vm::Tensor c = poisoned({2, 3, m, 20});
    ASSERT_EQ(kernels.call("bmm_4d_bcast", {&a, &b, &c}), 0);
    Product p{6,
              m,
              9,
              20,
              [&](int64_t bb, int64_t i, int64_t k) { return at(a, ((bb / 3) * m + i) * 9 + k); },
              [&](int64_t bb, int64_t k, int64_t j) { return at(b, ((bb % 3) * 9 + k) * 20 + j); }};
    expect_close(c, p.compute(), 9, "bmm_4d_bcast M=" + std::to_string(m));
  }
  {  // A [m, 7] against B [2, 7, 18]: the matrix repeats.
    const int64_t m = 11;
    vm::Tensor a = random({m, 7}, rng), b = random({2, 7, 18}, rng);
    vm::Tensor c = poisoned({2, m, 18});
    ASSERT_EQ(kernels.call("bmm_matrix_a", {&a, &b, &c}), 0);
    Product p{2,
              m,
              7,
              18,
              [&](int64_t, int64_t i, int64_t k) { return at(a, i * 7 + k); },
              [&](int64_t bb, int64_t k, int64_t j) { return at(b, (bb * 7 + k) * 18 + j); }};
    expect_close(c, p.compute(), 7, "bmm_matrix_a");
  }
}

double relu(double x) { return x > 0 ? x : 0; }

TEST(Gemm, TransposesAlphaBetaBiasAndRelu) {
  auto& kernels = MatmulKernels::get();
  std::mt19937 rng(6);
  for (int64_t m : {1, 10}) {  // A^T: A is [19, m]; bias [37]; 0.5 * AB + 2 * bias, relu.
    vm::Tensor a = random({19, m}, rng), b = random({19, 37}, rng), bias = random({37}, rng);
    vm::Tensor y = poisoned({m, 37});
    ASSERT_EQ(kernels.call("gemm_ta_bias_n_relu", {&a, &b, &bias, &y}), 0);
    Product p{1,
              m,
              19,
              37,
              [&](int64_t, int64_t i, int64_t k) { return at(a, k * m + i); },
              [&](int64_t, int64_t k, int64_t j) { return at(b, k * 37 + j); }};
    std::vector<double> want = p.compute();
    for (int64_t i = 0; i < m * 37; ++i) want[i] = relu(0.5 * want[i] + 2.0 * at(bias, i % 37));
    expect_close(y, want, 19, "gemm_ta_bias_n_relu M=" + std::to_string(m));
  }
  for (int64_t m : {2, 9}) {  // B^T: B is [35, 21]; bias [m, 1] with beta = -1.
    vm::Tensor a = random({m, 21}, rng), b = random({35, 21}, rng), bias = random({m, 1}, rng);
    vm::Tensor y = poisoned({m, 35});
    ASSERT_EQ(kernels.call("gemm_tb_bias_m1", {&a, &b, &bias, &y}), 0);
    Product p{1,
              m,
              21,
              35,
              [&](int64_t, int64_t i, int64_t k) { return at(a, i * 21 + k); },
              [&](int64_t, int64_t k, int64_t j) { return at(b, j * 21 + k); }};
    std::vector<double> want = p.compute();
    for (int64_t i = 0; i < m * 35; ++i) want[i] -= at(bias, i / 35);
    expect_close(y, want, 21, "gemm_tb_bias_m1 M=" + std::to_string(m));
  }
  {  // Both transposed, no bias, alpha 1.5, relu.
    vm::Tensor a = random({13, 11}, rng), b = random({17, 13}, rng), y = poisoned({11, 17});
    ASSERT_EQ(kernels.call("gemm_tatb_relu", {&a, &b, &y}), 0);
    Product p{1,
              11,
              13,
              17,
              [&](int64_t, int64_t i, int64_t k) { return at(a, k * 11 + i); },
              [&](int64_t, int64_t k, int64_t j) { return at(b, j * 13 + k); }};
    std::vector<double> want = p.compute();
    for (double& w : want) w = relu(1.5 * w);
    expect_close(y, want, 13, "gemm_tatb_relu");
  }
}

TEST(Matmul, RejectsMismatchedK) {
  EXPECT_THROW(matmul(f32({4, 5}), f32({6, 7})), ::dynvm::UserError);
  EXPECT_THROW(batch_matmul(f32({2, 4, 5}), f32({3, 5, 7})), ::dynvm::UserError);
}

}  // namespace
}  // namespace dynvm::ops
