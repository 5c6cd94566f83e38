// Elementwise ops compiled for the host and run through the runtime's loader: every unary
// op on symbolic [n] (one kernel, sizes 1..1000) and static [7, 129]; binary ops with
// broadcasting ([m, n] + [n] symbolic, [3, 1] + [1, 4], [5, 4] + [4], scalar + [7]),
// integer div/mod semantics, comparisons and logic to bool, where, cast; bit shifts on
// unsigned types, IsInf / IsNaN, Shrink, Quantize / DequantizeLinear per tensor and per
// axis. References are double-precision loops over the same float inputs (C shifts,
// nearbyint for round half to even) and hand-computed values.
#include "kernels/ops/elementwise.h"

#include <cmath>
#include <limits>
#include <map>

#include "kernels/arith/printer.h"
#include "kernels/ops/quantize.h"
#include "tests/kernels/ops/op_test_util.h"

namespace dynvm::ops::testing {
namespace {

const std::vector<int64_t> kSizes = {1, 3, 7, 17, 129, 1000};

struct UnaryCase {
  UnaryOp op;
  std::function<double(double)> ref;
  double lo = -4, hi = 4;
  UnaryParams params = {};
};

double erf_gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

std::vector<UnaryCase> unary_cases() {
  const double kSeluA = 1.67326319217681884765625, kSeluG = 1.05070102214813232421875;
  return {
      {UnaryOp::kNeg, [](double x) { return -x; }},
      {UnaryOp::kAbs, [](double x) { return std::fabs(x); }},
      {UnaryOp::kExp, [](double x) { return std::exp(x); }},
      {UnaryOp::kLog, [](double x) { return std::log(x); }, 0.01, 50},
      {UnaryOp::kSqrt, [](double x) { return std::sqrt(x); }, 0, 50},
      {UnaryOp::kReciprocal, [](double x) { return 1 / x; }, 0.1, 8},
      {UnaryOp::kTanh, [](double x) { return std::tanh(x); }},
      {UnaryOp::kSigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {UnaryOp::kErf, [](double x) { return std::erf(x); }},
      {UnaryOp::kRelu, [](double x) { return std::max(x, 0.0); }},
      {UnaryOp::kLeakyRelu, [](double x) { return x < 0 ? 0.1 * x : x; }, -4, 4, {0.1}},
      {UnaryOp::kElu, [](double x) { return x < 0 ? std::expm1(x) : x; }},
      {UnaryOp::kSelu, [=](double x) { return kSeluG * (x <= 0 ? kSeluA * std::expm1(x) : x); }},
      {UnaryOp::kGelu, erf_gelu},
      {UnaryOp::kSoftplus, [](double x) { return std::log1p(std::exp(x)); }, -30, 30},
      {UnaryOp::kHardSigmoid, [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }},
      {UnaryOp::kFloor, [](double x) { return std::floor(x); }},
      {UnaryOp::kCeil, [](double x) { return std::ceil(x); }},
      {UnaryOp::kRound, [](double x) { return std::nearbyint(x); }},
      {UnaryOp::kSign, [](double x) { return static_cast<double>((x > 0) - (x < 0)); }},
      {UnaryOp::kClip, [](double x) { return std::clamp(x, -0.5, 2.0); }, -4, 4, {-0.5, 2.0}},
      {UnaryOp::kTan, [](double x) { return std::tan(x); }, -1.4, 1.4},
      {UnaryOp::kSinh, [](double x) { return std::sinh(x); }},
      {UnaryOp::kCosh, [](double x) { return std::cosh(x); }},
      {UnaryOp::kAsinh, [](double x) { return std::asinh(x); }, -50, 50},
      {UnaryOp::kAcosh, [](double x) { return std::acosh(x); }, 1, 50},
      {UnaryOp::kAtanh, [](double x) { return std::atanh(x); }, -0.99, 0.99},
      {UnaryOp::kSoftsign, [](double x) { return x / (1 + std::fabs(x)); }, -30, 30},
      {UnaryOp::kThresholdedRelu, [](double x) { return x > 0.5 ? x : 0.0; }, -4, 4, {0.5}},
      {UnaryOp::kAtan, [](double x) { return std::atan(x); }, -50, 50},
      {UnaryOp::kAsin, [](double x) { return std::asin(x); }, -1, 1},
      {UnaryOp::kAcos, [](double x) { return std::acos(x); }, -1, 1},
  };
}

class UnaryOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var n("n");
    std::vector<OpToBuild> ops;
    for (const UnaryCase& c : unary_cases()) {
      std::string name = unary_op_name(c.op);
      ops.push_back({name + "_sym", unary(c.op, TensorType{kF32, {n}}, c.params)});
      ops.push_back({name + "_static", unary(c.op, TensorType{kF32, dims({7, 129})}, c.params)});
    }
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* UnaryOps::lib_ = nullptr;

void check_unary(const OpLibrary& lib, const UnaryCase& c, const std::string& symbol,
                 const vm::Shape& shape, std::mt19937& rng) {
  vm::Tensor x = random_tensor(shape, kF32, rng, c.lo, c.hi);
  if (c.op == UnaryOp::kRound && x.numel() > 2) {  // ties round to even
    x.data_as<float>()[0] = 2.5f;
    x.data_as<float>()[1] = -0.5f;
  }
  vm::Tensor y = run_op(lib, symbol, {x}, shape, kF32);
  std::vector<double> want;
  for (int64_t i = 0; i < x.numel(); ++i) want.push_back(c.ref(at(x, i)));
  expect_close(y, want, 2e-6, 1e-6, symbol + " " + shape_name(shape));
}

TEST_F(UnaryOps, EveryOpOnSymbolicAndStaticShapes) {
  std::mt19937 rng(1);
  for (const UnaryCase& c : unary_cases()) {
    std::string name = unary_op_name(c.op);
    for (int64_t n : kSizes) check_unary(*lib_, c, name + "_sym", {n}, rng);
    check_unary(*lib_, c, name + "_static", {7, 129}, rng);
  }
}

// The ends of the domains: asin / acos at +-1 and just inside, atan of infinities and of
// values around the range-reduction splits tan(pi/8), tan(3pi/8); NaN outside [-1, 1].
TEST_F(UnaryOps, InverseTrigonometryAtTheEdges) {
  const std::vector<float> unit = {1.0f, -1.0f, 0.0f, -0.0f, 0.99999994f, -0.99999994f, 1e-30f};
  const std::vector<float> wide = {INFINITY,   -INFINITY,  0.41421354f, 0.41421357f,
                                   2.4142134f, 2.4142137f, 1e30f,       -1e-30f};
  const auto n = static_cast<int64_t>(unit.size()), w = static_cast<int64_t>(wide.size());
  vm::Tensor u = vm::Tensor::from_vector(unit, {n}, kF32);
  vm::Tensor v = vm::Tensor::from_vector(wide, {w}, kF32);
  std::vector<double> want_asin, want_acos, want_atan;
  for (float x : unit) {
    want_asin.push_back(std::asin(static_cast<double>(x)));
    want_acos.push_back(std::acos(static_cast<double>(x)));
  }
  for (float x : wide) want_atan.push_back(std::atan(static_cast<double>(x)));
  expect_close(run_op(*lib_, "asin_sym", {u}, {n}, kF32), want_asin, 2e-6, 1e-6, "asin edges");
  expect_close(run_op(*lib_, "acos_sym", {u}, {n}, kF32), want_acos, 2e-6, 1e-6, "acos edges");
  expect_close(run_op(*lib_, "atan_sym", {v}, {w}, kF32), want_atan, 2e-6, 1e-6, "atan edges");
  // Exact where the result is representable: acos(1) = 0, asin(-0) = -0.
  vm::Tensor acos_u = run_op(*lib_, "acos_sym", {u}, {n}, kF32);
  EXPECT_EQ(acos_u.data_as<float>()[0], 0.0f);
  vm::Tensor asin_u = run_op(*lib_, "asin_sym", {u}, {n}, kF32);
  EXPECT_TRUE(std::signbit(asin_u.data_as<float>()[3]));

  // NaN outside the domain, into an output filled with zeros (not NaN poison).
  vm::Tensor out = vm::Tensor::from_vector(std::vector<float>{1.5f, -1.0001f, NAN}, {3}, kF32);
  for (const char* op : {"asin_sym", "acos_sym"}) {
    vm::Tensor y = vm::Tensor::from_vector(std::vector<float>(3, 0.0f), {3}, kF32);
    ASSERT_TRUE(lib_->run(op, {out, y}).ok()) << op;
    for (int64_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(at(y, i))) << op << " element " << i;
  }
}

TEST_F(UnaryOps, SerialBackendGivesTheSameValues) {
  std::mt19937 rng(2);
  vm::Tensor x = random_tensor({1000}, kF32, rng, -4, 4);
  vm::Tensor a = run_op(*lib_, "tanh_sym", {x}, {1000}, kF32, true);
  vm::Tensor b = run_op(*lib_, "tanh_sym", {x}, {1000}, kF32, false);
  expect_close(a, values(b), 0, 0, "tanh parallel vs serial");
}

// Runs every parallel call inline, in one chunk, and records its range and grain.
class RecordingBackend : public vm::ParallelBackend {
 public:
  int32_t parallel_for(int64_t begin, int64_t end, int64_t grain, DynvmParallelBody body,
                       void* closure) override {
    calls.push_back({end - begin, grain});
    return body(begin, end, closure);
  }
  std::vector<std::pair<int64_t, int64_t>> calls;  // (iterations, grain)
};

// A parallel loop asks for chunks worth handing to another thread (kMinParallelChunkWork
// stores): a call with less work than that fits in one chunk, which the runtime runs on
// the calling thread; a large one is split. Sizes are whole vectors (16 lanes): a tail is
// a call of its own.
TEST_F(UnaryOps, ParallelCallsAskForChunksWorthAThread) {
  std::mt19937 rng(5);
  for (int64_t n : {int64_t{1008}, int64_t{1} << 22}) {
    vm::Tensor x = random_tensor({n}, kF32, rng, -4, 4);
    vm::Tensor y = vm::Tensor::empty({n}, kF32);
    RecordingBackend backend;
    ASSERT_TRUE(lib_->run("relu_sym", {x, y}, backend).ok());
    ASSERT_EQ(backend.calls.size(), 1u) << n;
    const auto [iterations, grain] = backend.calls[0];
    if (n == 1008) {
      EXPECT_LE(iterations, grain) << "1008 elements are one chunk";
    } else {
      EXPECT_GT(iterations, 2 * grain) << "4M elements are several chunks";
      EXPECT_GE(grain, 1);
    }
    for (int64_t i = 0; i < n; i += 997) {
      ASSERT_EQ(y.data_as<float>()[i], std::max(x.data_as<float>()[i], 0.0f)) << i;
    }
  }
}

TEST_F(UnaryOps, WrongShapeIsReportedNotRun) {
  std::mt19937 rng(3);
  vm::Tensor x = random_tensor({7, 128}, kF32, rng);
  vm::Tensor y = poisoned({7, 128}, kF32);
  OpResult r = lib_->run("exp_static", {x, y});
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.error.empty());
}

// ---- binary ops

struct BinaryCase {
  BinaryOp op;
  std::function<double(double, double)> ref;
  double lo = -3, hi = 3;
  bool ties = false;  // small integers as floats, so that equality happens
};

double floor_mod(double a, double b) {
  double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

std::vector<BinaryCase> float_binary_cases() {
  return {
      {BinaryOp::kAdd, [](double a, double b) { return a + b; }},
      {BinaryOp::kSub, [](double a, double b) { return a - b; }},
      {BinaryOp::kMul, [](double a, double b) { return a * b; }},
      {BinaryOp::kDiv, [](double a, double b) { return a / b; }, 0.25, 3},
      {BinaryOp::kPow, [](double a, double b) { return std::pow(a, b); }, 0.25, 2},
      {BinaryOp::kMin, [](double a, double b) { return std::min(a, b); }},
      {BinaryOp::kMax, [](double a, double b) { return std::max(a, b); }},
      {BinaryOp::kMod, floor_mod, 0.5, 3},
      {BinaryOp::kFMod, [](double a, double b) { return std::fmod(a, b); }, 0.5, 3},
      {BinaryOp::kEqual, [](double a, double b) { return double(a == b); }, -2, 2, true},
      {BinaryOp::kLess, [](double a, double b) { return double(a < b); }, -2, 2, true},
      {BinaryOp::kLessEqual, [](double a, double b) { return double(a <= b); }, -2, 2, true},
      {BinaryOp::kGreater, [](double a, double b) { return double(a > b); }, -2, 2, true},
      {BinaryOp::kGreaterEqual, [](double a, double b) { return double(a >= b); }, -2, 2, true},
  };
}

bool is_compare(BinaryOp op) { return op >= BinaryOp::kEqual && op <= BinaryOp::kGreaterEqual; }

vm::Tensor binary_input(const vm::Shape& shape, const BinaryCase& c, bool rhs, std::mt19937& rng) {
  if (c.ties) {
    vm::Tensor t = random_tensor(shape, kF32, rng, -2.49, 2.49);
    for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = std::round(at(t, i));
    return t;
  }
  vm::Tensor t = random_tensor(shape, kF32, rng, rhs ? c.lo : -3, rhs ? c.hi : 3);
  bool signed_rhs = c.op == BinaryOp::kMod || c.op == BinaryOp::kFMod;
  if (rhs && signed_rhs) {  // negative divisors too
    for (int64_t i = 0; i < t.numel(); i += 2) t.data_as<float>()[i] *= -1;
  }
  if (!rhs && c.op == BinaryOp::kPow) t = random_tensor(shape, kF32, rng, 0.1, 3);
  return t;
}

void check_binary(const OpLibrary& lib, const BinaryCase& c, const std::string& symbol,
                  const vm::Shape& sa, const vm::Shape& sb, const vm::Shape& out,
                  vm::DType out_dtype, std::mt19937& rng) {
  vm::Tensor a = binary_input(sa, c, false, rng), b = binary_input(sb, c, true, rng);
  vm::Tensor y = run_op(lib, symbol, {a, b}, out, out_dtype);
  std::vector<double> want;
  for (int64_t i = 0; i < numel(out); ++i) {
    double av = static_cast<float>(at(a, broadcast_index(sa, out, i)));
    double bv = static_cast<float>(at(b, broadcast_index(sb, out, i)));
    want.push_back(c.ref(av, bv));
  }
  double rtol = c.op == BinaryOp::kPow ? 4e-6 : 1e-6;
  // mod / fmod of f32 operands is exact; the 1e-6 absolute slack covers fmod of a value
  // that rounds to a multiple of the divisor.
  expect_close(y, want, rtol, 1e-6, symbol + " " + shape_name(sa) + " op " + shape_name(sb));
}

class BinaryOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n");
    std::vector<OpToBuild> ops;
    for (const BinaryCase& c : float_binary_cases()) {
      std::string name = binary_op_name(c.op);
      ops.push_back({name + "_sym", binary(c.op, {kF32, {m, n}}, {kF32, {n}})});
      ops.push_back({name + "_outer", binary(c.op, {kF32, dims({3, 1})}, {kF32, dims({1, 4})})});
    }
    for (int64_t vw : {1, 4, 16}) {
      ops.push_back({"add_sym_vw" + std::to_string(vw),
                     binary(BinaryOp::kAdd, {kF32, {m, n}}, {kF32, {n}}),
                     {{"vector_width", vw}, {"parallel", vw == 4 ? 1 : 0}}});
    }
    // Min and max at every register width: 128, 256 and 512 bits of f32 and f64, and 1024
    // bits (f64 in 16 lanes), which the target has no instruction for.
    for (BinaryOp op : {BinaryOp::kMin, BinaryOp::kMax}) {
      for (vm::DType t : {kF32, kF64}) {
        for (int64_t vw : {1, 4, 8, 16}) {
          ops.push_back({std::string(binary_op_name(op)) + "_" + std::string(vm::dtype_name(t)) +
                             "_vw" + std::to_string(vw),
                         binary(op, {t, {m, n}}, {t, {m, n}}),
                         {{"vector_width", vw}, {"parallel", 0}}});
        }
      }
    }
    ops.push_back({"add_rows", binary(BinaryOp::kAdd, {kF32, dims({5, 4})}, {kF32, dims({4})})});
    ops.push_back({"mul_scalar", binary(BinaryOp::kMul, {kF32, {}}, {kF32, dims({7})})});
    ops.push_back({"sub_outer_sym", binary(BinaryOp::kSub, {kF32, {m, 1}}, {kF32, {1, n}})});
    // NCHW maps with a per-channel operand (one flat loop over h*w) and with one that
    // broadcasts over rows (the rows stay), serial and parallel.
    arith::Var h("h"), w("w");
    for (int64_t parallel : {0, 1}) {
      const std::string tag = std::to_string(parallel);
      ops.push_back({"mul_channel_p" + tag,
                     binary(BinaryOp::kMul, {kF32, {m, 8, h, w}}, {kF32, dims({1, 8, 1, 1})}),
                     {{"parallel", parallel}}});
      ops.push_back({"add_row_p" + tag,
                     binary(BinaryOp::kAdd, {kF32, {m, 8, h, w}}, {kF32, {1, 1, 1, w}}),
                     {{"parallel", parallel}}});
    }
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* BinaryOps::lib_ = nullptr;

TEST_F(BinaryOps, FloatOpsBroadcastOverSymbolicAndStaticShapes) {
  std::mt19937 rng(4);
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {1, 1}, {3, 7}, {17, 129}, {2, 1000}, {7, 1}};
  for (const BinaryCase& c : float_binary_cases()) {
    std::string name = binary_op_name(c.op);
    vm::DType out = is_compare(c.op) ? kBool : kF32;
    for (auto [m, n] : sizes) check_binary(*lib_, c, name + "_sym", {m, n}, {n}, {m, n}, out, rng);
    check_binary(*lib_, c, name + "_outer", {3, 1}, {1, 4}, {3, 4}, out, rng);
  }
}

// Min and max propagate a NaN from either operand (numpy.minimum / maximum), whatever
// instruction computes them: every pattern of NaN and number on both sides, in vector
// bodies and tails.
TEST_F(BinaryOps, MinAndMaxPropagateNaNFromEitherSide) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> pool = {nan, -2.5, 0.0, 1.0, 7.0};
  const int64_t m = 3, n = 25;  // 75 pairs cover the 25 (a, b) patterns three times
  for (BinaryOp op : {BinaryOp::kMin, BinaryOp::kMax}) {
    for (vm::DType t : {kF32, kF64}) {
      vm::Tensor a = vm::Tensor::empty({m, n}, t), b = vm::Tensor::empty({m, n}, t);
      std::vector<double> want;
      for (int64_t i = 0; i < m * n; ++i) {
        double av = pool[static_cast<size_t>(i % 5)], bv = pool[static_cast<size_t>(i / 5 % 5)];
        if (t == kF32) {
          a.data_as<float>()[i] = static_cast<float>(av);
          b.data_as<float>()[i] = static_cast<float>(bv);
        } else {
          a.data_as<double>()[i] = av;
          b.data_as<double>()[i] = bv;
        }
        const bool either = std::isnan(av) || std::isnan(bv);
        want.push_back(either ? nan : op == BinaryOp::kMin ? std::min(av, bv) : std::max(av, bv));
      }
      for (int64_t vw : {1, 4, 8, 16}) {
        const std::string symbol = std::string(binary_op_name(op)) + "_" +
                                   std::string(vm::dtype_name(t)) + "_vw" + std::to_string(vw);
        vm::Tensor y = run_op(*lib_, symbol, {a, b}, {m, n}, t);
        for (int64_t i = 0; i < m * n; ++i) {
          const double got = at(y, i), w = want[static_cast<size_t>(i)];
          if (std::isnan(w)) {
            EXPECT_TRUE(std::isnan(got)) << symbol << " element " << i;
          } else {
            EXPECT_EQ(got, w) << symbol << " element " << i;
          }
        }
      }
    }
  }
}

TEST_F(BinaryOps, RowScalarAndOuterBroadcasting) {
  std::mt19937 rng(5);
  BinaryCase add{BinaryOp::kAdd, [](double a, double b) { return a + b; }};
  BinaryCase mul{BinaryOp::kMul, [](double a, double b) { return a * b; }};
  BinaryCase sub{BinaryOp::kSub, [](double a, double b) { return a - b; }};
  check_binary(*lib_, add, "add_rows", {5, 4}, {4}, {5, 4}, kF32, rng);
  check_binary(*lib_, mul, "mul_scalar", {}, {7}, {7}, kF32, rng);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 4}, {17, 129}}) {
    check_binary(*lib_, sub, "sub_outer_sym", {m, 1}, {1, n}, {m, n}, kF32, rng);
  }
}

