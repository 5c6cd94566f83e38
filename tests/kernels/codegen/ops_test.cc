// Generated kernels' value semantics: casts (saturating float -> int, bool), integer floor
// division and modulo (negative operands, zero and -1 divisors), min/max with NaN, float
// floor-modulo and pow, f16/bf16 storage, bool vectors, and the exact intrinsics (sqrt,
// abs, floor, round-half-even, sign, ...). Scalar and vector forms of each; references are
// plain C++ written here.
#include <cstdint>
#include <limits>

#include "tests/kernels/codegen/codegen_test_util.h"

namespace dynvm::codegen::testing {
namespace {

using tir::Expr;
using tir::Intrinsic;
using vm::DType;
using vm::Tensor;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// One input X, several outputs Y_k[i] = fs[k](X[i]); scalar (lanes 1) or vector + tail.
tir::LoweredFunc multi_kernel(const std::string& name, DType in, std::vector<DType> outs, int lanes,
                              std::vector<std::function<Expr(const Expr&)>> fs) {
  Var n("n"), i("i"), io("io");
  BufferRef X = buffer("X", in, {n});
  std::vector<BufferRef> params{X};
  for (size_t k = 0; k < outs.size(); ++k)
    params.push_back(buffer("Y" + std::to_string(k), outs[k], {n}));
  std::vector<tir::Stmt> scalar, vector;
  arith::Expr base = io * arith::Expr(lanes);
  for (size_t k = 0; k < outs.size(); ++k) {
    scalar.push_back(store(params[k + 1], i, fs[k](load(X, i))));
    if (lanes > 1) {
      vector.push_back(tir::make_vector_store(params[k + 1], base, 1,
                                              fs[k](tir::vector_buffer_load(X, base, 1, lanes))));
    }
  }
  if (lanes == 1) return kernel(name, params, 1, serial(i, 0, n, tir::make_seq(scalar)));
  arith::Expr tail = arith::floordiv(n, lanes) * arith::Expr(lanes);
  return kernel(name, params, 1,
                tir::make_seq({serial(io, 0, arith::floordiv(n, lanes), tir::make_seq(vector)),
                               serial(i, tail, n - tail, tir::make_seq(scalar))}));
}

auto cast_to(DataType t) {
  return [t](const Expr& x) { return tir::cast(t.with_lanes(x.type().lanes), x); };
}

auto intrinsic(Intrinsic fn) {
  return [fn](const Expr& x) { return tir::call(fn, x); };
}

tir::LoweredFunc int_divmod_kernel(int lanes) {
  Var n("n"), i("i"), io("io");
  BufferRef A = buffer("A", DType::kInt32, {n}), B = buffer("B", DType::kInt32, {n});
  std::vector<BufferRef> outs;
  for (const char* o : {"Q", "R", "Mn", "Mx"}) outs.push_back(buffer(o, DType::kInt32, {n}));
  auto body = [&](auto ld, auto st) {
    Expr a = ld(A), b = ld(B);
    return tir::make_seq({st(outs[0], a / b), st(outs[1], tir::binary(tir::BinaryOp::kMod, a, b)),
                          st(outs[2], tir::min(a, b)), st(outs[3], tir::max(a, b))});
  };
  auto scalar = body([&](const BufferRef& x) { return load(x, i); },
                     [&](const BufferRef& x, Expr v) { return store(x, i, v); });
  std::vector<BufferRef> params{A, B, outs[0], outs[1], outs[2], outs[3]};
  std::string name = "int_divmod_" + std::to_string(lanes);
  if (lanes == 1) return kernel(name, params, 2, serial(i, 0, n, scalar));
  arith::Expr base = io * arith::Expr(lanes);
  auto vec =
      body([&](const BufferRef& x) { return tir::vector_buffer_load(x, base, 1, lanes); },
           [&](const BufferRef& x, Expr v) { return tir::make_vector_store(x, base, 1, v); });
  arith::Expr tail = arith::floordiv(n, lanes) * arith::Expr(lanes);
  return kernel(name, params, 2,
                tir::make_seq({serial(io, 0, arith::floordiv(n, lanes), vec),
                               serial(i, tail, n - tail, scalar)}));
}

// bool logic: M = (x > 0 && !(x > 10)) || isnan(x), then F = M ? 1 : -1 read back from
// the bool buffer (i8 in memory, i1 in registers).
tir::LoweredFunc bool_kernel(int lanes) {
  auto f = [](const Expr& x) {
    Expr zero = tir::make_const(x.type(), 0), ten = tir::make_const(x.type(), 10);
    return tir::logical_or(
        tir::logical_and(tir::compare(tir::CompareOp::kGt, x, zero),
                         tir::logical_not(tir::compare(tir::CompareOp::kGt, x, ten))),
        tir::call(Intrinsic::kIsNan, x));
  };
  return multi_kernel("bools_" + std::to_string(lanes), DType::kFloat32, {DType::kBool}, lanes,
                      {f});
}

tir::LoweredFunc bool_read_kernel(int lanes) {
  auto f = [](const Expr& m) {
    DataType t = tir::f32(m.type().lanes);
    return tir::select(m, tir::make_const(t, 1), tir::make_const(t, -1));
  };
  return multi_kernel("bool_read_" + std::to_string(lanes), DType::kBool, {DType::kFloat32}, lanes,
                      {f});
}

std::vector<tir::LoweredFunc> all_kernels() {
  std::vector<tir::LoweredFunc> k;
  for (int lanes : {1, 8}) {
    std::string s = "_" + std::to_string(lanes);
    k.push_back(multi_kernel("casts" + s, DType::kFloat32,
                             {DType::kInt32, DType::kUInt8, DType::kBool, DType::kFloat64}, lanes,
                             {cast_to(tir::i32()), cast_to({DType::kUInt8, 1}),
                              cast_to(tir::boolean()), cast_to(tir::f64())}));
    k.push_back(multi_kernel("int_casts" + s, DType::kInt64,
                             {DType::kFloat32, DType::kInt8, DType::kBool, DType::kUInt16}, lanes,
                             {cast_to(tir::f32()), cast_to({DType::kInt8, 1}),
                              cast_to(tir::boolean()), cast_to({DType::kUInt16, 1})}));
    k.push_back(int_divmod_kernel(lanes));
    k.push_back(bool_kernel(lanes));
    k.push_back(bool_read_kernel(lanes));
    k.push_back(multi_kernel(
        "exact_f32" + s, DType::kFloat32, std::vector<DType>(11, DType::kFloat32), lanes,
        {intrinsic(Intrinsic::kSqrt), intrinsic(Intrinsic::kRsqrt), intrinsic(Intrinsic::kAbs),
         intrinsic(Intrinsic::kNeg), intrinsic(Intrinsic::kFloor), intrinsic(Intrinsic::kCeil),
         intrinsic(Intrinsic::kRound), intrinsic(Intrinsic::kSign),
         intrinsic(Intrinsic::kReciprocal),
         [](const Expr& x) {
           return tir::cast(tir::f32(x.type().lanes), tir::call(Intrinsic::kIsNan, x));
         },
         [](const Expr& x) {
           return tir::cast(tir::f32(x.type().lanes), tir::call(Intrinsic::kIsInf, x));
         }}));
    k.push_back(multi_kernel(
        "exact_i32" + s, DType::kInt32, {DType::kInt32, DType::kInt32, DType::kInt32}, lanes,
        {intrinsic(Intrinsic::kAbs), intrinsic(Intrinsic::kNeg), intrinsic(Intrinsic::kSign)}));
    k.push_back(binary_kernel("fmin" + s, DType::kFloat32, DType::kFloat32, lanes,
                              [](const Expr& a, const Expr& b) { return tir::min(a, b); }));
    k.push_back(binary_kernel("fmax" + s, DType::kFloat32, DType::kFloat32, lanes,
                              [](const Expr& a, const Expr& b) { return tir::max(a, b); }));
    k.push_back(binary_kernel(
        "fmod" + s, DType::kFloat32, DType::kFloat32, lanes,
        [](const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::kMod, a, b); }));
    k.push_back(binary_kernel(
        "ipow" + s, DType::kInt64, DType::kInt64, lanes,
        [](const Expr& a, const Expr& b) { return tir::binary(tir::BinaryOp::kPow, a, b); }));
    // Computed in f32 registers, rounded once at the f16 store; and f16 -> bf16.
    k.push_back(
        multi_kernel("half" + s, DType::kFloat16, {DType::kFloat16, DType::kBFloat16}, lanes,
                     {[](const Expr& x) {
                        return x * tir::make_const(x.type(), 2) + tir::make_const(x.type(), 1);
                      },
                      cast_to({DType::kBFloat16, 1})}));
  }
  return k;
}

class OpsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::vector<tir::LoweredFunc> funcs = all_kernels();
    program_ = load_program(build(funcs), funcs);
  }
  static void TearDownTestSuite() { program_.reset(); }
  static std::shared_ptr<const vm::Program> program_;
};
std::shared_ptr<const vm::Program> OpsTest::program_;

