// Generated kernels' memory access and control: elementwise loops over a symbolic length
// (scalar, and vectorized with a scalar tail), strided and broadcast vector loads, gathers
// through loaded indices, scatters, iota, reductions with a stack accumulator, workspace
// buffers, and a parallel loop run by the TBB executor. All through the real runtime path,
// values checked against plain double loops, outputs poisoned before each run.
#include <numeric>

#include "tests/kernels/codegen/codegen_test_util.h"
#include "vm/executor.h"

namespace dynvm::codegen::testing {
namespace {

using tir::Expr;
using vm::DType;
using vm::Tensor;

const std::vector<int64_t> kSizes = {1, 3, 7, 17, 129, 1000};

std::vector<float> ramp(int64_t n, float start, float step) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + step * static_cast<float>(i);
  return v;
}

// Y[i] = X[3i + 1] * 2 + X[3i + 2] over rows of a [m, 3] buffer: vector loads of stride 3.
tir::LoweredFunc strided_kernel() {
  Var m("m");
  BufferRef X = buffer("X", DType::kFloat32, {m, 3});
  BufferRef Y = buffer("Y", DType::kFloat32, {m});
  Var io("io"), i("i");
  const int L = 8;
  auto f = [](Expr a, Expr b) { return a * tir::make_const(a.type(), 2.0) + b; };
  arith::Expr base = io * arith::Expr(L);
  tir::Stmt vec = serial(io, 0, arith::floordiv(m, L),
                         tir::make_vector_store(Y, base, 1,
                                                f(tir::vector_buffer_load(X, base * 3 + 1, 3, L),
                                                  tir::vector_buffer_load(X, base * 3 + 2, 3, L))));
  arith::Expr tail = arith::floordiv(m, L) * arith::Expr(L);
  tir::Stmt scalar =
      serial(i, tail, m - tail, store(Y, i, f(load(X, i * 3 + 1), load(X, i * 3 + 2))));
  return kernel("strided", {X, Y}, 1, tir::make_seq({vec, scalar}));
}

// Y[i] = X[i] + b[0], the bias read by a stride-0 (broadcast) vector load.
tir::LoweredFunc broadcast_kernel() {
  Var n("n");
  BufferRef X = buffer("X", DType::kFloat32, {n});
  BufferRef b = buffer("b", DType::kFloat32, {1});
  BufferRef Y = buffer("Y", DType::kFloat32, {n});
  Var io("io"), i("i");
  const int L = 16;
  arith::Expr base = io * arith::Expr(L);
  tir::Stmt vec = serial(io, 0, arith::floordiv(n, L),
                         tir::make_vector_store(Y, base, 1,
                                                tir::vector_buffer_load(X, base, 1, L) +
                                                    tir::vector_buffer_load(b, 0, 0, L)));
  arith::Expr tail = arith::floordiv(n, L) * arith::Expr(L);
  tir::Stmt scalar = serial(i, tail, n - tail, store(Y, i, load(X, i) + load(b, 0)));
  return kernel("broadcast", {X, b, Y}, 2, tir::make_seq({vec, scalar}));
}

// out[i] = data[idx[i]] (an index loaded from memory, bound by LetIndex) and
// hist[idx[i]] = i (a store through a loaded index, LetIndex statement).
tir::LoweredFunc gather_kernel() {
  Var k("k"), n("n");
  BufferRef data = buffer("data", DType::kFloat32, {k});
  BufferRef idx = buffer("idx", DType::kInt32, {n});
  BufferRef out = buffer("out", DType::kFloat32, {n});
  BufferRef where = buffer("where", DType::kInt64, {k});
  Var i("i"), j("j"), t("t");
  tir::Stmt body = tir::make_seq(
      {store(out, i, tir::let_index(j, load(idx, i), load(data, j))),
       tir::make_let_index(t, load(idx, i), store(where, t, tir::index_value(i, tir::i64())))});
  return kernel("gather", {data, idx, out, where}, 2, serial(i, 0, n, body));
}

// Y[2i] = X[i], Y[2i + 1] = -X[i]: vector stores of stride 2 (scatters); Y's dim is n*2.
tir::LoweredFunc interleave_kernel() {
  Var n("n");
  BufferRef X = buffer("X", DType::kFloat32, {n});
  BufferRef Y = buffer("Y", DType::kFloat32, {n * 2});
  Var io("io"), i("i");
  const int L = 8;
  arith::Expr base = io * arith::Expr(L);
  Expr x = tir::vector_buffer_load(X, base, 1, L);
  tir::Stmt vec =
      serial(io, 0, arith::floordiv(n, L),
             tir::make_seq(
                 {tir::make_vector_store(Y, base * 2, 2, x),
                  tir::make_vector_store(Y, base * 2 + 1, 2, tir::call(tir::Intrinsic::kNeg, x))}));
  arith::Expr tail = arith::floordiv(n, L) * arith::Expr(L);
  tir::Stmt scalar =
      serial(i, tail, n - tail,
             tir::make_seq({store(Y, i * 2, load(X, i)),
                            store(Y, i * 2 + 1, tir::call(tir::Intrinsic::kNeg, load(X, i)))}));
  return kernel("interleave", {X, Y}, 1, tir::make_seq({vec, scalar}));
}

// Y[i] = max(float(i) * 0.5 - 3, 0): vector iota (IndexValue with lanes) and a select.
tir::LoweredFunc iota_kernel() {
  Var n("n");
  BufferRef Y = buffer("Y", DType::kFloat32, {n});
  Var io("io"), i("i");
  const int L = 16;
  auto f = [](Expr v) {
    Expr x = v * tir::make_const(v.type(), 0.5) - tir::make_const(v.type(), 3.0);
    return tir::select(tir::compare(tir::CompareOp::kGt, x, tir::make_const(x.type(), 0)), x,
                       tir::make_const(x.type(), 0));
  };
  arith::Expr base = io * arith::Expr(L);
  tir::Stmt vec =
      serial(io, 0, arith::floordiv(n, L),
             tir::make_vector_store(Y, base, 1, f(tir::vector_index_value(base, 1, tir::f32(L)))));
  arith::Expr tail = arith::floordiv(n, L) * arith::Expr(L);
  tir::Stmt scalar = serial(i, tail, n - tail, store(Y, i, f(tir::index_value(i, tir::f32()))));
  return kernel("iota", {Y}, 0, tir::make_seq({vec, scalar}));
}

// S[r] = sum_j A[r, j], accumulated in a one-element local (stack) buffer.
tir::Stmt row_sum_body(const Var& r, const arith::Expr& k, const BufferRef& A, const BufferRef& S) {
  BufferRef acc = buffer("acc", DType::kFloat32, {1}, tir::BufferScope::kLocal);
  Var j("j");
  return tir::make_allocate(
      acc, tir::make_seq({store(acc, 0, tir::make_const(tir::f32(), 0)),
                          serial(j, 0, k, store(acc, 0, load(acc, 0) + load(A, r * k + j))),
                          store(S, r, load(acc, 0))}));
}

tir::LoweredFunc row_sum_kernel() {
  Var m("m"), k("k"), r("r");
  BufferRef A = buffer("A", DType::kFloat32, {m, k});
  BufferRef S = buffer("S", DType::kFloat32, {m});
  return kernel("row_sum", {A, S}, 1, serial(r, 0, m, row_sum_body(r, k, A, S)));
}

// The same reduction with its row loop outlined into a ParallelRegion.
tir::LoweredFunc row_sum_parallel_kernel() {
  Var m("m"), k("k"), r("r");
  BufferRef A = buffer("A", DType::kFloat32, {m, k});
  BufferRef S = buffer("S", DType::kFloat32, {m});
  tir::ParallelRegion region{"rows", r, {k}, {A, S}, row_sum_body(r, k, A, S)};
  return kernel("row_sum_parallel", {A, S}, 1, tir::make_parallel_call(0, m), {region});
}

// A parallel region whose workspace allocation cannot succeed: the error must come back.
tir::LoweredFunc parallel_failure_kernel() {
  Var n("n"), r("r"), j("j");
  BufferRef X = buffer("X", DType::kFloat32, {n});
  BufferRef W =
      buffer("W", DType::kFloat32, {n * (int64_t{1} << 50)}, tir::BufferScope::kWorkspace);
  tir::Stmt body =
      tir::make_allocate(W, tir::make_seq({store(W, 0, load(X, r)), store(X, r, load(W, 0))}));
  tir::ParallelRegion region{"huge", r, {n}, {X}, body};
  return kernel("parallel_failure", {X}, 0, tir::make_parallel_call(0, n), {region});
}

// Y[i] = X[n - 1 - i] * 2 through a workspace buffer of symbolic size n.
tir::LoweredFunc workspace_kernel() {
  Var n("n"), i("i");
  BufferRef X = buffer("X", DType::kFloat32, {n});
  BufferRef Y = buffer("Y", DType::kFloat32, {n});
  BufferRef W = buffer("W", DType::kFloat32, {n}, tir::BufferScope::kWorkspace);
  tir::Stmt body =
      tir::make_seq({serial(i, 0, n, store(W, i, load(X, i) * tir::make_const(tir::f32(), 2))),
                     serial(i, 0, n, store(Y, i, load(W, n - 1 - i)))});
  return kernel("reverse_workspace", {X, Y}, 1, tir::make_allocate(W, body));
}

// Y[r, j] = X[r, k - 1 - j] through a row workspace W[k] allocated inside the row loop (a
// compute_at stage at its consumer's row): serial, and with the rows a parallel region.
tir::Stmt row_reverse_body(const Var& r, const arith::Expr& k, const BufferRef& X,
                           const BufferRef& Y) {
  BufferRef W = buffer("W", DType::kFloat32, {k}, tir::BufferScope::kWorkspace);
  Var j("j"), t("t");
  return tir::make_allocate(
      W, tir::make_seq({serial(j, 0, k, store(W, j, load(X, r * k + j))),
                        serial(t, 0, k, store(Y, r * k + t, load(W, k - 1 - t)))}));
}

tir::LoweredFunc row_reverse_kernel(bool parallel) {
  Var m("m"), k("k"), r("r");
  BufferRef X = buffer("X", DType::kFloat32, {m, k});
  BufferRef Y = buffer("Y", DType::kFloat32, {m, k});
  if (!parallel)
    return kernel("row_reverse", {X, Y}, 1, serial(r, 0, m, row_reverse_body(r, k, X, Y)));
  tir::ParallelRegion region{"rows", r, {k}, {X, Y}, row_reverse_body(r, k, X, Y)};
  return kernel("row_reverse_parallel", {X, Y}, 1, tir::make_parallel_call(0, m), {region});
}

// The same region with the allocation one loop further in (as where loop_partition split
// the row loop): still once per chunk, not once per row.
tir::LoweredFunc row_reverse_nested_kernel() {
  Var m("m"), k("k"), r("r"), once("once");
  BufferRef X = buffer("X", DType::kFloat32, {m, k});
  BufferRef Y = buffer("Y", DType::kFloat32, {m, k});
  tir::Stmt nested = serial(once, 0, 1, row_reverse_body(r, k, X, Y));
  tir::ParallelRegion region{"rows", r, {k}, {X, Y}, nested};
  return kernel("row_reverse_nested", {X, Y}, 1, tir::make_parallel_call(0, m), {region});
}

std::vector<tir::LoweredFunc> all_kernels() {
  auto add = [](const Expr& a, const Expr& b) { return a + b; };
  return {binary_kernel("add", DType::kFloat32, DType::kFloat32, 1, add),
          binary_kernel("add_v16", DType::kFloat32, DType::kFloat32, 16, add),
          strided_kernel(),
          broadcast_kernel(),
          gather_kernel(),
          interleave_kernel(),
          iota_kernel(),
          row_sum_kernel(),
          row_sum_parallel_kernel(),
          parallel_failure_kernel(),
          workspace_kernel(),
          row_reverse_kernel(false),
          row_reverse_kernel(true),
          row_reverse_nested_kernel()};
}

class MemoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    funcs_ = new std::vector<tir::LoweredFunc>(all_kernels());
    lib_ = new vm::KernelLibrary(build(*funcs_));
    program_ = load_program(*lib_, *funcs_);
  }
  static void TearDownTestSuite() {
    program_.reset();
    delete lib_;
    delete funcs_;
  }
  static std::vector<tir::LoweredFunc>* funcs_;
  static vm::KernelLibrary* lib_;
  static std::shared_ptr<const vm::Program> program_;
};
std::vector<tir::LoweredFunc>* MemoryTest::funcs_ = nullptr;
vm::KernelLibrary* MemoryTest::lib_ = nullptr;
std::shared_ptr<const vm::Program> MemoryTest::program_;

