// max / average / global pools compiled for the host, against plain double loops: 1-D and
// 2-D, symbolic N/H/W (one kernel at several sizes) and static shapes, strides, asymmetric
// pads, dilation (max), count_include_pad on and off (average). Rejections of bad
// attributes. 3-D windows, ceil_mode and uint8: pool_nd_test.cc.
#include "kernels/ops/pool.h"

#include <algorithm>
#include <cmath>

#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

enum class Pool : uint8_t { kMax, kAverage, kGlobalMax, kGlobalAverage };

struct PoolCase {
  std::string symbol;
  Pool kind;
  TensorType x;
  PoolAttrs attrs;
};

const arith::Var kN("n"), kH("h"), kW("w");

std::vector<PoolCase> cases() {
  auto sym2 = [](int64_t c) { return TensorType{kF32, {kN, c, kH, kW}}; };
  auto sym1 = [](int64_t c) { return TensorType{kF32, {kN, c, kW}}; };
  auto fixed = [](const vm::Shape& s) { return TensorType{kF32, dims(s)}; };
  return {
      {"max2d_3x3_s2_pad1_sym",
       Pool::kMax,
       sym2(3),
       {{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, false}},
      {"max2d_dil2_asym",
       Pool::kMax,
       fixed({2, 3, 9, 10}),
       {{2, 3}, {1, 2}, {1, 0, 0, 1}, {2, 2}, false, false}},
      {"max1d_sym", Pool::kMax, sym1(2), {{3}, {1}, {2, 0}, {}, false, false}},
      {"avg2d_exclude_pad_sym",
       Pool::kAverage,
       sym2(3),
       {{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, false}},
      {"avg2d_include_pad_sym",
       Pool::kAverage,
       sym2(3),
       {{3, 3}, {2, 2}, {1, 1, 1, 1}, {}, true, false}},
      {"avg2d_asym_pads_exclude",
       Pool::kAverage,
       fixed({1, 2, 7, 17}),
       {{2, 3}, {1, 1}, {0, 1, 1, 0}, {}, false, false}},
      {"avg1d_static", Pool::kAverage, fixed({2, 3, 17}), {{4}, {3}, {2, 1}, {}, false, false}},
      {"global_max2d_sym", Pool::kGlobalMax, sym2(3), {}},
      {"global_avg2d_sym", Pool::kGlobalAverage, sym2(3), {}},
      {"global_avg1d_sym", Pool::kGlobalAverage, sym1(5), {}},
  };
}

OpInstance build(const PoolCase& c) {
  switch (c.kind) {
    case Pool::kMax:
      return max_pool(c.x, c.attrs);
    case Pool::kAverage:
      return average_pool(c.x, c.attrs);
    case Pool::kGlobalMax:
      return global_max_pool(c.x);
    case Pool::kGlobalAverage:
      return global_average_pool(c.x);
  }
  return {};
}

struct Result {
  vm::Shape shape;  // the op's rank
  std::vector<double> values;
};

// The pool of x in double; a 1-D case is H = 1 with a one-tap window.
Result pool_ref(const PoolCase& c, const vm::Tensor& x, const vm::Shape& xs) {
  const bool one_d = xs.size() == 3;
  const int64_t n = xs[0], ch = xs[1], h = one_d ? 1 : xs[2], w = xs.back();
  const bool global = c.kind == Pool::kGlobalMax || c.kind == Pool::kGlobalAverage;
  const PoolAttrs& a = c.attrs;
  auto get = [&](const std::vector<int64_t>& v, size_t i2, size_t i1, int64_t fallback) {
    if (v.empty()) return fallback;
    return one_d ? (i1 == SIZE_MAX ? fallback : v[i1]) : v[i2];
  };
  const int64_t kh = global ? h : get(a.kernel_shape, 0, SIZE_MAX, 1);
  const int64_t kw = global ? w : get(a.kernel_shape, 1, 0, 1);
  const int64_t sh = get(a.strides, 0, SIZE_MAX, 1), sw = get(a.strides, 1, 0, 1);
  const int64_t ph0 = get(a.pads, 0, SIZE_MAX, 0), pw0 = get(a.pads, 1, 0, 0);
  const int64_t ph1 = get(a.pads, 2, SIZE_MAX, 0), pw1 = get(a.pads, 3, 1, 0);
  const int64_t dh = get(a.dilations, 0, SIZE_MAX, 1), dw = get(a.dilations, 1, 0, 1);
  const int64_t oh = (h + ph0 + ph1 - dh * (kh - 1) - 1) / sh + 1;
  const int64_t ow = (w + pw0 + pw1 - dw * (kw - 1) - 1) / sw + 1;
  Result r;
  r.shape = one_d ? vm::Shape{n, ch, ow} : vm::Shape{n, ch, oh, ow};
  const bool max = c.kind == Pool::kMax || c.kind == Pool::kGlobalMax;
  for (int64_t in = 0; in < n * ch; ++in)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t xo = 0; xo < ow; ++xo) {
        double acc = max ? -INFINITY : 0.0;
        int64_t count = 0;
        for (int64_t ky = 0; ky < kh; ++ky)
          for (int64_t kx = 0; kx < kw; ++kx) {
            int64_t iy = y * sh - ph0 + ky * dh, ix = xo * sw - pw0 + kx * dw;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            double v = at(x, (in * h + iy) * w + ix);
            acc = max ? std::max(acc, v) : acc + v;
            ++count;
          }
        if (!max) acc /= static_cast<double>(a.count_include_pad ? kh * kw : count);
        r.values.push_back(acc);
      }
  if (global) r.shape = one_d ? vm::Shape{n, ch, 1} : vm::Shape{n, ch, 1, 1};
  return r;
}

// Builds only the named cases into one library: ctest runs each test in its own process,
// and LLVM's O3 dominates the test's time.
OpLibrary library(const std::vector<std::string>& symbols) {
  std::vector<OpToBuild> ops;
  for (const PoolCase& c : cases()) {
    if (std::find(symbols.begin(), symbols.end(), c.symbol) != symbols.end()) {
      ops.push_back({c.symbol, build(c)});
    }
  }
  return OpLibrary::build(ops);
}

// Runs the case named `symbol` on a random input of shape `xs`, checks every element.
void check(const OpLibrary& lib, const std::string& symbol, const vm::Shape& xs,
           std::mt19937& rng) {
  for (const PoolCase& c : cases()) {
    if (c.symbol != symbol) continue;
    vm::Tensor x = random_tensor(xs, kF32, rng);
    Result want = pool_ref(c, x, xs);
    vm::Tensor y = run_op(lib, symbol, {x}, want.shape, kF32);
    expect_close(y, want.values, 1e-5, 1e-6, symbol + " " + shape_name(xs));
    return;
  }
  FAIL() << "no case " << symbol;
}

TEST(Pools, MaxPoolSymbolicAndStatic) {
  OpLibrary lib = library({"max2d_3x3_s2_pad1_sym", "max2d_dil2_asym", "max1d_sym"});
  std::mt19937 rng(31);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1, 1}, {2, 3, 7, 17}, {1, 3, 17, 3}}) {
    check(lib, "max2d_3x3_s2_pad1_sym", s, rng);
  }
  check(lib, "max2d_dil2_asym", {2, 3, 9, 10}, rng);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 2, 1}, {3, 2, 17}, {1, 2, 40}}) {
    check(lib, "max1d_sym", s, rng);
  }
}