TEST_F(BinaryOps, ChannelBroadcastsOverSymbolicImagesAtEverySize) {
  std::mt19937 rng(11);
  BinaryCase add{BinaryOp::kAdd, [](double a, double b) { return a + b; }};
  BinaryCase mul{BinaryOp::kMul, [](double a, double b) { return a * b; }};
  for (const std::string tag : {"0", "1"}) {
    for (const vm::Shape& x : std::vector<vm::Shape>{
             {1, 8, 1, 1}, {1, 8, 7, 7}, {2, 8, 3, 17}, {1, 8, 16, 16}, {3, 8, 5, 33}}) {
      check_binary(*lib_, mul, "mul_channel_p" + tag, x, {1, 8, 1, 1}, x, kF32, rng);
      check_binary(*lib_, add, "add_row_p" + tag, x, {1, 1, 1, x[3]}, x, kF32, rng);
    }
  }
}

// The loops the injective template makes: the image of a per-channel product is one loop
// of h*w in vectors (no tail per row), the rows of a row broadcast stay rows.
TEST(InjectiveSchedule, TrailingAxesEveryReadWalksContiguouslyRunAsOneLoop) {
  arith::Var m("m"), h("h"), w("w");
  auto leaves = [](const OpInstance& op) {
    te::Schedule s = op.schedule({});
    std::vector<std::string> extents;
    for (const te::IterVarRef& axis : s[op.outputs[0]].leaf_axes()) {
      extents.push_back(arith::to_string(axis->extent));
    }
    return extents;
  };
  const OpInstance channel =
      binary(BinaryOp::kMul, {kF32, {m, 8, h, w}}, {kF32, dims({1, 8, 1, 1})});
  const OpInstance row = binary(BinaryOp::kAdd, {kF32, {m, 8, h, w}}, {kF32, {1, 1, 1, w}});
  const std::vector<std::string> flat = leaves(channel), rows = leaves(row);
  ASSERT_EQ(flat.size(), 3u) << ::testing::PrintToString(flat);
  EXPECT_EQ(flat[0].find('h'), std::string::npos) << flat[0];  // the batch and the channels
  EXPECT_NE(flat[1].find('h'), std::string::npos) << flat[1];  // (h*w + 15) / 16
  EXPECT_NE(flat[1].find('w'), std::string::npos) << flat[1];
  EXPECT_EQ(flat[2], "16");
  ASSERT_EQ(rows.size(), 4u) << ::testing::PrintToString(rows);
  EXPECT_EQ(rows[1], "h");
  // Three channels of one image: the threads need the rows, so they stay.
  const OpInstance three =
      binary(BinaryOp::kMul, {kF32, {1, 3, h, w}}, {kF32, dims({1, 3, 1, 1})});
  const std::vector<std::string> image = leaves(three);
  ASSERT_EQ(image.size(), 3u) << ::testing::PrintToString(image);
  EXPECT_NE(image[0].find('h'), std::string::npos) << image[0];
  EXPECT_EQ(image[1].find('h'), std::string::npos) << image[1];
}