TEST_F(MemoryTest, AddMatchesAPlainLoopForEverySize) {
  vm::VirtualMachine vm(program_);
  for (const char* name : {"add", "add_v16"}) {
    for (int64_t n : kSizes) {
      std::vector<float> a = ramp(n, 0.5f, 1.25f), b = ramp(n, -3.0f, 0.75f);
      Tensor c = poisoned({n}, DType::kFloat32);
      call(vm, name, {tensor(a, DType::kFloat32), tensor(b, DType::kFloat32), c});
      std::vector<float> got = values<float>(c);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i], static_cast<float>(double{a[i]} + double{b[i]}))
            << name << " n = " << n << " i = " << i;
      }
    }
  }
}

TEST_F(MemoryTest, StridedVectorLoadsReadEveryThirdElement) {
  vm::VirtualMachine vm(program_);
  for (int64_t m : kSizes) {
    std::vector<float> x = ramp(m * 3, -7.0f, 0.37f);
    Tensor y = poisoned({m}, DType::kFloat32);
    call(vm, "strided", {tensor(x, DType::kFloat32, {m, 3}), y});
    std::vector<float> got = values<float>(y);
    for (int64_t i = 0; i < m; ++i) {
      double want = double{x[3 * i + 1]} * 2 + x[3 * i + 2];
      ASSERT_NEAR(got[i], want, 1e-6 * std::abs(want) + 1e-6) << "m = " << m << " i = " << i;
    }
  }
}

