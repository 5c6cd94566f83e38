// TopK compiled for the host: the selection passes of a constant k (up to 32) and the
// counted places of a symbolic one, on symbolic rows with many ties, infinities at both
// ends, both directions and both axes, f32 and i64. The reference is std::stable_sort of
// each row (ties keep the lower index first, as ONNX Runtime), values and indices exact.
#include "kernels/ops/topk.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "tests/kernels/ops/op_test_util.h"

namespace dynvm::ops::testing {
namespace {

std::string symbol(const std::string& form, int64_t axis, bool largest) {
  return form + "_axis" + std::to_string(axis) + (largest ? "_largest" : "_smallest");
}

class TopK : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), k("k");
    std::vector<OpToBuild> ops;
    for (int64_t axis : {0, 1}) {
      for (bool largest : {true, false}) {
        std::vector<arith::Expr> passes = {m, n}, counted = {m, n};
        passes[static_cast<size_t>(axis)] = arith::make_int(5);
        counted[static_cast<size_t>(axis)] = k;
        ops.push_back(
            {symbol("passes", axis, largest), topk({kF32, {m, n}}, axis, largest, passes)});
        ops.push_back(
            {symbol("counted", axis, largest), topk({kF32, {m, n}}, axis, largest, counted)});
      }
    }
    ops.push_back({"passes_i64", topk({kI64, {m, n}}, 1, true, {m, arith::make_int(32)})});
    ops.push_back({"passes_one", topk({kF32, {m, n}}, -1, false, {m, arith::make_int(1)})});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }

 public:
  static OpLibrary* lib_;
};
OpLibrary* TopK::lib_ = nullptr;

// Values drawn from a few levels (so that most rows have ties), some of them infinite.
vm::Tensor tied(const vm::Shape& s, vm::DType dtype, std::mt19937& rng) {
  vm::Tensor x = vm::Tensor::empty(s, dtype);
  std::uniform_int_distribution<int> level(-4, 4);
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < numel(s); ++i) {
    const int l = level(rng);
    if (dtype == kI64) {
      x.data_as<int64_t>()[i] = l * 1000;
    } else {
      x.data_as<float>()[i] = l == 4 ? inf : l == -4 ? -inf : static_cast<float>(l) * 0.5f;
    }
  }
  return x;
}

void check(const std::string& name, const vm::Tensor& x, size_t axis, bool largest, int64_t k) {
  const vm::Shape& s = x.shape();
  vm::Shape out_shape = s;
  out_shape[axis] = k;
  vm::Tensor values = poisoned(out_shape, x.dtype());
  vm::Tensor indices = poisoned(out_shape, kI64);
  OpResult r = TopK::lib_->run(name, {x, values, indices}, true);
  ASSERT_TRUE(r.ok()) << name << ": " << r.error;
  const int64_t rows = s[1 - axis], len = s[axis];
  int bad = 0;
  for (int64_t row = 0; row < rows; ++row) {
    auto flat = [&](int64_t along, const vm::Shape& shape) {
      return axis == 0 ? along * shape[1] + row : row * shape[1] + along;
    };
    std::vector<int64_t> order(static_cast<size_t>(len));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double va = at(x, flat(a, s)), vb = at(x, flat(b, s));
      return largest ? va > vb : va < vb;
    });
    for (int64_t j = 0; j < k; ++j) {
      const int64_t want = order[static_cast<size_t>(j)];
      const int64_t got = indices.data_as<int64_t>()[flat(j, out_shape)];
      const double got_value = at(values, flat(j, out_shape)), want_value = at(x, flat(want, s));
      if (got != want || got_value != want_value) {
        if (++bad <= 5) {
          ADD_FAILURE() << name << " " << shape_name(s) << " row " << row << " place " << j
                        << ": index " << got << " value " << got_value << ", want " << want
                        << " value " << want_value;
        }
      }
    }
  }
  EXPECT_EQ(bad, 0) << name << " " << shape_name(s);
}

TEST_F(TopK, SelectionPassesAndCountedPlacesMatchAStableSort) {
  std::mt19937 rng(7);
  for (const vm::Shape& s : std::vector<vm::Shape>{{5, 5}, {7, 9}, {6, 300}, {1, 1000}}) {
    for (size_t axis : {0u, 1u}) {
      vm::Shape t = s;
      if (axis == 0) std::swap(t[0], t[1]);  // the long side along the axis
      for (bool largest : {true, false}) {
        vm::Tensor x = tied(t, kF32, rng);
        check(symbol("passes", static_cast<int64_t>(axis), largest), x, axis, largest, 5);
        for (int64_t k : {int64_t{1}, int64_t{5}, t[axis]}) {
          check(symbol("counted", static_cast<int64_t>(axis), largest), x, axis, largest, k);
        }
      }
    }
  }
}

// NaNs compare false, so a selection pass may find nothing (ONNX leaves their order
// undefined; so did the counted places): its index stays in the row, never past it.
TEST_F(TopK, SelectionPassesKeepIndicesInTheRowWhenNaNsRunThemOut) {
  vm::Tensor x = vm::Tensor::empty({2, 6}, kF32);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> v = {nan, 3, nan, nan, 1, nan, 2, 2, 2, 2, 2, 2};
  std::copy(v.begin(), v.end(), x.data_as<float>());
  vm::Tensor values = poisoned({2, 5}, kF32), indices = poisoned({2, 5}, kI64);
  OpResult r = TopK::lib_->run(symbol("passes", 1, true), {x, values, indices}, true);
  ASSERT_TRUE(r.ok()) << r.error;
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_GE(indices.data_as<int64_t>()[i], 0) << i;
    EXPECT_LT(indices.data_as<int64_t>()[i], 6) << i;
  }
  // Where the order is defined (no NaN), it is the order.
  EXPECT_EQ(std::vector<int64_t>(indices.data_as<int64_t>() + 5, indices.data_as<int64_t>() + 10),
            (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

TEST_F(TopK, IntegersAndASinglePass) {
  std::mt19937 rng(8);
  for (const vm::Shape& s : std::vector<vm::Shape>{{3, 32}, {4, 250}}) {
    check("passes_i64", tied(s, kI64, rng), 1, true, 32);
    check("passes_one", tied(s, kF32, rng), 1, false, 1);
  }
}

}  // namespace
}  // namespace dynvm::ops::testing