TEST_F(BinaryOps, KnobsChangeTheScheduleNotTheValues) {
  std::mt19937 rng(10);
  BinaryCase add{BinaryOp::kAdd, [](double a, double b) { return a + b; }};
  for (int64_t vw : {1, 4, 16}) {
    for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 17}, {5, 1000}}) {
      check_binary(*lib_, add, "add_sym_vw" + std::to_string(vw), {m, n}, {n}, {m, n}, kF32, rng);
    }
  }
}

// Integer division, bool logic, where and casts: a library of their own.
class MixedTypeOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n");
    std::vector<OpToBuild> ops;
    TensorType i32n{kI32, {n}};
    ops.push_back({"div_i32", binary(BinaryOp::kDiv, i32n, i32n)});
    ops.push_back({"mod_i32", binary(BinaryOp::kMod, i32n, i32n)});
    ops.push_back({"fmod_i32", binary(BinaryOp::kFMod, i32n, i32n)});
    TensorType booln{kBool, {n}};
    ops.push_back({"and_bool", binary(BinaryOp::kAnd, booln, booln)});
    ops.push_back({"or_bool", binary(BinaryOp::kOr, booln, booln)});
    ops.push_back({"xor_bool", binary(BinaryOp::kXor, booln, booln)});
    ops.push_back({"not_bool", unary(UnaryOp::kNot, booln)});
    ops.push_back({"where_sym", where({kBool, {m, 1}}, {kF32, {m, n}}, {kF32, {n}})});
    ops.push_back({"cast_f32_i32", cast({kF32, {n}}, kI32)});
    ops.push_back({"cast_i32_f32", cast(i32n, kF32)});
    ops.push_back({"cast_f32_bool", cast({kF32, {n}}, kBool)});
    TensorType f64n{kF64, {n}};
    ops.push_back({"exp_f64", unary(UnaryOp::kExp, f64n)});
    ops.push_back({"tanh_f64", unary(UnaryOp::kTanh, f64n)});
    ops.push_back({"add_f64", binary(BinaryOp::kAdd, {kF64, {m, n}}, f64n)});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* MixedTypeOps::lib_ = nullptr;