TEST_F(MemoryTest, BroadcastLoadRepeatsOneElement) {
  vm::VirtualMachine vm(program_);
  for (int64_t n : kSizes) {
    std::vector<float> x = ramp(n, 1.0f, 2.0f);
    Tensor y = poisoned({n}, DType::kFloat32);
    call(vm, "broadcast",
         {tensor(x, DType::kFloat32), tensor(std::vector<float>{0.25f}, DType::kFloat32), y});
    std::vector<float> got = values<float>(y);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], x[i] + 0.25f) << "n = " << n << " i = " << i;
  }
}

TEST_F(MemoryTest, GatherAndScatterThroughLoadedIndices) {
  vm::VirtualMachine vm(program_);
  const int64_t k = 50, n = 37;
  std::vector<float> data = ramp(k, 100.0f, -1.5f);
  std::vector<int32_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = static_cast<int32_t>((i * 17 + 3) % k);  // distinct
  Tensor out = poisoned({n}, DType::kFloat32);
  Tensor where = tensor(std::vector<int64_t>(k, -1), DType::kInt64);
  call(vm, "gather", {tensor(data, DType::kFloat32), tensor(idx, DType::kInt32), out, where});
  std::vector<float> got = values<float>(out);
  std::vector<int64_t> w = values<int64_t>(where);
  std::vector<int64_t> want_where(k, -1);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(got[i], data[idx[i]]) << i;
    want_where[idx[i]] = i;
  }
  EXPECT_EQ(w, want_where);
}

