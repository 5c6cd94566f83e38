// Reductions compiled for the host: every kind over several axis sets with and without
// keepdims, on a symbolic [m, n, k] input (one kernel, several sizes) and a static one;
// argmax / argmin with ties (first occurrence wins, or the last with select_last_index).
// References are double loops.
#include "kernels/ops/reduce.h"

#include <cmath>
#include <limits>

#include "tests/kernels/ops/op_test_util.h"

namespace dynvm::ops::testing {
namespace {

const ReduceKind kKinds[] = {ReduceKind::kSum,   ReduceKind::kMean,      ReduceKind::kMax,
                             ReduceKind::kMin,   ReduceKind::kProd,      ReduceKind::kL1,
                             ReduceKind::kL2,    ReduceKind::kLogSumExp, ReduceKind::kSumSquare,
                             ReduceKind::kLogSum};

struct AxisCase {
  std::string tag;
  std::vector<int64_t> axes;
  bool keepdims;
};

// "trailing2" and "all": the trailing reduced dims run as one flat axis of lanes (a global
// pool's h*w), with one masked tail per output.
const std::vector<AxisCase> kAxisCases = {{"last", {-1}, true},
                                          {"first_drop", {0}, false},
                                          {"outer2", {0, 2}, true},
                                          {"trailing2", {1, 2}, true},
                                          {"all", {}, false}};

// Reduces x (shape s) over `axes` (normalised) in double; output in keepdims=any order
// (row-major over the kept dims, which is the same for both keepdims settings).
std::vector<double> reference(ReduceKind kind, const vm::Tensor& x, const vm::Shape& s,
                              const std::vector<size_t>& axes) {
  std::vector<bool> red(s.size(), false);
  for (size_t a : axes) red[a] = true;
  vm::Shape kept;
  for (size_t d = 0; d < s.size(); ++d) kept.push_back(red[d] ? 1 : s[d]);
  int64_t nout = numel(kept);
  std::vector<std::vector<double>> groups(static_cast<size_t>(nout));
  for (int64_t i = 0; i < numel(s); ++i) {
    int64_t rem = i, o = 0, stride = 1;
    for (size_t d = s.size(); d-- > 0;) {
      int64_t coord = rem % s[d];
      rem /= s[d];
      if (!red[d]) o += coord * stride;
      stride *= kept[d];
    }
    groups[static_cast<size_t>(o)].push_back(static_cast<float>(at(x, i)));
  }
  std::vector<double> out;
  for (const auto& g : groups) {
    double r = 0;
    switch (kind) {
      case ReduceKind::kSum:
        for (double v : g) r += v;
        break;
      case ReduceKind::kMean:
        for (double v : g) r += v / static_cast<double>(g.size());
        break;
      case ReduceKind::kMax:
        r = -INFINITY;
        for (double v : g) r = std::max(r, v);
        break;
      case ReduceKind::kMin:
        r = INFINITY;
        for (double v : g) r = std::min(r, v);
        break;
      case ReduceKind::kProd:
        r = 1;
        for (double v : g) r *= v;
        break;
      case ReduceKind::kL1:
        for (double v : g) r += std::fabs(v);
        break;
      case ReduceKind::kL2:
        for (double v : g) r += v * v;
        r = std::sqrt(r);
        break;
      case ReduceKind::kLogSumExp:
        for (double v : g) r += std::exp(v);
        r = std::log(r);
        break;
      case ReduceKind::kSumSquare:
        for (double v : g) r += v * v;
        break;
      case ReduceKind::kLogSum:
        for (double v : g) r += v;
        r = std::log(r);
        break;
    }
    out.push_back(r);
  }
  return out;
}

vm::Shape out_shape(const vm::Shape& s, const std::vector<size_t>& axes, bool keepdims) {
  vm::Shape o;
  for (size_t d = 0; d < s.size(); ++d) {
    bool r = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!r)
      o.push_back(s[d]);
    else if (keepdims)
      o.push_back(1);
  }
  return o;
}

std::string symbol(ReduceKind kind, const AxisCase& a, bool sym) {
  return std::string(reduce_kind_name(kind)) + "_" + a.tag + (sym ? "_sym" : "_static");
}

class Reductions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), k("k");
    std::vector<OpToBuild> ops;
    for (ReduceKind kind : kKinds) {
      for (const AxisCase& a : kAxisCases) {
        ops.push_back({symbol(kind, a, true), reduce(kind, {kF32, {m, n, k}}, a.axes, a.keepdims)});
        ops.push_back(
            {symbol(kind, a, false), reduce(kind, {kF32, dims({3, 17, 7})}, a.axes, a.keepdims)});
      }
    }
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Reductions::lib_ = nullptr;