TEST_F(MixedTypeOps, IntegerDivTruncatesAndModFollowsTheDivisor) {
  std::mt19937 rng(6);
  for (int64_t n : kSizes) {
    vm::Tensor a = random_tensor({n}, kI32, rng, -50, 50), b = random_tensor({n}, kI32, rng, 1, 9);
    for (int64_t i = 0; i < n; i += 2) b.data_as<int32_t>()[i] *= -1;
    std::vector<double> q, r, f;
    for (int64_t i = 0; i < n; ++i) {
      auto x = static_cast<int64_t>(at(a, i)), y = static_cast<int64_t>(at(b, i));
      q.push_back(static_cast<double>(x / y));
      f.push_back(static_cast<double>(x % y));
      int64_t m = x % y;
      r.push_back(static_cast<double>(m != 0 && ((m < 0) != (y < 0)) ? m + y : m));
    }
    expect_close(run_op(*lib_, "div_i32", {a, b}, {n}, kI32), q, 0, 0, "div_i32");
    expect_close(run_op(*lib_, "mod_i32", {a, b}, {n}, kI32), r, 0, 0, "mod_i32");
    expect_close(run_op(*lib_, "fmod_i32", {a, b}, {n}, kI32), f, 0, 0, "fmod_i32");
  }
}