TEST_F(MemoryTest, StridedVectorStoresInterleave) {
  vm::VirtualMachine vm(program_);
  for (int64_t n : kSizes) {
    std::vector<float> x = ramp(n, -2.0f, 0.5f);
    Tensor y = poisoned({2 * n}, DType::kFloat32);
    call(vm, "interleave", {tensor(x, DType::kFloat32), y});
    std::vector<float> got = values<float>(y);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[2 * i], x[i]) << "n = " << n << " i = " << i;
      ASSERT_EQ(got[2 * i + 1], -x[i]) << "n = " << n << " i = " << i;
    }
  }
}

TEST_F(MemoryTest, VectorIotaAndSelect) {
  vm::VirtualMachine vm(program_);
  for (int64_t n : kSizes) {
    Tensor y = poisoned({n}, DType::kFloat32);
    call(vm, "iota", {y});
    std::vector<float> got = values<float>(y);
    for (int64_t i = 0; i < n; ++i) {
      double want = std::max(static_cast<double>(i) * 0.5 - 3, 0.0);
      ASSERT_EQ(got[i], want) << "n = " << n << " i = " << i;
    }
  }
}

void expect_row_sums(const Tensor& s, const std::vector<float>& a, int64_t m, int64_t k) {
  std::vector<float> got = values<float>(s);
  for (int64_t r = 0; r < m; ++r) {
    double want = 0;
    for (int64_t j = 0; j < k; ++j) want += a[r * k + j];
    ASSERT_NEAR(got[r], want, 1e-5 * (std::abs(want) + 1))
        << "m = " << m << " k = " << k << " row " << r;
  }
}