const std::vector<float> kCastInputs = {0.0f,   -0.0f,  1.5f,   -1.5f, 2.5f,    -2.7f, 255.9f,
                                        256.0f, 1e10f,  -1e10f, kNaN,  kInf,    -kInf, 0.4999f,
                                        100.f,  -100.f, 3e9f,   -3e9f, 65535.5f};

TEST_F(OpsTest, FloatCastsTruncateTowardZeroAndSaturate) {
  vm::VirtualMachine vm(program_);
  const std::vector<float>& x = kCastInputs;
  auto n = static_cast<int64_t>(x.size());
  for (const char* name : {"casts_1", "casts_8"}) {
    Tensor i32 = poisoned({n}, DType::kInt32), u8 = poisoned({n}, DType::kUInt8);
    Tensor b = poisoned({n}, DType::kBool), f64 = poisoned({n}, DType::kFloat64);
    call(vm, name, {tensor(x, DType::kFloat32), i32, u8, b, f64});
    for (size_t i = 0; i < x.size(); ++i) {
      double v = x[i];
      int32_t want_i = std::isnan(v)        ? 0
                       : v >= 2147483647.0  ? INT32_MAX
                       : v <= -2147483648.0 ? INT32_MIN
                                            : static_cast<int32_t>(v);
      uint8_t want_u = std::isnan(v) ? 0 : v >= 255 ? 255 : v <= 0 ? 0 : static_cast<uint8_t>(v);
      EXPECT_EQ(values<int32_t>(i32)[i], want_i) << name << " x = " << v;
      EXPECT_EQ(values<uint8_t>(u8)[i], want_u) << name << " x = " << v;
      EXPECT_EQ(values<uint8_t>(b)[i], v != 0 ? 1 : 0) << name << " x = " << v;  // NaN != 0
      double got = values<double>(f64)[i];
      EXPECT_TRUE(got == v || (std::isnan(got) && std::isnan(v))) << name << " x = " << v;
    }
  }
}