TEST_F(MixedTypeOps, LogicOnBools) {
  std::mt19937 rng(7);
  for (int64_t n : kSizes) {
    vm::Tensor a = random_tensor({n}, kBool, rng), b = random_tensor({n}, kBool, rng);
    std::vector<double> wand, wor, wxor, wnot;
    for (int64_t i = 0; i < n; ++i) {
      bool x = at(a, i) != 0, y = at(b, i) != 0;
      wand.push_back(x && y);
      wor.push_back(x || y);
      wxor.push_back(x != y);
      wnot.push_back(!x);
    }
    expect_close(run_op(*lib_, "and_bool", {a, b}, {n}, kBool), wand, 0, 0, "and");
    expect_close(run_op(*lib_, "or_bool", {a, b}, {n}, kBool), wor, 0, 0, "or");
    expect_close(run_op(*lib_, "xor_bool", {a, b}, {n}, kBool), wxor, 0, 0, "xor");
    expect_close(run_op(*lib_, "not_bool", {a}, {n}, kBool), wnot, 0, 0, "not");
  }
}

TEST_F(MixedTypeOps, WhereBroadcastsThreeWays) {
  std::mt19937 rng(8);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 129}}) {
    vm::Tensor c = random_tensor({m, 1}, kBool, rng);
    vm::Tensor a = random_tensor({m, n}, kF32, rng), b = random_tensor({n}, kF32, rng);
    std::vector<double> want;
    for (int64_t i = 0; i < m * n; ++i) want.push_back(at(c, i / n) != 0 ? at(a, i) : at(b, i % n));
    expect_close(run_op(*lib_, "where_sym", {c, a, b}, {m, n}, kF32), want, 0, 0, "where");
  }
}

