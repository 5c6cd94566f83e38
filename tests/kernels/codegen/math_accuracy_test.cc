// Accuracy of dynvm's own math library (kernels/codegen/math_ir.cc) as generated code:
// exp, log, tanh, erf, sigmoid, log1p, expm1, sin, cos, atan and pow, in f32 and f64, scalar
// and full-width vector lanes, against long double std:: functions on many points of each
// function's normal range, plus the special values (inf, NaN, zeros, saturation).
// Prints the measured maximum relative errors.
#include <cfloat>
#include <cstdio>
#include <limits>
#include <random>

#include "tests/kernels/codegen/codegen_test_util.h"

namespace dynvm::codegen::testing {
namespace {

using tir::Expr;
using tir::Intrinsic;
using vm::DType;
using vm::Tensor;

struct MathFn {
  const char* name;
  Intrinsic op;
  long double (*ref)(long double);
  double lo32, hi32;  // uniform sample range for f32
  double lo64, hi64;  // and for f64
};

long double sigmoid_ref(long double x) { return 1.0L / (1.0L + std::exp(-x)); }

const MathFn kFns[] = {
    {"exp", Intrinsic::kExp, [](long double x) { return std::exp(x); }, -87.3, 88.7, -708, 709},
    {"log", Intrinsic::kLog, [](long double x) { return std::log(x); }, 0, 0, 0, 0},
    {"tanh", Intrinsic::kTanh, [](long double x) { return std::tanh(x); }, -12, 12, -25, 25},
    {"erf", Intrinsic::kErf, [](long double x) { return std::erf(x); }, -6, 6, -7, 7},
    {"sigmoid", Intrinsic::kSigmoid, sigmoid_ref, -87, 40, -700, 40},
    {"log1p", Intrinsic::kLog1p, [](long double x) { return std::log1p(x); }, -0.999, 50, -0.999,
     50},
    {"expm1", Intrinsic::kExpm1, [](long double x) { return std::expm1(x); }, -30, 88, -40, 709},
    {"sin", Intrinsic::kSin, [](long double x) { return std::sin(x); }, -100, 100, -1000, 1000},
    {"cos", Intrinsic::kCos, [](long double x) { return std::cos(x); }, -100, 100, -1000, 1000},
    {"atan", Intrinsic::kAtan, [](long double x) { return std::atan(x); }, -20, 20, -20, 20},
};

constexpr int kLanes32 = 16, kLanes64 = 8;

std::string kernel_name(const char* fn, bool f64, int lanes) {
  return std::string("math_") + fn + (f64 ? "_f64_" : "_f32_") + std::to_string(lanes);
}

std::vector<tir::LoweredFunc> all_kernels() {
  std::vector<tir::LoweredFunc> k;
  for (const MathFn& fn : kFns) {
    for (bool f64 : {false, true}) {
      DType t = f64 ? DType::kFloat64 : DType::kFloat32;
      for (int lanes : {1, f64 ? kLanes64 : kLanes32}) {
        Intrinsic op = fn.op;
        k.push_back(unary_kernel(kernel_name(fn.name, f64, lanes), t, t, lanes,
                                 [op](const Expr& x) { return tir::call(op, x); }));
      }
    }
  }
  for (bool f64 : {false, true}) {
    DType t = f64 ? DType::kFloat64 : DType::kFloat32;
    for (int lanes : {1, f64 ? kLanes64 : kLanes32}) {
      k.push_back(binary_kernel(
          kernel_name("pow", f64, lanes), t, t, lanes,
          [](const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::kPow, a, b); }));
    }
  }
  return k;
}

class MathAccuracyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<tir::LoweredFunc> funcs = all_kernels();
    program_ = load_program(build(funcs), funcs);
  }
  static void TearDownTestSuite() { program_.reset(); }
  static std::shared_ptr<const vm::Program> program_;
};
std::shared_ptr<const vm::Program> MathAccuracyTest::program_;

