// max / average pool over 3-D windows, with ceil_mode (a window past the input and its begin
// pad dropped; the rounded-up windows outside the average's count) and max pool on uint8,
// against a plain N-D reference loop in double.
#include <algorithm>
#include <cmath>

#include "kernels/ops/pool.h"
#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

struct NdCase {
  std::string symbol;
  bool max;
  TensorType x;
  PoolAttrs attrs;
};

const arith::Var kN("n"), kD("d"), kH("h"), kW("w");

std::vector<NdCase> cases() {
  auto fixed = [](const vm::Shape& s, vm::DType t = kF32) { return TensorType{t, dims(s)}; };
  const TensorType sym3{kF32, {kN, 2, kD, kH, kW}};
  // ceil_mode geometry: H (3, k 3, s 3, pads 0 / 2) rounds up to 2 windows, the second
  // starting past the input: dropped; W (8, k 3, s 2, pads 1 / 0) rounds up to 4.
  const PoolAttrs ceil{{3, 3}, {3, 2}, {0, 1, 2, 0}, {}, false, true};
  PoolAttrs ceil_include = ceil;
  ceil_include.count_include_pad = true;
  return {
      {"max3d_sym", true, sym3, {{2, 3, 2}, {1, 2, 2}, {1, 0, 1, 0, 1, 1}, {}, false, false}},
      {"avg3d_static",
       false,
       fixed({1, 2, 5, 6, 7}),
       {{3, 3, 3}, {2, 2, 2}, {1, 1, 1, 1, 1, 1}, {}, false, false}},
      {"max2d_ceil", true, fixed({1, 2, 3, 8}), ceil},
      {"avg2d_ceil_exclude", false, fixed({1, 2, 3, 8}), ceil},
      {"avg2d_ceil_include", false, fixed({1, 2, 3, 8}), ceil_include},
      {"max2d_ceil_plain", true, fixed({1, 1, 4, 4}), {{3, 3}, {2, 2}, {}, {}, false, true}},
      {"max2d_u8",
       true,
       fixed({1, 2, 5, 5}, kU8),
       {{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, false}},
  };
}

struct Result {
  vm::Shape shape;
  std::vector<double> values;
};

Result pool_ref(const NdCase& c, const vm::Tensor& x, const vm::Shape& xs) {
  const size_t rank = xs.size() - 2;
  const PoolAttrs& a = c.attrs;
  auto val = [&](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return v.empty() ? fallback : v[i];
  };
  std::vector<int64_t> k(rank), s(rank), pb(rank), pe(rank), out(rank);
  Result r;
  r.shape = {xs[0], xs[1]};
  for (size_t d = 0; d < rank; ++d) {
    k[d] = a.kernel_shape[d];
    s[d] = val(a.strides, d, 1);
    pb[d] = val(a.pads, d, 0);
    pe[d] = val(a.pads, rank + d, 0);
    const int64_t span = xs[2 + d] + pb[d] + pe[d] - k[d];
    out[d] = (a.ceil_mode ? (span + s[d] - 1) / s[d] : span / s[d]) + 1;
    if (a.ceil_mode && (out[d] - 1) * s[d] >= xs[2 + d] + pb[d]) --out[d];  // ONNX drops it
    r.shape.push_back(out[d]);
  }
  for (int64_t o = 0; o < numel(r.shape); ++o) {
    std::vector<int64_t> oi = unravel(o, r.shape);
    double acc = c.max ? -INFINITY : 0.0;
    int64_t inside = 0, padded = 1;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t lo = oi[2 + d] * s[d] - pb[d];
      padded *= std::min(lo + k[d], xs[2 + d] + pe[d]) - lo;
    }
    for (int64_t t = 0; t < numel(vm::Shape(k.begin(), k.end())); ++t) {
      std::vector<int64_t> tap = unravel(t, vm::Shape(k.begin(), k.end()));
      std::vector<int64_t> xi = {oi[0], oi[1]};
      bool in = true;
      for (size_t d = 0; d < rank; ++d) {
        xi.push_back(oi[2 + d] * s[d] - pb[d] + tap[d]);
        in = in && xi.back() >= 0 && xi.back() < xs[2 + d];
      }
      if (!in) continue;
      const double v = at(x, ravel(xi, xs));
      acc = c.max ? std::max(acc, v) : acc + v;
      ++inside;
    }
    if (!c.max) acc /= static_cast<double>(a.count_include_pad ? padded : inside);
    r.values.push_back(acc);
  }
  return r;
}

OpLibrary library(const std::vector<std::string>& symbols) {
  std::vector<OpToBuild> ops;
  for (const NdCase& c : cases()) {
    if (std::find(symbols.begin(), symbols.end(), c.symbol) == symbols.end()) continue;
    ops.push_back({c.symbol, c.max ? max_pool(c.x, c.attrs) : average_pool(c.x, c.attrs)});
  }
  return OpLibrary::build(ops);
}

void check(const OpLibrary& lib, const std::string& symbol, const vm::Shape& xs,
           std::mt19937& rng) {
  for (const NdCase& c : cases()) {
    if (c.symbol != symbol) continue;
    vm::Tensor x =
        c.x.dtype == kU8 ? random_tensor(xs, kU8, rng, 0, 255) : random_tensor(xs, c.x.dtype, rng);
    Result want = pool_ref(c, x, xs);
    vm::Tensor y = run_op(lib, symbol, {x}, want.shape, c.x.dtype);
    expect_close(y, want.values, 1e-5, 1e-6, symbol + " " + shape_name(xs));
    return;
  }
  FAIL() << "no case " << symbol;
}

TEST(PoolsNd, ThreeDimensionalWindows) {
  OpLibrary lib = library({"max3d_sym", "avg3d_static"});
  std::mt19937 rng(41);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 2, 2, 3, 2}, {2, 2, 5, 6, 9}}) {
    check(lib, "max3d_sym", s, rng);
  }
  check(lib, "avg3d_static", {1, 2, 5, 6, 7}, rng);
}

TEST(PoolsNd, CeilModeDropsWindowsPastTheInput) {
  OpLibrary lib =
      library({"max2d_ceil", "avg2d_ceil_exclude", "avg2d_ceil_include", "max2d_ceil_plain"});
  std::mt19937 rng(42);
  for (const char* symbol : {"max2d_ceil", "avg2d_ceil_exclude", "avg2d_ceil_include"}) {
    check(lib, symbol, {1, 2, 3, 8}, rng);
  }
  check(lib, "max2d_ceil_plain", {1, 1, 4, 4}, rng);
}

TEST(PoolsNd, MaxPoolOnUint8) {
  OpLibrary lib = library({"max2d_u8"});
  std::mt19937 rng(43);
  check(lib, "max2d_u8", {1, 2, 5, 5}, rng);
  EXPECT_USER_ERROR(average_pool({kU8, {1, 2, 5, 5}}, {{3, 3}, {}, {}, {}, false, false}),
                    "must be f32 or f64");
}

}  // namespace
}  // namespace dynvm::ops::testing