void check(const OpLibrary& lib, ReduceKind kind, const AxisCase& a, bool sym, const vm::Shape& s,
           std::mt19937& rng) {
  // prod stays near 1 in magnitude; lse's inputs are large enough to overflow a naive exp;
  // log-sum's are positive (a sum of them has a logarithm).
  double lo = kind == ReduceKind::kProd ? 0.9 : kind == ReduceKind::kLogSum ? 0.1 : -1;
  double hi = kind == ReduceKind::kProd ? 1.1 : 1;
  vm::Tensor x = random_tensor(s, kF32, rng, lo, hi);
  std::vector<size_t> axes = normalize_axes(a.axes, s.size());
  vm::Tensor y = run_op(lib, symbol(kind, a, sym), {x}, out_shape(s, axes, a.keepdims), kF32);
  // f32 accumulation over up to ~1e4 values.
  expect_close(y, reference(kind, x, s, axes), 2e-5, 2e-5,
               symbol(kind, a, sym) + " " + shape_name(s));
}

TEST_F(Reductions, EveryKindOverAxisSetsSymbolicAndStatic) {
  std::mt19937 rng(11);
  const std::vector<vm::Shape> shapes = {{1, 1, 1}, {3, 7, 17}, {2, 129, 3}, {1, 1000, 7}};
  for (ReduceKind kind : kKinds) {
    for (const AxisCase& a : kAxisCases) {
      for (const vm::Shape& s : shapes) check(*lib_, kind, a, true, s, rng);
      check(*lib_, kind, a, false, {3, 17, 7}, rng);
    }
  }
}

// Argmax / argmin, integer sums, the unroll knob and lse on large values: a small library
// of its own so that each of these tests does not rebuild the big one.
class ReductionVariants : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), k("k");
    std::vector<OpToBuild> ops;
    ops.push_back({"lse_last", reduce(ReduceKind::kLogSumExp, {kF32, {m, n, k}}, {-1}, true)});
    TensorType x{kF32, {m, n}};
    ops.push_back({"argmax_last", argmax(x, -1, true)});
    ops.push_back({"argmin_first_drop", argmin(x, 0, false)});
    ops.push_back({"argmax_ties_last", argmax(x, -1, true, true)});
    ops.push_back({"argmin_ties_last_drop", argmin(x, 0, false, true)});
    ops.push_back({"sum_unroll4_serial",
                   reduce(ReduceKind::kSum, {kF32, {m, n, k}}, {-1}, true),
                   {{"unroll", 4}, {"parallel", 0}}});
    ops.push_back({"lse_unroll8",
                   reduce(ReduceKind::kLogSumExp, {kF32, {m, n, k}}, {-1}, true),
                   {{"unroll", 8}, {"vector_width", 4}}});
    ops.push_back({"sum_i32", reduce(ReduceKind::kSum, {kI32, {m, n}}, {1}, false)});
    ops.push_back({"max_static_rows", reduce(ReduceKind::kMax, {kF32, dims({3, 37})}, {1}, false)});
    ops.push_back({"min_all", reduce(ReduceKind::kMin, {kF32, {m, n}}, {}, false)});
    // The column template (innermost dim kept): unrolled, parallel, and over int32.
    ops.push_back({"mean_columns_unroll4",
                   reduce(ReduceKind::kMean, {kF32, {m, n, k}}, {1}, false),
                   {{"unroll", 4}, {"parallel", 1}}});
    ops.push_back({"max_columns_serial", reduce(ReduceKind::kMax, {kF32, {m, n, k}}, {0}, true),
                   {{"parallel", 0}}});
    ops.push_back({"sum_i32_columns", reduce(ReduceKind::kSum, {kI32, {m, n}}, {0}, false)});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* ReductionVariants::lib_ = nullptr;