TEST_F(OpsTest, IntegerCastsWrapAndConvert) {
  vm::VirtualMachine vm(program_);
  std::vector<int64_t> x = {0,       1,         -1,        127,
                            128,     -129,      255,       65536 + 7,
                            -70000,  INT64_MAX, INT64_MIN, (int64_t{1} << 40) + 3,
                            16777217};
  auto n = static_cast<int64_t>(x.size());
  for (const char* name : {"int_casts_1", "int_casts_8"}) {
    Tensor f = poisoned({n}, DType::kFloat32), i8 = poisoned({n}, DType::kInt8);
    Tensor b = poisoned({n}, DType::kBool), u16 = poisoned({n}, DType::kUInt16);
    call(vm, name, {tensor(x, DType::kInt64), f, i8, b, u16});
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(values<float>(f)[i], static_cast<float>(x[i])) << name << " " << x[i];
      EXPECT_EQ(values<int8_t>(i8)[i], static_cast<int8_t>(x[i])) << name << " " << x[i];
      EXPECT_EQ(values<uint8_t>(b)[i], x[i] != 0) << name << " " << x[i];
      EXPECT_EQ(values<uint16_t>(u16)[i], static_cast<uint16_t>(x[i])) << name << " " << x[i];
    }
  }
}

TEST_F(OpsTest, IntegerFloorDivisionAndModulo) {
  vm::VirtualMachine vm(program_);
  std::vector<int32_t> a, b;
  for (int32_t x : {-17, -16, -1, 0, 1, 5, 16, 17, 100, INT32_MIN, INT32_MAX}) {
    for (int32_t y : {-5, -4, -1, 0, 1, 3, 4, 7, INT32_MIN}) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  auto n = static_cast<int64_t>(a.size());
  for (const char* name : {"int_divmod_1", "int_divmod_8"}) {
    std::vector<Tensor> out;
    for (int k = 0; k < 4; ++k) out.push_back(poisoned({n}, DType::kInt32));
    call(vm, name,
         {tensor(a, DType::kInt32), tensor(b, DType::kInt32), out[0], out[1], out[2], out[3]});
    for (size_t i = 0; i < a.size(); ++i) {
      int64_t x = a[i], y = b[i];
      // Floor semantics; division by zero gives 0, INT_MIN / -1 wraps.
      int64_t q = 0, r = 0;
      if (y != 0) {
        q = x / y;
        if (x % y != 0 && ((x < 0) != (y < 0))) --q;
        r = x - q * y;
      }
      if (y == -1) r = 0;
      EXPECT_EQ(values<int32_t>(out[0])[i], static_cast<int32_t>(static_cast<uint32_t>(q)))
          << name << " " << x << " / " << y;
      EXPECT_EQ(values<int32_t>(out[1])[i], static_cast<int32_t>(r))
          << name << " " << x << " % " << y;
      EXPECT_EQ(values<int32_t>(out[2])[i], std::min(a[i], b[i]));
      EXPECT_EQ(values<int32_t>(out[3])[i], std::max(a[i], b[i]));
    }
  }
}

TEST_F(OpsTest, BoolVectorsRoundTripThroughMemory) {
  vm::VirtualMachine vm(program_);
  std::vector<float> x = {-1,    0, 0.5f, 10, 10.5f, kNaN, 3,  -kInf, kInf,
                          9.99f, 1, 2,    3,  4,     5,    11, 12};
  auto n = static_cast<int64_t>(x.size());
  for (int lanes : {1, 8}) {
    Tensor m = poisoned({n}, DType::kBool), f = poisoned({n}, DType::kFloat32);
    call(vm, "bools_" + std::to_string(lanes), {tensor(x, DType::kFloat32), m});
    call(vm, "bool_read_" + std::to_string(lanes), {m, f});
    for (size_t i = 0; i < x.size(); ++i) {
      bool want = (x[i] > 0 && !(x[i] > 10)) || std::isnan(x[i]);
      EXPECT_EQ(values<uint8_t>(m)[i], want ? 1 : 0) << "x = " << x[i];
      EXPECT_EQ(values<float>(f)[i], want ? 1.0f : -1.0f) << "x = " << x[i];
    }
  }
}

TEST_F(OpsTest, ExactFloatIntrinsics) {
  vm::VirtualMachine vm(program_);
  std::vector<float> x = {0.0f,   -0.0f,       0.5f,       -0.5f, 1.5f, 2.5f, -2.5f, 3.7f, -3.7f,
                          1e-40f, 16777215.0f, 8388609.5f, 1e30f, kNaN, kInf, -kInf, 2.0f, 0.25f};
  auto n = static_cast<int64_t>(x.size());
  for (const char* name : {"exact_f32_1", "exact_f32_8"}) {
    std::vector<vm::Value> args{tensor(x, DType::kFloat32)};
    std::vector<Tensor> out;
    for (int k = 0; k < 11; ++k) {
      out.push_back(poisoned({n}, DType::kFloat32));
      args.push_back(out.back());
    }
    call(vm, name, args);
    auto same = [](float got, double want) {
      return (std::isnan(got) && std::isnan(want)) ||
             (got == want && std::signbit(got) == std::signbit(want));
    };
    for (size_t i = 0; i < x.size(); ++i) {
      float v = x[i];
      double want[11] = {std::sqrt(v),
                         static_cast<float>(1.0f / std::sqrt(v)),
                         std::fabs(v),
                         -v,
                         std::floor(v),
                         std::ceil(v),
                         std::nearbyint(v),  // round half to even (default rounding mode)
                         v > 0   ? 1.0
                         : v < 0 ? -1.0
                                 : v,
                         static_cast<float>(1.0f / v),
                         std::isnan(v) ? 1.0 : 0.0,
                         std::isinf(v) ? 1.0 : 0.0};
      for (int k = 0; k < 11; ++k) {
        EXPECT_TRUE(same(values<float>(out[k])[i], want[k]))
            << name << " output " << k << " x = " << v << ": got " << values<float>(out[k])[i]
            << ", want " << want[k];
      }
    }
  }
}

TEST_F(OpsTest, ExactIntegerIntrinsics) {
  vm::VirtualMachine vm(program_);
  std::vector<int32_t> x = {0, 1, -1, 7, -7, INT32_MAX, INT32_MIN, 100, -100};
  auto n = static_cast<int64_t>(x.size());
  for (const char* name : {"exact_i32_1", "exact_i32_8"}) {
    Tensor abs = poisoned({n}, DType::kInt32), neg = poisoned({n}, DType::kInt32),
           sign = poisoned({n}, DType::kInt32);
    call(vm, name, {tensor(x, DType::kInt32), abs, neg, sign});
    for (size_t i = 0; i < x.size(); ++i) {
      auto wrap = [](int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); };
      EXPECT_EQ(values<int32_t>(abs)[i], wrap(std::abs(int64_t{x[i]}))) << x[i];
      EXPECT_EQ(values<int32_t>(neg)[i], wrap(-int64_t{x[i]})) << x[i];
      EXPECT_EQ(values<int32_t>(sign)[i], (x[i] > 0) - (x[i] < 0)) << x[i];
    }
  }
}