TEST_F(MemoryTest, RowSumWithStackAccumulator) {
  vm::VirtualMachine vm(program_);
  for (int64_t m : {1, 4, 33}) {
    for (int64_t k : {1, 7, 100}) {
      std::vector<float> a = ramp(m * k, -10.0f, 0.0625f);
      Tensor s = poisoned({m}, DType::kFloat32);
      call(vm, "row_sum", {tensor(a, DType::kFloat32, {m, k}), s});
      expect_row_sums(s, a, m, k);
    }
  }
}

TEST_F(MemoryTest, ParallelRowSumRunsOnTheTbbExecutor) {
  vm::Executable exe = executable_for(*lib_, *funcs_);
  exe.entry = static_cast<uint32_t>(exe.find_function("row_sum_parallel"));
  exe.inputs = {
      vm::TensorSpec{"A", DType::kFloat32, {vm::DimSpec{"m", 0, 0}, vm::DimSpec{"k", 0, 0}}},
      vm::TensorSpec{"S", DType::kFloat32, {vm::DimSpec{"m", 0, 0}}}};
  exe.outputs = {exe.inputs[1]};
  vm::TbbExecutor executor(vm::Program::load(exe), 2);
  for (int64_t m : {1, 5, 1000}) {
    const int64_t k = 64;
    std::vector<float> a = ramp(m * k, 3.0f, -0.01f);
    Tensor s = poisoned({m}, DType::kFloat32);
    std::vector<vm::Value> inputs{tensor(a, DType::kFloat32, {m, k}), s};
    std::vector<vm::Value> out = executor.run(inputs);
    ASSERT_EQ(out.size(), 1u);
    expect_row_sums(out[0].as_tensor(), a, m, k);
  }
}

TEST_F(MemoryTest, ErrorInsideAParallelRegionIsReported) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on the impossible allocation this test makes";
#else
  vm::VirtualMachine vm(program_);
  EXPECT_USER_ERROR(
      call(vm, "parallel_failure", {tensor(std::vector<float>{1, 2, 3}, DType::kFloat32)}),
      "kernel parallel_failure (parallel_failure) failed: parallel_failure: cannot "
      "allocate 13510798882111488 bytes of workspace for W");
#endif
}

TEST_F(MemoryTest, WorkspaceBufferOfSymbolicSize) {
  vm::VirtualMachine vm(program_);
  for (int64_t n : kSizes) {
    std::vector<float> x = ramp(n, 1.0f, 1.0f);
    Tensor y = poisoned({n}, DType::kFloat32);
    call(vm, "reverse_workspace", {tensor(x, DType::kFloat32), y});
    std::vector<float> got = values<float>(y);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], 2 * x[n - 1 - i]) << "n = " << n;
  }
}

// A workspace the row loop allocates at a size no row changes (first thing, or inside an
// inner loop) is allocated once around the loop (per chunk of a parallel region), not
// once per row.
TEST_F(MemoryTest, RowWorkspaceIsAllocatedOncePerLoop) {
  vm::VirtualMachine vm(program_);
  auto requests = [] {
    vm::PoolStats s = vm::device_allocator(vm::kCpu).stats();
    return s.device_allocs + s.reuses;
  };
  for (const char* name : {"row_reverse", "row_reverse_parallel", "row_reverse_nested"}) {
    for (auto [m, k] : std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {7, 20}, {64, 5}}) {
      std::vector<float> x = ramp(m * k, 1.0f, 1.0f);
      Tensor y = poisoned({m, k}, DType::kFloat32);
      Tensor xt = tensor(x, DType::kFloat32, {m, k});
      const uint64_t before = requests();
      call(vm, name, {xt, y});
      EXPECT_EQ(requests() - before, 1u) << name << " m = " << m;
      std::vector<float> got = values<float>(y);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < k; ++j) {
          ASSERT_EQ(got[r * k + j], x[r * k + k - 1 - j]) << name << " m = " << m << " k = " << k;
        }
      }
    }
  }
}

}  // namespace
}  // namespace dynvm::codegen::testing