TEST_F(ReductionVariants, VectorLanesStartFromTheCombinersIdentity) {
  // Rows of 37 (two vectors and a tail of 5) reduced in 16 lanes: a lane the tail does not
  // reach must not bring a 0 into a max of negatives or a min of positives, and the
  // infinities stay what they are.
  vm::Tensor x = vm::Tensor::empty({3, 37}, kF32);
  for (int64_t i = 0; i < 37; ++i) {
    x.data_as<float>()[i] = -1e30f - static_cast<float>(i);  // max: -1e30
    x.data_as<float>()[37 + i] = -std::numeric_limits<float>::infinity();
    x.data_as<float>()[74 + i] = static_cast<float>(i % 7) - 3;  // max: 3
  }
  x.data_as<float>()[36] = -5e29f;  // the row's max, in the tail
  expect_close(run_op(*lib_, "max_static_rows", {x}, {3}, kF32),
               {-5e29, -std::numeric_limits<double>::infinity(), 3}, 1e-6, 0, "max");
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 17}, {5, 100}}) {
    vm::Tensor y = vm::Tensor::empty({m, n}, kF32);
    for (int64_t i = 0; i < m * n; ++i) y.data_as<float>()[i] = 1e30f + static_cast<float>(i);
    y.data_as<float>()[m * n - 1] = 7;  // the min, the last element
    expect_close(run_op(*lib_, "min_all", {y}, {}, kF32), {7}, 0, 0,
                 "min " + std::to_string(m) + "x" + std::to_string(n));
  }
}

TEST_F(ReductionVariants, UnrollKnobKeepsTheValues) {
  std::mt19937 rng(15);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 1}, {2, 3, 7}, {3, 5, 129}}) {
    vm::Tensor x = random_tensor(s, kF32, rng);
    vm::Shape o{s[0], s[1], 1};
    expect_close(run_op(*lib_, "sum_unroll4_serial", {x}, o, kF32),
                 reference(ReduceKind::kSum, x, s, {2}), 2e-5, 2e-5, "sum unroll 4");
    expect_close(run_op(*lib_, "lse_unroll8", {x}, o, kF32),
                 reference(ReduceKind::kLogSumExp, x, s, {2}), 2e-5, 2e-5, "lse unroll 8");
  }
}

TEST_F(ReductionVariants, LogSumExpDoesNotOverflow) {
  std::mt19937 rng(12);
  vm::Tensor x = random_tensor({2, 3, 129}, kF32, rng, 100, 101);
  vm::Tensor y = run_op(*lib_, "lse_last", {x}, {2, 3, 1}, kF32);
  std::vector<double> want;
  for (int64_t r = 0; r < 6; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < 129; ++j) m = std::max(m, at(x, r * 129 + j));
    for (int64_t j = 0; j < 129; ++j) s += std::exp(at(x, r * 129 + j) - m);
    want.push_back(m + std::log(s));
  }
  expect_close(y, want, 1e-6, 1e-6, "lse of large values");
}

TEST_F(ReductionVariants, ArgMaxArgMinTakeTheFirstOccurrence) {
  std::mt19937 rng(13);
  for (auto [m, n] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 129}, {2, 1000}}) {
    vm::Tensor x = random_tensor({m, n}, kF32, rng, -3, 3);
    for (int64_t i = 0; i < m * n; ++i) x.data_as<float>()[i] = std::round(at(x, i));  // ties
    std::vector<double> amax, amin;
    for (int64_t r = 0; r < m; ++r) {
      int64_t best = 0;
      for (int64_t j = 1; j < n; ++j)
        if (at(x, r * n + j) > at(x, r * n + best)) best = j;
      amax.push_back(static_cast<double>(best));
    }
    for (int64_t j = 0; j < n; ++j) {
      int64_t best = 0;
      for (int64_t r = 1; r < m; ++r)
        if (at(x, r * n + j) < at(x, best * n + j)) best = r;
      amin.push_back(static_cast<double>(best));
    }
    expect_close(run_op(*lib_, "argmax_last", {x}, {m, 1}, kI64), amax, 0, 0, "argmax");
    expect_close(run_op(*lib_, "argmin_first_drop", {x}, {n}, kI64), amin, 0, 0, "argmin");
  }
}