TEST_F(MixedTypeOps, CastsTruncateTowardZeroAndToBool) {
  std::mt19937 rng(9);
  for (int64_t n : kSizes) {
    vm::Tensor x = random_tensor({n}, kF32, rng, -100, 100);
    if (n > 1) x.data_as<float>()[0] = 0.0f;
    vm::Tensor k = random_tensor({n}, kI32, rng, -100000, 100000);
    std::vector<double> to_int, to_bool, to_float;
    for (int64_t i = 0; i < n; ++i) {
      to_int.push_back(std::trunc(at(x, i)));
      to_bool.push_back(at(x, i) != 0);
      to_float.push_back(at(k, i));
    }
    expect_close(run_op(*lib_, "cast_f32_i32", {x}, {n}, kI32), to_int, 0, 0, "f32->i32");
    expect_close(run_op(*lib_, "cast_f32_bool", {x}, {n}, kBool), to_bool, 0, 0, "f32->bool");
    expect_close(run_op(*lib_, "cast_i32_f32", {k}, {n}, kF32), to_float, 0, 0, "i32->f32");
  }
}

TEST_F(MixedTypeOps, Float64OpsComputeInDouble) {
  std::mt19937 rng(16);
  for (int64_t n : kSizes) {
    vm::Tensor x = random_tensor({n}, kF64, rng, -4, 4), z = random_tensor({3, n}, kF64, rng);
    std::vector<double> e, t, s;
    for (int64_t i = 0; i < n; ++i) {
      e.push_back(std::exp(at(x, i)));
      t.push_back(std::tanh(at(x, i)));
    }
    for (int64_t i = 0; i < 3 * n; ++i) s.push_back(at(z, i) + at(x, i % n));
    expect_close(run_op(*lib_, "exp_f64", {x}, {n}, kF64), e, 1e-12, 1e-14, "exp_f64");
    expect_close(run_op(*lib_, "tanh_f64", {x}, {n}, kF64), t, 1e-12, 1e-14, "tanh_f64");
    expect_close(run_op(*lib_, "add_f64", {z, x}, {3, n}, kF64), s, 0, 0, "add_f64");
  }
}

TEST(ElementwiseBuilders, RejectBadTypesAndShapes) {
  arith::Var n("n"), k("k");
  EXPECT_THROW(binary(BinaryOp::kAdd, {kF32, dims({3})}, {kF32, dims({4})}), UserError);
  // Two different symbolic dims broadcast at run time (the compiler checks them first).
  EXPECT_EQ(
      arith::to_string(binary(BinaryOp::kAdd, {kF32, {n}}, {kF32, {k}}).outputs[0]->shape()[0]),
      "select(n == 1, k, n)");
  EXPECT_THROW(binary(BinaryOp::kAdd, {kF32, {n}}, {kI32, {n}}), UserError);
  EXPECT_THROW(binary(BinaryOp::kAnd, {kF32, {n}}, {kF32, {n}}), UserError);
  EXPECT_THROW(unary(UnaryOp::kExp, {kI32, {n}}), UserError);
  EXPECT_THROW(unary(UnaryOp::kNot, {kF32, {n}}), UserError);
  OpInstance op = unary(UnaryOp::kExp, {kF32, {n}});
  EXPECT_EQ(knob(op, {}, "vector_width"), 16);
  EXPECT_EQ(knob(op, {{"parallel", 0}}, "parallel"), 0);
  ASSERT_EQ(op.preferred_multiples.size(), 1u);
  EXPECT_EQ(op.preferred_multiples[0].second, 8);
  EXPECT_EQ(knob(unary(UnaryOp::kExp, {kF32, dims({3, 4})}), {}, "parallel"), 0);
}

constexpr vm::DType kU8 = vm::DType::kUInt8;
constexpr vm::DType kI8 = vm::DType::kInt8;
constexpr vm::DType kU32 = vm::DType::kUInt32;
constexpr vm::DType kU64 = vm::DType::kUInt64;