// Sample points: uniform over the range, a dense patch around 0 (tiny arguments), and for
// log a log-uniform spread over every binade.
template <typename T>
std::vector<T> sample(const MathFn& fn, bool f64) {
  std::mt19937_64 rng(42);
  std::vector<T> x;
  if (std::string(fn.name) == "log") {
    std::uniform_real_distribution<double> mant(1.0, 2.0);
    int lo = f64 ? -1074 : -149, hi = f64 ? 1023 : 127;
    for (int e = lo; e <= hi; ++e) {
      for (int k = 0; k < (f64 ? 8 : 60); ++k)
        x.push_back(static_cast<T>(std::ldexp(mant(rng), e)));
    }
    for (int k = 0; k < 4000; ++k) x.push_back(static_cast<T>(0.98 + 0.04 * k / 4000.0));
    return x;
  }
  double lo = f64 ? fn.lo64 : fn.lo32, hi = f64 ? fn.hi64 : fn.hi32;
  std::uniform_real_distribution<double> u(lo, hi);
  for (int k = 0; k < 20000; ++k) x.push_back(static_cast<T>(u(rng)));
  for (int k = -2000; k <= 2000; ++k) x.push_back(static_cast<T>(k * 1e-6));
  for (int e = -30; e <= 0; ++e) x.push_back(static_cast<T>(std::ldexp(1.3, e)));
  if (std::string(fn.name) == "sin" || std::string(fn.name) == "cos") {
    // Near the zeros, where range reduction has to be exact to keep relative accuracy.
    for (int k = -60; k <= 60; ++k) x.push_back(static_cast<T>(k * M_PI / 2));
  }
  return x;
}

struct ErrorStats {
  double max_rel = 0;
  double at = 0;
};