// select_last_index = 1. Row 0 is all -inf (argmax) and column 0 all +inf (argmin): values
// equal to the reductions' identities must still give the last index.
TEST_F(ReductionVariants, ArgMaxArgMinSelectLastIndexTakeTheLastOccurrence) {
  std::mt19937 rng(16);
  for (auto [m, n] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 129}, {2, 1000}}) {
    vm::Tensor x = random_tensor({m, n}, kF32, rng, -3, 3);
    for (int64_t i = 0; i < m * n; ++i) x.data_as<float>()[i] = std::round(at(x, i));  // ties
    vm::Tensor lo = x.copy_to(vm::kCpu), hi = x.copy_to(vm::kCpu);
    for (int64_t j = 0; j < n; ++j) lo.data_as<float>()[j] = -INFINITY;
    for (int64_t r = 0; r < m; ++r) hi.data_as<float>()[r * n] = INFINITY;
    std::vector<double> amax, amin;
    for (int64_t r = 0; r < m; ++r) {
      int64_t best = n - 1;
      for (int64_t j = n - 1; j-- > 0;)
        if (at(lo, r * n + j) > at(lo, r * n + best)) best = j;
      amax.push_back(static_cast<double>(best));
    }
    for (int64_t j = 0; j < n; ++j) {
      int64_t best = m - 1;
      for (int64_t r = m - 1; r-- > 0;)
        if (at(hi, r * n + j) < at(hi, best * n + j)) best = r;
      amin.push_back(static_cast<double>(best));
    }
    expect_close(run_op(*lib_, "argmax_ties_last", {lo}, {m, 1}, kI64), amax, 0, 0, "argmax");
    expect_close(run_op(*lib_, "argmin_ties_last_drop", {hi}, {n}, kI64), amin, 0, 0, "argmin");
  }
}

TEST_F(ReductionVariants, IntegerSumIsExact) {
  std::mt19937 rng(14);
  vm::Tensor x = random_tensor({5, 1000}, kI32, rng, -1000, 1000);
  std::vector<double> want(5, 0);
  for (int64_t i = 0; i < 5000; ++i) want[static_cast<size_t>(i / 1000)] += at(x, i);
  expect_close(run_op(*lib_, "sum_i32", {x}, {5}, kI32), want, 0, 0, "sum_i32");
}

// Reductions that keep the innermost dim run it in vectors with the reduce loops outside
// (schedule_column_reduction): tails of 1 to 15 columns, reduce loops shorter and longer
// than the unroll factor, and integers summed exactly.
TEST_F(ReductionVariants, ColumnsKeepTheirValues) {
  std::mt19937 rng(17);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 1}, {2, 3, 17}, {3, 13, 33}, {1, 200, 48}}) {
    vm::Tensor x = random_tensor(s, kF32, rng, -1, 1);
    expect_close(run_op(*lib_, "mean_columns_unroll4", {x}, {s[0], s[2]}, kF32),
                 reference(ReduceKind::kMean, x, s, {1}), 1e-6, 1e-6, "mean " + shape_name(s));
    vm::Tensor n = random_tensor(s, kF32, rng, -3, -1);  // a max below the 0 of a bad init
    expect_close(run_op(*lib_, "max_columns_serial", {n}, {1, s[1], s[2]}, kF32),
                 reference(ReduceKind::kMax, n, s, {0}), 0, 0, "max " + shape_name(s));
  }
  vm::Tensor x = random_tensor({37, 21}, kI32, rng, -1000, 1000);
  std::vector<double> want(21, 0);
  for (int64_t i = 0; i < 37 * 21; ++i) want[static_cast<size_t>(i % 21)] += at(x, i);
  expect_close(run_op(*lib_, "sum_i32_columns", {x}, {21}, kI32), want, 0, 0, "sum_i32 columns");
}

TEST(ReduceBuilders, RejectBadAxesAndTypes) {
  arith::Var n("n");
  EXPECT_THROW(reduce(ReduceKind::kSum, {kF32, {n}}, {1}), UserError);
  EXPECT_THROW(reduce(ReduceKind::kMean, {kI32, {n}}, {0}), UserError);
  EXPECT_EQ(normalize_axes({-1, 0, -3}, 3), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(normalize_axes({}, 2), (std::vector<size_t>{0, 1}));
}

}  // namespace
}  // namespace dynvm::ops::testing