template <typename T>
std::vector<T> elements_of(const vm::Tensor& t) {
  return std::vector<T>(t.data_as<T>(), t.data_as<T>() + t.numel());
}

class ExtraElementwiseOps : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var a("a"), b("b"), c("c"), n("n");
    std::vector<OpToBuild> ops;
    ops.push_back({"shl_u8", bit_shift({kU8, {n}}, {kU8, {n}}, true)});
    ops.push_back({"shr_u8", bit_shift({kU8, {n}}, {kU8, {n}}, false)});
    ops.push_back({"shl_u64", bit_shift({kU64, {n}}, {kU64, {n}}, true)});
    ops.push_back({"shr_u32_scalar", bit_shift({kU32, {a, n}}, {kU32, {}}, false)});
    ops.push_back({"is_inf", is_inf({kF32, {n}})});
    ops.push_back({"is_inf_neg", is_inf({kF32, {n}}, true, false)});
    ops.push_back({"is_inf_pos", is_inf({kF32, {n}}, false, true)});
    ops.push_back({"is_nan", is_nan({kF32, {n}})});
    ops.push_back({"shrink", shrink({kF32, {n}}, 1.5, 0.5)});
    ops.push_back({"quantize_u8", quantize_linear({kF32, {n}}, {kF32, {}}, TensorType{kU8, {}})});
    ops.push_back({"quantize_no_zero_point", quantize_linear({kF32, {n}}, {kF32, {}}, {})});
    ops.push_back({"quantize_i8_axis",
                   quantize_linear({kF32, {a, b, c}}, {kF32, {b}}, TensorType{kI8, {b}}, 1)});
    ops.push_back(
        {"dequantize_u8", dequantize_linear({kU8, {n}}, {kF32, {}}, TensorType{kU8, {}})});
    ops.push_back({"dequantize_i8_axis",
                   dequantize_linear({kI8, {a, b}}, {kF32, {b}}, TensorType{kI8, {b}}, -1)});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* ExtraElementwiseOps::lib_ = nullptr;

// x << y / x >> y as C computes them, 0 once y reaches the bit width (numpy's result).
template <typename T>
T shift_ref(T x, T y, bool left) {
  if (y >= sizeof(T) * 8) return 0;
  return static_cast<T>(left ? x << y : x >> y);
}

template <typename T>
void check_shift(const OpLibrary& lib, const std::string& symbol, vm::DType dtype, bool left,
                 int64_t n, std::mt19937& rng) {
  std::vector<T> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  const uint64_t bits = sizeof(T) * 8;
  for (int64_t i = 0; i < n; ++i) {
    x[static_cast<size_t>(i)] = static_cast<T>(rng());
    y[static_cast<size_t>(i)] = static_cast<T>(rng() % (bits + 3));  // some beyond the width
  }
  vm::Tensor out = run_op(
      lib, symbol, {vm::Tensor::from_vector(x, {n}, dtype), vm::Tensor::from_vector(y, {n}, dtype)},
      {n}, dtype);
  std::vector<T> got = elements_of<T>(out);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], shift_ref<T>(x[i], y[i], left))
        << symbol << " n=" << n << " element " << i << ": " << +x[i] << ", " << +y[i];
  }
}

TEST_F(ExtraElementwiseOps, BitShiftMatchesCShiftsAndZeroesPastTheWidth) {
  std::mt19937 rng(41);
  for (int64_t n : kSizes) {
    check_shift<uint8_t>(*lib_, "shl_u8", kU8, true, n, rng);
    check_shift<uint8_t>(*lib_, "shr_u8", kU8, false, n, rng);
    check_shift<uint64_t>(*lib_, "shl_u64", kU64, true, n, rng);
  }
  // The ONNX example: [16, 4, 1] >> [1, 2, 3] = [8, 1, 0]; a scalar shift broadcast.
  vm::Tensor x =
      vm::Tensor::from_vector(std::vector<uint32_t>{16, 4, 1, 0xffffffffu, 7, 9}, {2, 3}, kU32);
  vm::Tensor y = vm::Tensor::from_vector(std::vector<uint32_t>{2}, {}, kU32);
  vm::Tensor out = run_op(*lib_, "shr_u32_scalar", {x, y}, {2, 3}, kU32);
  EXPECT_EQ(elements_of<uint32_t>(out), (std::vector<uint32_t>{4, 1, 0, 0x3fffffffu, 1, 2}));
}