template <typename T>
ErrorStats measure(vm::VirtualMachine& vm, const std::string& kernel, const std::vector<T>& x,
                   const std::function<long double(T)>& ref) {
  DType dt = sizeof(T) == 8 ? DType::kFloat64 : DType::kFloat32;
  auto n = static_cast<int64_t>(x.size());
  Tensor y = poisoned({n}, dt);
  call(vm, kernel, {tensor(x, dt), y});
  std::vector<T> got = values<T>(y);
  const double tiny = sizeof(T) == 8 ? DBL_MIN : FLT_MIN;
  ErrorStats s;
  for (size_t i = 0; i < x.size(); ++i) {
    long double want = ref(x[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << kernel << "(" << x[i] << ")";
      continue;
    }
    // Results outside the normal range of T are not compared relatively.
    if (std::fabs(want) < tiny || std::fabs(want) > std::numeric_limits<T>::max()) continue;
    double rel = static_cast<double>(std::fabs((got[i] - want) / want));
    if (!(rel <= s.max_rel)) {  // also catches NaN
      s.max_rel = std::isnan(rel) ? INFINITY : rel;
      s.at = static_cast<double>(x[i]);
    }
  }
  return s;
}

void report(const std::string& what, const ErrorStats& s, double limit) {
  std::printf("[accuracy] %-22s max relative error %.3g at x = %.9g\n", what.c_str(), s.max_rel,
              s.at);
  EXPECT_LE(s.max_rel, limit) << what << " at x = " << s.at;
}

constexpr double kLimit32 = 2e-6;
constexpr double kLimit64 = 1e-14;

TEST_F(MathAccuracyTest, F32FunctionsAreAccurateScalarAndVector) {
  vm::VirtualMachine vm(program_);
  for (const MathFn& fn : kFns) {
    std::vector<float> x = sample<float>(fn, false);
    for (int lanes : {1, kLanes32}) {
      ErrorStats s = measure<float>(vm, kernel_name(fn.name, false, lanes), x,
                                    [&](float v) { return fn.ref(v); });
      report(kernel_name(fn.name, false, lanes), s, kLimit32);
    }
  }
}

TEST_F(MathAccuracyTest, F64FunctionsAreAccurateScalarAndVector) {
  vm::VirtualMachine vm(program_);
  for (const MathFn& fn : kFns) {
    std::vector<double> x = sample<double>(fn, true);
    for (int lanes : {1, kLanes64}) {
      ErrorStats s = measure<double>(vm, kernel_name(fn.name, true, lanes), x,
                                     [&](double v) { return fn.ref(v); });
      report(kernel_name(fn.name, true, lanes), s, kLimit64);
    }
  }
}

template <typename T>
void check_pow(vm::VirtualMachine& vm, bool f64, double limit) {
  DType dt = f64 ? DType::kFloat64 : DType::kFloat32;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> base(0.05, 20), expo(-12, 12);
  std::vector<T> a, b;
  for (int k = 0; k < 20000; ++k) {
    a.push_back(static_cast<T>(base(rng)));
    b.push_back(static_cast<T>(expo(rng)));
  }
  for (int k = -9; k <= 9; ++k) {  // negative bases, integral exponents
    a.push_back(static_cast<T>(-1.75));
    b.push_back(static_cast<T>(k));
  }
  auto n = static_cast<int64_t>(a.size());
  for (int lanes : {1, f64 ? kLanes64 : kLanes32}) {
    Tensor c = poisoned({n}, dt);
    call(vm, kernel_name("pow", f64, lanes), {tensor(a, dt), tensor(b, dt), c});
    std::vector<T> got = values<T>(c);
    ErrorStats s;
    for (size_t i = 0; i < a.size(); ++i) {
      long double want = std::pow(static_cast<long double>(a[i]), static_cast<long double>(b[i]));
      if (std::fabs(want) < std::numeric_limits<T>::min() ||
          std::fabs(want) > std::numeric_limits<T>::max()) {
        continue;
      }
      double rel = static_cast<double>(std::fabs((got[i] - want) / want));
      if (!(rel <= s.max_rel)) {
        s.max_rel = std::isnan(rel) ? INFINITY : rel;
        s.at = static_cast<double>(a[i]);
      }
    }
    report(kernel_name("pow", f64, lanes), s, limit);
  }
}

TEST_F(MathAccuracyTest, PowIsAccurate) {
  vm::VirtualMachine vm(program_);
  check_pow<float>(vm, false, kLimit32);
  check_pow<double>(vm, true, 1e-13);  // exp(y log x) amplifies log's rounding by |y log x|
}

// NaN-aware exact comparison for special values.
bool same_value(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want;
}

template <typename T>
void check_specials(vm::VirtualMachine& vm, bool f64) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T big = f64 ? T(1e300) : T(1e30);
  std::vector<T> x = {0, -0.0, inf, -inf, nan, big, -big, T(1e4), T(-1e4), T(-1), T(-2)};
  for (const MathFn& fn : kFns) {
    for (int lanes : {1, f64 ? kLanes64 : kLanes32}) {
      DType dt = f64 ? DType::kFloat64 : DType::kFloat32;
      auto n = static_cast<int64_t>(x.size());
      Tensor y = poisoned({n}, dt);
      std::string k = kernel_name(fn.name, f64, lanes);
      call(vm, k, {tensor(x, dt), y});
      std::vector<T> got = values<T>(y);
      for (size_t i = 0; i < x.size(); ++i) {
        auto want = static_cast<T>(fn.ref(x[i]));
        if (std::isinf(x[i]) || std::isnan(x[i]) || x[i] == 0 || !std::isfinite(want) ||
            std::fabs(want) < std::numeric_limits<T>::min() || std::fabs(want) == 1) {
          // Exact cases: inf, NaN, zeros, saturation (tanh, erf, sigmoid to +-1 or 0).
          if (std::string(fn.name) == "sin" || std::string(fn.name) == "cos") {
            if (std::fabs(x[i]) == big) continue;  // no argument reduction promised there
          }
          EXPECT_TRUE(same_value(got[i], want) || (want == 0 && got[i] == 0) ||
                      (std::fabs(want) < std::numeric_limits<T>::min() &&
                       std::fabs(got[i]) < std::numeric_limits<T>::min()))
              << k << "(" << x[i] << ") = " << got[i] << ", want " << want;
        }
      }
    }
  }
}