TEST(Pools, AveragePoolCountsPadsOnlyWhenAsked) {
  OpLibrary lib = library({"avg2d_exclude_pad_sym", "avg2d_include_pad_sym",
                           "avg2d_asym_pads_exclude", "avg1d_static"});
  std::mt19937 rng(32);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1, 1}, {2, 3, 7, 17}, {1, 3, 4, 33}}) {
    check(lib, "avg2d_exclude_pad_sym", s, rng);
    check(lib, "avg2d_include_pad_sym", s, rng);
  }
  check(lib, "avg2d_asym_pads_exclude", {1, 2, 7, 17}, rng);
  check(lib, "avg1d_static", {2, 3, 17}, rng);
}

TEST(Pools, GlobalPools) {
  OpLibrary lib = library({"global_max2d_sym", "global_avg2d_sym", "global_avg1d_sym"});
  std::mt19937 rng(33);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1, 1}, {2, 3, 7, 17}}) {
    check(lib, "global_max2d_sym", s, rng);
    check(lib, "global_avg2d_sym", s, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 5, 1}, {2, 5, 129}}) {
    check(lib, "global_avg1d_sym", s, rng);
  }
}

TEST(PoolBuilders, RejectBadAttributes) {
  TensorType x{kF32, {kN, 3, kH, kW}};
  EXPECT_USER_ERROR(max_pool(x, {{3}, {}, {}, {}, false, false}), "kernel_shape has 1 values");
  EXPECT_USER_ERROR(average_pool(x, {{3, 3}, {}, {}, {2, 2}, false, false}),
                    "dilations are not supported");
  EXPECT_USER_ERROR(max_pool(x, {{2, 2}, {}, {2, 0, 0, 0}, {}, false, false}),
                    "pads must be smaller than the kernel");
  EXPECT_USER_ERROR(max_pool({kI32, {kN, 3, kH, kW}}, {{2, 2}, {}, {}, {}, false, false}),
                    "must be f32 or f64");
  EXPECT_USER_ERROR(global_average_pool({kF32, {kN, 3}}), "must be [N, C, spatial...]");
}

}  // namespace
}  // namespace dynvm::ops::testing