TEST_F(ExtraElementwiseOps, IsInfIsNanAndShrinkOnHandPickedValues) {
  const std::vector<float> x = {-INFINITY, INFINITY, NAN, 0.0f, -1.5f, 3e38f, -3.0f, 2.0f};
  vm::Tensor in = vm::Tensor::from_vector(x, {8}, kF32);
  auto bools = [&](const std::string& symbol) {
    return values(run_op(*lib_, symbol, {in}, {8}, kBool));
  };
  EXPECT_EQ(bools("is_inf"), (std::vector<double>{1, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(bools("is_inf_neg"), (std::vector<double>{1, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(bools("is_inf_pos"), (std::vector<double>{0, 1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(bools("is_nan"), (std::vector<double>{0, 0, 1, 0, 0, 0, 0, 0}));
  // lambd 1.5, bias 0.5: below -1.5 add the bias, above 1.5 subtract it, else 0.
  vm::Tensor s =
      vm::Tensor::from_vector(std::vector<float>{-3, -1.5, -1, 0, 1, 1.5, 2, 4}, {8}, kF32);
  expect_close(run_op(*lib_, "shrink", {s}, {8}, kF32), {-2.5, 0, 0, 0, 0, 0, 1.5, 3.5}, 0, 0,
               "shrink");
}

// saturate(nearbyint(x / scale) + zero_point) in float, as ONNX's reference computes it.
double quantize_ref(float x, float scale, double zero_point, double lo, double hi) {
  double q = std::nearbyint(static_cast<double>(x / scale)) + zero_point;
  return std::min(std::max(q, lo), hi);
}

TEST_F(ExtraElementwiseOps, QuantizeRoundsHalfToEvenAndSaturates) {
  // ONNX's example: scale 2, zero point 128.
  vm::Tensor x = vm::Tensor::from_vector(std::vector<float>{0, 2, 3, 1000, -254, -1000}, {6}, kF32);
  vm::Tensor scale = vm::Tensor::from_vector(std::vector<float>{2}, {}, kF32);
  vm::Tensor zp = vm::Tensor::from_vector(std::vector<uint8_t>{128}, {}, kU8);
  vm::Tensor y = run_op(*lib_, "quantize_u8", {x, scale, zp}, {6}, kU8);
  EXPECT_EQ(elements_of<uint8_t>(y), (std::vector<uint8_t>{128, 129, 130, 255, 1, 0}));
  // Halves go to the even neighbour; without a zero point the result is uint8 around 0.
  vm::Tensor halves = vm::Tensor::from_vector(
      std::vector<float>{0.5, 1.5, 2.5, 3.5, -0.5, 254.5, 255.5}, {7}, kF32);
  vm::Tensor one = vm::Tensor::from_vector(std::vector<float>{1}, {}, kF32);
  y = run_op(*lib_, "quantize_no_zero_point", {halves, one}, {7}, kU8);
  EXPECT_EQ(elements_of<uint8_t>(y), (std::vector<uint8_t>{0, 2, 2, 4, 0, 254, 255}));
}

TEST_F(ExtraElementwiseOps, QuantizePerAxisAgainstReference) {
  std::mt19937 rng(42);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 3, 1}, {2, 3, 17}, {3, 5, 129}}) {
    vm::Tensor x = random_tensor(s, kF32, rng, -300, 300);
    std::vector<float> scales;
    std::vector<int8_t> zps;
    for (int64_t k = 0; k < s[1]; ++k) {
      scales.push_back(0.5f + static_cast<float>(k));
      zps.push_back(static_cast<int8_t>(k * 7 - 10));
    }
    vm::Tensor y = run_op(*lib_, "quantize_i8_axis",
                          {x, vm::Tensor::from_vector(scales, {s[1]}, kF32),
                           vm::Tensor::from_vector(zps, {s[1]}, kI8)},
                          s, kI8);
    std::vector<int8_t> got = elements_of<int8_t>(y);
    for (int64_t i = 0; i < numel(s); ++i) {
      const auto k = static_cast<size_t>(unravel(i, s)[1]);
      double want = quantize_ref(x.data_as<float>()[i], scales[k], zps[k], -128, 127);
      ASSERT_EQ(got[static_cast<size_t>(i)], want) << shape_name(s) << " element " << i;
    }
  }
}

TEST_F(ExtraElementwiseOps, DequantizePerTensorAndPerAxis) {
  vm::Tensor x = vm::Tensor::from_vector(std::vector<uint8_t>{0, 3, 128, 255}, {4}, kU8);
  vm::Tensor scale = vm::Tensor::from_vector(std::vector<float>{2}, {}, kF32);
  vm::Tensor zp = vm::Tensor::from_vector(std::vector<uint8_t>{128}, {}, kU8);
  expect_close(run_op(*lib_, "dequantize_u8", {x, scale, zp}, {4}, kF32), {-256, -250, 0, 254}, 0,
               0, "dequantize_u8");
  // [2, 3] along the last axis: (x - zp[k]) * scale[k].
  vm::Tensor xi = vm::Tensor::from_vector(std::vector<int8_t>{-128, 0, 5, 127, -3, 1}, {2, 3}, kI8);
  vm::Tensor scales = vm::Tensor::from_vector(std::vector<float>{0.5, 2, 1}, {3}, kF32);
  vm::Tensor zps = vm::Tensor::from_vector(std::vector<int8_t>{1, -2, 0}, {3}, kI8);
  expect_close(run_op(*lib_, "dequantize_i8_axis", {xi, scales, zps}, {2, 3}, kF32),
               {-64.5, 4, 5, 63, -2, 1}, 0, 0, "dequantize_i8_axis");
}

TEST(ExtraElementwiseBuilders, RejectBadTypes) {
  arith::Var n("n"), k("k");
  EXPECT_THROW(bit_shift({kI32, {n}}, {kI32, {n}}, true), UserError);
  EXPECT_THROW(bit_shift({kU8, {n}}, {kU32, {n}}, true), UserError);
  EXPECT_THROW(is_inf({kI32, {n}}), UserError);
  EXPECT_THROW(is_nan({kI64, {n}}), UserError);
  EXPECT_THROW(shrink({kBool, {n}}, 0.5, 0), UserError);
  EXPECT_THROW(quantize_linear({kF32, {n}}, {kF32, {}}, TensorType{kI32, {}}), UserError);
  EXPECT_THROW(quantize_linear({kF32, {n, k}}, {kF32, {k}}, TensorType{kU8, {k}}, 0), UserError);
  EXPECT_THROW(dequantize_linear({kF32, {n}}, {kF32, {}}, {}), UserError);
  EXPECT_THROW(dequantize_linear({kU8, {n}}, {kF32, {}}, TensorType{kI8, {}}), UserError);
}

}  // namespace
}  // namespace dynvm::ops::testing