// exp far below its underflow (a masked score in a softmax: -inf, -1e9) is exactly 0, and
// in the subnormal range within two of the smallest subnormals of the reference.
template <typename T>
void check_exp_underflow(vm::VirtualMachine& vm, bool f64) {
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> x = f64 ? std::vector<T>{-700, -720,    -740,  -744.4, -745.2, -746,
                                          -800, -1417.9, -1418, -1419,  -1e9,   -inf}
                         : std::vector<T>{-86,  -88,    -95,  -100, -103.2, -103.9, -104,
                                          -150, -175.9, -176, -177, -1e9,   -inf};
  const DType dt = f64 ? DType::kFloat64 : DType::kFloat32;
  for (int lanes : {1, f64 ? kLanes64 : kLanes32}) {
    const std::string k = kernel_name("exp", f64, lanes);
    Tensor y = poisoned({static_cast<int64_t>(x.size())}, dt);
    call(vm, k, {tensor(x, dt), y});
    std::vector<T> got = values<T>(y);
    for (size_t i = 0; i < x.size(); ++i) {
      const auto want = static_cast<T>(std::exp(static_cast<long double>(x[i])));
      if (want == 0) {
        EXPECT_TRUE(got[i] == 0 && !std::signbit(got[i])) << k << "(" << x[i] << ") = " << got[i];
      } else {
        EXPECT_LE(std::fabs(got[i] - want),
                  2 * std::numeric_limits<T>::denorm_min() +
                      std::fabs(want) * 4 * std::numeric_limits<T>::epsilon())
            << k << "(" << x[i] << ") = " << got[i] << ", want " << want;
      }
    }
  }
}

TEST_F(MathAccuracyTest, ExpUnderflowsToZeroAndThroughTheSubnormals) {
  vm::VirtualMachine vm(program_);
  check_exp_underflow<float>(vm, false);
  check_exp_underflow<double>(vm, true);
}

TEST_F(MathAccuracyTest, SpecialValues) {
  vm::VirtualMachine vm(program_);
  check_specials<float>(vm, false);
  check_specials<double>(vm, true);
}

TEST_F(MathAccuracyTest, PowSpecialCases) {
  vm::VirtualMachine vm(program_);
  const float inf = INFINITY, nan = NAN;
  std::vector<float> a = {0, 0, -2, -2, 5, 1, nan, 2, 0.5f, -8, 4, 10};
  std::vector<float> b = {2, -1, 3, 0.5f, 0, nan, 0, inf, inf, 1.0f / 3, 0.5f, -40};
  std::vector<float> want = {0, inf, -8, nan, 1, 1, 1, inf, 0, nan, 2, 1e-40f};
  auto n = static_cast<int64_t>(a.size());
  for (int lanes : {1, kLanes32}) {
    Tensor c = poisoned({n}, DType::kFloat32);
    call(vm, kernel_name("pow", false, lanes),
         {tensor(a, DType::kFloat32), tensor(b, DType::kFloat32), c});
    std::vector<float> got = values<float>(c);
    for (size_t i = 0; i < a.size(); ++i) {
      if (i + 1 == a.size()) {  // subnormal result
        EXPECT_NEAR(got[i], want[i], 1e-45) << a[i] << " ** " << b[i];
        continue;
      }
      EXPECT_TRUE(same_value(got[i], want[i])) << a[i] << " ** " << b[i] << " = " << got[i];
    }
  }
}

}  // namespace
}  // namespace dynvm::codegen::testing