TEST_F(OpsTest, FloatMinMaxPropagateNaN) {
  vm::VirtualMachine vm(program_);
  std::vector<float> a = {1, -1, kNaN, 3, kNaN, -kInf, 0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  std::vector<float> b = {2, -2, 1, kNaN, kNaN, 0, -0.0f, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15};
  auto n = static_cast<int64_t>(a.size());
  for (int lanes : {1, 8}) {
    Tensor mn = poisoned({n}, DType::kFloat32), mx = poisoned({n}, DType::kFloat32);
    call(vm, "fmin_" + std::to_string(lanes),
         {tensor(a, DType::kFloat32), tensor(b, DType::kFloat32), mn});
    call(vm, "fmax_" + std::to_string(lanes),
         {tensor(a, DType::kFloat32), tensor(b, DType::kFloat32), mx});
    for (size_t i = 0; i < a.size(); ++i) {
      bool nan = std::isnan(a[i]) || std::isnan(b[i]);
      if (nan) {
        EXPECT_TRUE(std::isnan(values<float>(mn)[i])) << i;
        EXPECT_TRUE(std::isnan(values<float>(mx)[i])) << i;
      } else {
        EXPECT_EQ(values<float>(mn)[i], std::min(a[i], b[i])) << i;
        EXPECT_EQ(values<float>(mx)[i], std::max(a[i], b[i])) << i;
      }
    }
  }
}

TEST_F(OpsTest, FloatModuloHasTheSignOfTheDivisor) {
  vm::VirtualMachine vm(program_);
  std::vector<float> a, b;
  for (float x : {7.5f, -7.5f, 0.0f, 1e6f + 0.5f, -3.0f, 6.0f, 0.3f, 1e-3f}) {
    for (float y : {2.0f, -2.0f, 0.7f, -0.7f, 3.0f, 1e-2f}) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  a.push_back(1.0f);
  b.push_back(0.0f);
  auto n = static_cast<int64_t>(a.size());
  for (int lanes : {1, 8}) {
    Tensor c = poisoned({n}, DType::kFloat32);
    call(vm, "fmod_" + std::to_string(lanes),
         {tensor(a, DType::kFloat32), tensor(b, DType::kFloat32), c});
    for (size_t i = 0; i < a.size(); ++i) {
      double r = std::fmod(double{a[i]}, double{b[i]});
      if (r != 0 && ((r < 0) != (b[i] < 0))) r += b[i];
      float got = values<float>(c)[i];
      if (std::isnan(r)) {
        EXPECT_TRUE(std::isnan(got)) << a[i] << " % " << b[i];
      } else {
        EXPECT_NEAR(got, r, 1e-6 * std::abs(b[i])) << a[i] << " % " << b[i];
      }
    }
  }
}

TEST_F(OpsTest, IntegerPowIsExactModulo2To64) {
  vm::VirtualMachine vm(program_);
  std::vector<int64_t> a = {2, 3, -3, 0, 1, -1, 10, 7, 2, 5, -2, 2, 3, -1, 0, 7};
  std::vector<int64_t> b = {10, 20, 3, 5, 100, 7, 15, 0, -1, 2, 11, 62, 41, -3, 0, 1000};
  auto n = static_cast<int64_t>(a.size());
  for (int lanes : {1, 8}) {
    Tensor c = poisoned({n}, DType::kInt64);
    call(vm, "ipow_" + std::to_string(lanes),
         {tensor(a, DType::kInt64), tensor(b, DType::kInt64), c});
    for (size_t i = 0; i < a.size(); ++i) {
      // Exact modulo 2^64 (3^41 wraps), like numpy; negative exponents truncate.
      uint64_t want = 1;
      for (int64_t k = 0; k < b[i]; ++k) want *= static_cast<uint64_t>(a[i]);
      if (b[i] < 0) want = a[i] == 1 ? 1 : a[i] == -1 ? (b[i] % 2 ? UINT64_MAX : 1) : 0;
      EXPECT_EQ(static_cast<uint64_t>(values<int64_t>(c)[i]), want) << a[i] << " ** " << b[i];
    }
  }
}

// bf16 reference: round to nearest even on the top 16 bits.
uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

TEST_F(OpsTest, HalfPrecisionStorageRoundsOnStore) {
  vm::VirtualMachine vm(program_);
  std::vector<uint16_t> bits;
  std::vector<_Float16> xs;
  for (float v : {0.0f, 1.0f, -1.5f, 0.1f, 1000.0f, 40000.0f, 6e-8f, -3.3e-5f, 65504.0f, kInf, kNaN,
                  0.333f, 2.71828f, -7.0f, 12345.0f, 0.0009765625f, 3.0e-6f}) {
    _Float16 h = static_cast<_Float16>(v);
    uint16_t u;
    std::memcpy(&u, &h, 2);
    bits.push_back(u);
    xs.push_back(h);
  }
  auto n = static_cast<int64_t>(bits.size());
  for (int lanes : {1, 8}) {
    Tensor y = poisoned({n}, DType::kFloat16), z = poisoned({n}, DType::kBFloat16);
    call(vm, "half_" + std::to_string(lanes), {tensor(bits, DType::kFloat16), y, z});
    for (size_t i = 0; i < bits.size(); ++i) {
      float x = static_cast<float>(xs[i]);
      _Float16 want = static_cast<_Float16>(x * 2.0f + 1.0f);  // exact in f32, one rounding
      uint16_t want_bits, got = values<uint16_t>(y)[i];
      std::memcpy(&want_bits, &want, 2);
      if (std::isnan(x)) {
        EXPECT_EQ(got & 0x7c00, 0x7c00) << "x = " << x;
        EXPECT_NE(got & 0x03ff, 0) << "x = " << x;
      } else {
        EXPECT_EQ(got, want_bits) << "x = " << x;
      }
      EXPECT_EQ(values<uint16_t>(z)[i], to_bf16(x)) << "x = " << x;
    }
  }
}

}  // namespace
}  // namespace dynvm::codegen::testing
