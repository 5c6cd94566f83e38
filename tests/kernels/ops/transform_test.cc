// Data-movement ops compiled for the host and run through the runtime's loader: transpose,
// concat, split, slice, pad, tile and expand on f32, i64 and bool, each with symbolic
// shapes (one kernel called at several sizes, vector tails included) and static ones.
// References are plain index loops written here, independent of the ops' arith: they
// walk the output, work out by hand which input element (or pad value) lands there, and
// the comparison is exact. The TIR interpreter checks that no read (select is eager) leaves
// its input. Bad attributes must be one clear UserError.
#include "kernels/ops/transform.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "kernels/arith/analyzer.h"
#include "kernels/tir/printer.h"
#include "tests/kernels/ops/op_test_util.h"
#include "tests/kernels/support/tir_eval.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

constexpr int64_t kMaxI64 = std::numeric_limits<int64_t>::max();
constexpr int64_t kMinI64 = std::numeric_limits<int64_t>::min();

// Random values that tell elements apart: floats in [-1, 1), integers in [-1000, 1000].
vm::Tensor input(const vm::Shape& shape, vm::DType dtype, std::mt19937& rng) {
  return random_tensor(shape, dtype, rng, dtype == kF32 ? -1 : -1000, dtype == kF32 ? 1 : 1000);
}

// Runs `symbol` on `inputs` and poisoned outputs of `out_shapes`; returns the outputs.
std::vector<vm::Tensor> run_outputs(const OpLibrary& lib, const std::string& symbol,
                                    std::vector<vm::Tensor> inputs,
                                    const std::vector<vm::Shape>& out_shapes, vm::DType dtype) {
  std::vector<vm::Tensor> outs;
  for (const vm::Shape& s : out_shapes) {
    outs.push_back(poisoned(s, dtype));
    inputs.push_back(outs.back());
  }
  OpResult r = lib.run(symbol, inputs);
  EXPECT_TRUE(r.ok()) << symbol << " failed (" << r.status << "): " << r.error;
  return outs;
}

// The output element at each output position, given by `source`: the flat input index to
// copy (of input `which`), as a function of the output coordinates.
struct Source {
  size_t which = 0;
  int64_t flat = -1;  // -1: the pad value
};
std::vector<double> gather(const std::vector<vm::Tensor>& ins, const vm::Shape& out_shape,
                           const std::function<Source(const std::vector<int64_t>&)>& source,
                           double fill = 0) {
  std::vector<double> want;
  for (int64_t i = 0; i < numel(out_shape); ++i) {
    Source s = source(unravel(i, out_shape));
    want.push_back(s.flat < 0 ? fill : at(ins[s.which], s.flat));
  }
  return want;
}

void check_one(const OpLibrary& lib, const std::string& symbol, const std::vector<vm::Tensor>& ins,
               const vm::Shape& out_shape, const std::vector<double>& want) {
  vm::Tensor y = run_outputs(lib, symbol, ins, {out_shape}, ins[0].dtype())[0];
  std::string what = symbol + " " + shape_name(ins[0].shape()) + " -> " + shape_name(out_shape);
  EXPECT_EQ(y.shape(), out_shape) << what;
  expect_close(y, want, 0, 0, what);
}

// ---- transpose

std::vector<double> transpose_ref(const vm::Tensor& x, const std::vector<size_t>& perm) {
  vm::Shape out;
  for (size_t p : perm) out.push_back(x.shape()[p]);
  return gather({x}, out, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> idx(perm.size());
    for (size_t k = 0; k < perm.size(); ++k) idx[perm[k]] = o[k];
    return Source{0, ravel(idx, x.shape())};
  });
}

void check_transpose(const OpLibrary& lib, const std::string& symbol, const vm::Shape& shape,
                     vm::DType dtype, const std::vector<size_t>& perm, std::mt19937& rng) {
  vm::Tensor x = input(shape, dtype, rng);
  vm::Shape out;
  for (size_t p : perm) out.push_back(shape[p]);
  check_one(lib, symbol, {x}, out, transpose_ref(x, perm));
}

class Transpose : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var a("a"), b("b"), c("c");
    lib_ = new OpLibrary(OpLibrary::build({
        {"sym_f32", transpose({kF32, {a, b, c}}, {2, 0, 1})},
        {"sym_vw16", transpose({kF32, {a, b, c}}, {2, 0, 1}), {{"vector_width", 16}}},
        {"sym_neg_bool", transpose({kBool, {a, b}}, {-1, 0})},
        {"reverse_i64", transpose({kI64, dims({3, 7, 17})})},
        {"nchw_nhwc_f32", transpose({kF32, dims({2, 3, 5, 129})}, {0, 2, 3, 1})},
    }));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Transpose::lib_ = nullptr;

TEST_F(Transpose, PermutesSymbolicAndStaticShapes) {
  std::mt19937 rng(1);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 1}, {3, 7, 17}, {2, 1, 129}, {5, 9, 3}}) {
    check_transpose(*lib_, "sym_f32", s, kF32, {2, 0, 1}, rng);
    check_transpose(*lib_, "sym_vw16", s, kF32, {2, 0, 1}, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1}, {3, 17}, {129, 7}, {16, 9}}) {
    check_transpose(*lib_, "sym_neg_bool", s, kBool, {1, 0}, rng);
  }
  check_transpose(*lib_, "reverse_i64", {3, 7, 17}, kI64, {2, 1, 0}, rng);
  check_transpose(*lib_, "nchw_nhwc_f32", {2, 3, 5, 129}, kF32, {0, 2, 3, 1}, rng);
}

// ---- concat

class Concat : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), a("a"), b("b"), c("c"), n("n");
    lib_ = new OpLibrary(OpLibrary::build({
        {"last_sym_f32", concat({{kF32, {m, a}}, {kF32, {m, b}}, {kF32, {m, c}}}, -1)},
        {"last_sym_vw4",
         concat({{kF32, {m, a}}, {kF32, {m, b}}, {kF32, {m, c}}}, 1),
         {{"vector_width", 4}, {"parallel", 0}}},
        {"first_static_i64",
         concat({{kI64, dims({1, 5})}, {kI64, dims({3, 5})}, {kI64, dims({7, 5})}}, -2)},
        {"middle_bool", concat({{kBool, {m, n, 3}}, {kBool, {m, 1, 3}}}, 1)},
        {"static_empty_f32",
         concat({{kF32, dims({3, 0})}, {kF32, dims({3, 4})}, {kF32, dims({3, 0})}}, 1)},
    }));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Concat::lib_ = nullptr;

void check_concat(const OpLibrary& lib, const std::string& symbol,
                  const std::vector<vm::Shape>& shapes, size_t axis, vm::DType dtype,
                  std::mt19937& rng) {
  std::vector<vm::Tensor> ins;
  vm::Shape out = shapes[0];
  out[axis] = 0;
  for (const vm::Shape& s : shapes) {
    ins.push_back(input(s, dtype, rng));
    out[axis] += s[axis];
  }
  std::vector<double> want = gather(ins, out, [&](std::vector<int64_t> o) {
    size_t k = 0;
    while (o[axis] >= shapes[k][axis]) o[axis] -= shapes[k++][axis];
    return Source{k, ravel(o, shapes[k])};
  });
  vm::Tensor y = run_outputs(lib, symbol, ins, {out}, dtype)[0];
  expect_close(y, want, 0, 0, symbol + " -> " + shape_name(out));
}

TEST_F(Concat, ThreeInputsOfDifferentExtents) {
  std::mt19937 rng(2);
  const std::vector<std::vector<int64_t>> sizes = {
      {1, 1, 1, 1}, {3, 1, 7, 17}, {2, 17, 3, 8}, {4, 16, 129, 1}, {7, 9, 15, 5}};
  for (const auto& s : sizes) {
    std::vector<vm::Shape> shapes = {{s[0], s[1]}, {s[0], s[2]}, {s[0], s[3]}};
    check_concat(*lib_, "last_sym_f32", shapes, 1, kF32, rng);
    check_concat(*lib_, "last_sym_vw4", shapes, 1, kF32, rng);
  }
  check_concat(*lib_, "first_static_i64", {{1, 5}, {3, 5}, {7, 5}}, 0, kI64, rng);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 2}}) {
    check_concat(*lib_, "middle_bool", {{m, n, 3}, {m, 1, 3}}, 1, kBool, rng);
  }
  check_concat(*lib_, "static_empty_f32", {{3, 0}, {3, 4}, {3, 0}}, 1, kF32, rng);
}

// ---- split

class Split : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n");
    lib_ = new OpLibrary(OpLibrary::build({
        {"last_sym_f32", split({kF32, {m, n}}, -1, {3, n - 10, 7})},
        {"double_sym_f32", split({kF32, {m, n * 2}}, 1, {n, n})},
        {"rows_static_i64", split({kI64, dims({17, 5})}, 0, {1, 0, 3, 13})},
        {"rows_sym_bool", split({kBool, {m, n}}, -2, {2, m - 2})},
    }));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Split::lib_ = nullptr;

void check_split(const OpLibrary& lib, const std::string& symbol, const vm::Shape& shape,
                 size_t axis, const std::vector<int64_t>& sizes, vm::DType dtype,
                 std::mt19937& rng) {
  vm::Tensor x = input(shape, dtype, rng);
  std::vector<vm::Shape> outs;
  for (int64_t s : sizes) {
    outs.push_back(shape);
    outs.back()[axis] = s;
  }
  std::vector<vm::Tensor> ys = run_outputs(lib, symbol, {x}, outs, dtype);
  int64_t offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<double> want = gather({x}, outs[k], [&](std::vector<int64_t> o) {
      o[axis] += offset;
      return Source{0, ravel(o, shape)};
    });
    expect_close(ys[k], want, 0, 0,
                 symbol + " " + shape_name(shape) + " part " + std::to_string(k));
    offset += sizes[k];
  }
}

TEST_F(Split, UnequalPartsAlongAnyAxis) {
  std::mt19937 rng(3);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 10}, {3, 17}, {2, 139}}) {
    check_split(*lib_, "last_sym_f32", {m, n}, 1, {3, n - 10, 7}, kF32, rng);
  }
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {5, 129}}) {
    check_split(*lib_, "double_sym_f32", {m, 2 * n}, 1, {n, n}, kF32, rng);
  }
  check_split(*lib_, "rows_static_i64", {17, 5}, 0, {1, 0, 3, 13}, kI64, rng);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{2, 1}, {3, 17}, {9, 33}}) {
    check_split(*lib_, "rows_sym_bool", {m, n}, 0, {2, m - 2}, kBool, rng);
  }
}

// ---- slice

// The input positions a slice of one dim of extent d visits, by ONNX's rule as onnxruntime
// implements it: a negative bound counts from the end, then clamps into [0, d] when stepping
// forward, [0, d-1] (start) and [-1, d-1] (end) when stepping backward. (numpy differs in one
// corner: a backward start before the beginning gives nothing there, element 0 here.)
std::vector<int64_t> slice_positions(int64_t d, int64_t start, int64_t end, int64_t step) {
  auto bound = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -d - 1 ? -d - 1 : v;  // keeps v + d from overflowing
    if (v < 0) v += d;
    return std::min(std::max(v, lo), hi);  // an empty dim gives hi = -1 < lo = 0 backward
  };
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t p = bound(start, 0, d); p < bound(end, 0, d); p += step) out.push_back(p);
  } else {
    for (int64_t p = bound(start, 0, d - 1); p > bound(end, -1, d - 1); p += step) {
      out.push_back(p);
    }
  }
  return out;
}

struct SliceCase {
  std::string symbol;
  std::vector<int64_t> starts, ends, axes, steps;
};

void check_slice(const OpLibrary& lib, const SliceCase& c, const vm::Shape& shape, vm::DType dtype,
                 std::mt19937& rng) {
  vm::Tensor x = input(shape, dtype, rng);
  std::vector<std::vector<int64_t>> positions(shape.size());
  for (size_t k = 0; k < shape.size(); ++k) {
    for (int64_t p = 0; p < shape[k]; ++p) positions[k].push_back(p);
  }
  for (size_t j = 0; j < c.starts.size(); ++j) {
    int64_t a = c.axes.empty() ? static_cast<int64_t>(j) : c.axes[j];
    if (a < 0) a += static_cast<int64_t>(shape.size());
    positions[static_cast<size_t>(a)] = slice_positions(
        shape[static_cast<size_t>(a)], c.starts[j], c.ends[j], c.steps.empty() ? 1 : c.steps[j]);
  }
  vm::Shape out;
  for (const auto& p : positions) out.push_back(static_cast<int64_t>(p.size()));
  check_one(lib, c.symbol, {x}, out, gather({x}, out, [&](const std::vector<int64_t>& o) {
              std::vector<int64_t> idx;
              for (size_t k = 0; k < o.size(); ++k) idx.push_back(positions[k][o[k]]);
              return Source{0, ravel(idx, shape)};
            }));
}

std::vector<SliceCase> symbolic_slices() {
  return {
      {"inner", {1}, {-1}, {-1}, {}},
      {"reverse_rows", {-2, kMaxI64}, {kMinI64, 0}, {0, 1}, {-1, -3}},
      {"step2_past_end", {1}, {1000}, {1}, {2}},
      {"empty_range", {5}, {3}, {-1}, {}},
      {"negative_start", {-3, -100}, {kMaxI64, -1}, {-1, 0}, {1, 4}},
  };
}

class Slice : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n");
    std::vector<OpToBuild> ops;
    for (const SliceCase& c : symbolic_slices()) {
      ops.push_back({c.symbol, slice({kF32, {m, n}}, c.starts, c.ends, c.axes, c.steps)});
    }
    ops.push_back({"step2_i64", slice({kI64, {n}}, {1}, {1000}, {}, {2})});
    ops.push_back({"static_3d_bool", slice({kBool, dims({7, 17, 3})}, {-100, 2, 0}, {100, 17, -1},
                                           {0, 1, 2}, {3, 5, 1})});
    ops.push_back({"static_reverse_f32", slice({kF32, dims({129})}, {-1}, {-130}, {}, {-1})});
    // Entries known only at run time (nullopt), the output's dims bound from its argument.
    const std::optional<int64_t> unknown;
    arith::Var o0("o0"), o1("o1");
    ops.push_back(
        {"crop_to", slice_to({kF32, {m, n}}, {0, 0}, {unknown, unknown}, {0, 1}, {}, {o0, o1})});
    ops.push_back({"last_k", slice_to({kF32, {m, n}}, {unknown}, {kMaxI64}, {1}, {1}, {m, o1})});
    ops.push_back(
        {"reverse_from", slice_to({kF32, {m, n}}, {unknown}, {kMinI64}, {-1}, {-1}, {m, o1})});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Slice::lib_ = nullptr;

// slice_to: the kernels were built without the unknown entries' values; each case's
// values give the reference (and, through it, the output's shape the kernel is given).
TEST_F(Slice, EntriesKnownOnlyAtRunTimeComeFromTheOutputShape) {
  std::mt19937 rng(6);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1}, {3, 7}, {7, 17}, {17, 129}, {2, 0}}) {
    const int64_t m = s[0], n = s[1];
    check_slice(*lib_, {"crop_to", {0, 0}, {m - 1, n / 2}, {0, 1}, {}}, s, kF32, rng);
    check_slice(*lib_, {"crop_to", {0, 0}, {m, kMaxI64}, {0, 1}, {}}, s, kF32, rng);
    for (int64_t start : {n - std::min<int64_t>(n, 3), int64_t{-2}, int64_t{0}}) {
      check_slice(*lib_, {"last_k", {start}, {kMaxI64}, {1}, {1}}, s, kF32, rng);
    }
    for (int64_t start : {n / 2, n - 1, int64_t{-1}, kMaxI64}) {
      check_slice(*lib_, {"reverse_from", {start}, {kMinI64}, {-1}, {-1}}, s, kF32, rng);
    }
  }
}

TEST_F(Slice, ClampsNegativeAndOutOfRangeBoundsOnSymbolicShapes) {
  std::mt19937 rng(4);
  const std::vector<vm::Shape> shapes = {{1, 1}, {1, 3}, {3, 7}, {7, 17}, {17, 129}, {2, 0}};
  for (const SliceCase& c : symbolic_slices()) {
    for (const vm::Shape& s : shapes) check_slice(*lib_, c, s, kF32, rng);
  }
  for (int64_t n : {0, 1, 2, 3, 7, 17, 129, 1000, 1001}) {
    check_slice(*lib_, {"step2_i64", {1}, {1000}, {}, {2}}, {n}, kI64, rng);
  }
}

TEST_F(Slice, StaticShapesWithStepsAndReversal) {
  std::mt19937 rng(5);
  check_slice(*lib_, {"static_3d_bool", {-100, 2, 0}, {100, 17, -1}, {0, 1, 2}, {3, 5, 1}},
              {7, 17, 3}, kBool, rng);
  check_slice(*lib_, {"static_reverse_f32", {-1}, {-130}, {}, {-1}}, {129}, kF32, rng);
}

// ---- pad

struct PadCase {
  std::string symbol;
  std::vector<int64_t> pads;
  PadMode mode;
  double value = 0;
};

// The input position along one dim of extent d for output position o (-1: the pad value),
// the way numpy.pad defines the modes.
int64_t pad_position(int64_t o, int64_t begin, int64_t d, PadMode mode) {
  int64_t p = o - begin;
  if (p >= 0 && p < d) return p;
  switch (mode) {
    case PadMode::kConstant:
      return -1;
    case PadMode::kEdge:
      return p < 0 ? 0 : d - 1;
    case PadMode::kReflect:
      return p < 0 ? -p : 2 * (d - 1) - p;
  }
  return -1;
}

// `pads_input`: the kernel reads the pads from its second argument (pad_at_run_time).
void check_pad(const OpLibrary& lib, const PadCase& c, const vm::Shape& shape, vm::DType dtype,
               std::mt19937& rng, bool pads_input = false) {
  vm::Tensor x = input(shape, dtype, rng);
  std::vector<vm::Tensor> ins{x};
  if (pads_input) {
    vm::Tensor p = vm::Tensor::empty({static_cast<int64_t>(c.pads.size())}, kI64);
    for (size_t k = 0; k < c.pads.size(); ++k) p.data_as<int64_t>()[k] = c.pads[k];
    ins.push_back(p);
  }
  size_t rank = shape.size();
  vm::Shape out;
  for (size_t k = 0; k < rank; ++k) out.push_back(shape[k] + c.pads[k] + c.pads[k + rank]);
  double fill = dtype == kBool ? (c.value != 0) : c.value;
  check_one(lib, c.symbol, ins, out,
            gather(
                {x}, out,
                [&](const std::vector<int64_t>& o) {
                  std::vector<int64_t> idx;
                  for (size_t k = 0; k < rank; ++k) {
                    idx.push_back(pad_position(o[k], c.pads[k], shape[k], c.mode));
                    if (idx.back() < 0) return Source{};
                  }
                  return Source{0, ravel(idx, shape)};
                },
                fill));
}

std::vector<PadCase> symbolic_pads() {
  return {
      {"constant_sym", {1, 2, 3, 0}, PadMode::kConstant, 1.5},
      {"reflect_sym", {2, 1, 1, 3}, PadMode::kReflect},
      {"edge_sym", {0, 5, 2, 0}, PadMode::kEdge},
      {"crop_sym", {-1, 2, 0, -1}, PadMode::kConstant, -2},
  };
}

std::vector<std::pair<PadCase, vm::Shape>> static_pads() {
  return {
      {{"constant_bool", {1, 0, 0, 2}, PadMode::kConstant, 1}, {3, 7}},
      {{"reflect_static", {6, 0, 0, 16}, PadMode::kReflect}, {7, 17}},
      {{"crop_static", {-2, 3, 1, -4}, PadMode::kConstant}, {7, 17}},
      {{"edge_3d_i64", {2, 0, 1, 1, 2, 0}, PadMode::kEdge}, {1, 3, 5}},
      {{"constant_empty", {1, 2, 0, 1}, PadMode::kConstant, 4}, {2, 0}},
  };
}

// The pads each kernel reads at run time, and which of them it knew when it was compiled.
std::vector<std::pair<PadCase, std::vector<std::optional<int64_t>>>> run_time_pads() {
  const std::optional<int64_t> unknown;
  return {
      {{"rt_constant", {2, 1, 0, 3}, PadMode::kConstant}, {}},
      {{"rt_constant_known_rows", {0, 1, 0, 3}, PadMode::kConstant}, {0, unknown, 0, unknown}},
      {{"rt_reflect_known_rows", {1, 2, 2, 0}, PadMode::kReflect}, {1, unknown, 2, unknown}},
      {{"rt_edge_known_begin", {3, 0, 1, 2}, PadMode::kEdge}, {3, 0, unknown, unknown}},
  };
}

vm::DType static_pad_dtype(const std::string& symbol) {
  if (symbol == "constant_bool") return kBool;
  return symbol == "edge_3d_i64" ? kI64 : kF32;
}

class Pad : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n");
    std::vector<OpToBuild> ops;
    for (const PadCase& c : symbolic_pads()) {
      ops.push_back({c.symbol, pad({kF32, {m, n}}, c.pads, c.mode, c.value)});
    }
    ops.push_back({"edge_sym_i64", pad({kI64, {m, n}}, {0, 5, 2, 0}, PadMode::kEdge)});
    // Pads read at run time, some known at compile time (pad_at_run_time's `known`).
    const std::vector<arith::Expr> out{arith::Var("o0"), arith::Var("o1")};
    const TensorType pads{kI64, dims({4})};
    for (const auto& [c, known] : run_time_pads()) {
      ops.push_back({c.symbol, pad_at_run_time({kF32, {m, n}}, pads, nullptr, c.mode, out, known)});
    }
    for (const auto& [c, shape] : static_pads()) {
      ops.push_back(
          {c.symbol, pad({static_pad_dtype(c.symbol), dims(shape)}, c.pads, c.mode, c.value)});
    }
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Pad::lib_ = nullptr;

TEST_F(Pad, ConstantReflectEdgeAndCropOnSymbolicShapes) {
  std::mt19937 rng(6);
  // Reflect needs dims larger than its pads (3 here).
  const std::vector<vm::Shape> shapes = {{4, 4}, {5, 7}, {17, 9}, {3, 129}, {4, 16}};
  for (const PadCase& c : symbolic_pads()) {
    for (const vm::Shape& s : shapes) check_pad(*lib_, c, s, kF32, rng);
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1}, {3, 7}, {2, 129}}) {
    check_pad(*lib_, {"edge_sym_i64", {0, 5, 2, 0}, PadMode::kEdge}, s, kI64, rng);
    check_pad(*lib_, symbolic_pads()[0], s, kF32, rng);
  }
}

// The pads a kernel reads at run time agree with numpy.pad's modes, whether it knew some of
// them when it was compiled (those axes take the constant form) or none.
TEST_F(Pad, PadsReadAtRunTimeWithSomeKnown) {
  std::mt19937 rng(8);
  for (const auto& [c, known] : run_time_pads()) {
    for (const vm::Shape& s : std::vector<vm::Shape>{{4, 4}, {5, 7}, {3, 129}, {17, 16}}) {
      check_pad(*lib_, c, s, kF32, rng, /*pads_input=*/true);
    }
  }
}

TEST_F(Pad, StaticShapesBoolAndEmptyInputs) {
  std::mt19937 rng(7);
  for (const auto& [c, shape] : static_pads()) {
    check_pad(*lib_, c, shape, static_pad_dtype(c.symbol), rng);
  }
}

// ---- tile and expand

class TileExpand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), k("k");
    lib_ = new OpLibrary(OpLibrary::build({
        {"tile_sym_f32", tile({kF32, {m, n}}, {2, 3})},
        {"tile_static_i64", tile({kI64, dims({3, 1, 7})}, {1, 4, 2})},
        {"tile_zero_bool", tile({kBool, dims({3, 5})}, {0, 2})},
        {"expand_sym_f32", expand({kF32, {m, 1}}, {k, m, n})},
        {"expand_static_i64", expand({kI64, dims({3, 1})}, dims({2, 1, 7}))},
        {"expand_bool", expand({kBool, dims({1})}, {n})},
        {"expand_scalar_f32", expand({kF32, {}}, {m, n})},
    }));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* TileExpand::lib_ = nullptr;

void check_tile(const OpLibrary& lib, const std::string& symbol, const vm::Shape& shape,
                const std::vector<int64_t>& repeats, vm::DType dtype, std::mt19937& rng) {
  vm::Tensor x = input(shape, dtype, rng);
  vm::Shape out;
  for (size_t k = 0; k < shape.size(); ++k) out.push_back(shape[k] * repeats[k]);
  check_one(lib, symbol, {x}, out, gather({x}, out, [&](std::vector<int64_t> o) {
              for (size_t k = 0; k < o.size(); ++k) o[k] %= shape[k];
              return Source{0, ravel(o, shape)};
            }));
}

void check_expand(const OpLibrary& lib, const std::string& symbol, const vm::Shape& shape,
                  const vm::Shape& out, vm::DType dtype, std::mt19937& rng) {
  vm::Tensor x = input(shape, dtype, rng);
  std::vector<double> want;
  for (int64_t i = 0; i < numel(out); ++i) want.push_back(at(x, broadcast_index(shape, out, i)));
  check_one(lib, symbol, {x}, out, want);
}

TEST_F(TileExpand, TileRepeatsEveryDim) {
  std::mt19937 rng(8);
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {2, 17}, {1, 129}}) {
    check_tile(*lib_, "tile_sym_f32", {m, n}, {2, 3}, kF32, rng);
  }
  check_tile(*lib_, "tile_static_i64", {3, 1, 7}, {1, 4, 2}, kI64, rng);
  check_tile(*lib_, "tile_zero_bool", {3, 5}, {0, 2}, kBool, rng);
}

TEST_F(TileExpand, ExpandBroadcastsBothWays) {
  std::mt19937 rng(9);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 1}, {2, 3, 7}, {3, 17, 129}}) {
    check_expand(*lib_, "expand_sym_f32", {s[1], 1}, s, kF32, rng);
  }
  check_expand(*lib_, "expand_static_i64", {3, 1}, {2, 3, 7}, kI64, rng);
  for (int64_t n : {1, 7, 17, 129}) check_expand(*lib_, "expand_bool", {1}, {n}, kBool, rng);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1}, {3, 17}}) {
    check_expand(*lib_, "expand_scalar_f32", {}, s, kF32, rng);
  }
}

// ---- no read outside an input

// Lowers op and runs it in the TIR reference interpreter, which bounds-checks every access
// and evaluates both sides of a select, as the generated code does: a clamp missing behind
// a select fails here even where the native kernel reads a neighbouring element unnoticed.
void expect_reads_in_bounds(const OpInstance& op, const std::vector<vm::Shape>& in_shapes,
                            const std::vector<vm::Shape>& out_shapes, std::mt19937& rng) {
  tir::LoweredFunc f = lower_op(op, {}, op.name);
  std::vector<vm::Tensor> args;
  for (const vm::Shape& s : in_shapes) args.push_back(input(s, kF32, rng));
  for (const vm::Shape& s : out_shapes) args.push_back(poisoned(s, kF32));
  std::string what = op.name + " " + shape_name(in_shapes[0]);
  try {
    tir::testing::evaluate(f, args);
  } catch (const tir::testing::EvalError& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return;
  }
  for (size_t k = in_shapes.size(); k < args.size(); ++k) {
    for (int64_t i = 0; i < args[k].numel(); ++i) {
      ASSERT_FALSE(std::isnan(at(args[k], i))) << what << ": element " << i << " unwritten";
    }
  }
}

TEST(TransformBounds, ClampedReadsStayInsideEveryInput) {
  std::mt19937 rng(10);
  arith::Var m("m"), n("n"), a("a"), b("b"), c("c");
  OpInstance last = concat({{kF32, {m, a}}, {kF32, {m, b}}, {kF32, {m, c}}}, -1);
  for (const auto& s : std::vector<std::vector<int64_t>>{{2, 1, 7, 3}, {1, 17, 1, 9}}) {
    expect_reads_in_bounds(last, {{s[0], s[1]}, {s[0], s[2]}, {s[0], s[3]}},
                           {{s[0], s[1] + s[2] + s[3]}}, rng);
  }
  OpInstance rows = concat({{kF32, {a, n}}, {kF32, {b, n}}}, 0);
  expect_reads_in_bounds(rows, {{1, 9}, {3, 9}}, {{4, 9}}, rng);
  for (const PadCase& p : symbolic_pads()) {
    OpInstance op = pad({kF32, {m, n}}, p.pads, p.mode, p.value);
    for (const vm::Shape& s : std::vector<vm::Shape>{{4, 4}, {5, 19}}) {
      expect_reads_in_bounds(op, {s},
                             {{s[0] + p.pads[0] + p.pads[2], s[1] + p.pads[1] + p.pads[3]}}, rng);
    }
  }
  OpInstance rev = slice({kF32, {m, n}}, {-2, kMaxI64}, {kMinI64, 0}, {0, 1}, {-1, -3});
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1}, {3, 10}, {4, 0}}) {
    auto rows_out = static_cast<int64_t>(slice_positions(s[0], -2, kMinI64, -1).size());
    auto cols_out = static_cast<int64_t>(slice_positions(s[1], kMaxI64, 0, -3).size());
    expect_reads_in_bounds(rev, {s}, {{rows_out, cols_out}}, rng);
  }
  expect_reads_in_bounds(tile({kF32, {m, n}}, {2, 3}), {{3, 7}}, {{6, 21}}, rng);
  expect_reads_in_bounds(split({kF32, {m, n}}, -1, {3, n - 10, 7}), {{2, 19}},
                         {{2, 3}, {2, 9}, {2, 7}}, rng);
}

// ---- bad attributes

TEST(TransformBuilders, RejectBadAttributesWithOneClearMessage) {
  arith::Var m("m"), n("n"), k("k");
  TensorType x{kF32, {m, n}};
  EXPECT_USER_ERROR(transpose(x, {0, 0}), "not a permutation");
  EXPECT_USER_ERROR(transpose(x, {0, 2}), "out of range");
  EXPECT_USER_ERROR(transpose(x, {0}), "perm has 1 entries");
  EXPECT_USER_ERROR(concat({x, x}, 2), "axis 2 is out of range for rank 2");
  // Two unrelated symbols off the axis are for the run time to compare: the kernel takes
  // input 0's dims for every input, and its argument check refuses a call where they differ.
  EXPECT_NO_THROW(concat({x, {kF32, {k, n}}}, 1));
  EXPECT_USER_ERROR(concat({{kF32, dims({3, 4})}, {kF32, dims({5, 5})}}, 0), "does not match");
  EXPECT_USER_ERROR(concat({x, {kI64, {m, n}}}, 0), "input 1 is i64");
  EXPECT_USER_ERROR(concat({x, {kF32, {m}}}, 0), "rank");
  EXPECT_USER_ERROR(concat({}, 0), "at least one input");
  EXPECT_USER_ERROR(split(x, 1, {3, n}), "add up to");
  EXPECT_USER_ERROR(split({kF32, dims({4})}, 0, {5, -1}), "< 0");
  EXPECT_USER_ERROR(split(x, -3, {m}), "out of range");
  EXPECT_USER_ERROR(slice(x, {0}, {1}, {1}, {0}), "step 0");
  EXPECT_USER_ERROR(slice(x, {0, 0}, {1, 1}, {1, -1}), "sliced twice");
  EXPECT_USER_ERROR(slice(x, {0}, {1}, {2}), "out of range");
  EXPECT_USER_ERROR(slice(x, {0}, {1, 2}), "ends");
  EXPECT_USER_ERROR(pad(x, {1, 1}), "2 pads");
  EXPECT_USER_ERROR(pad({kF32, dims({3})}, {3, 0}, PadMode::kReflect), "smaller than dim");
  EXPECT_USER_ERROR(pad({kF32, dims({3})}, {-2, -2}), "crop more");
  EXPECT_USER_ERROR(pad({kI64, dims({3})}, {1, 1}, PadMode::kConstant, NAN), "not representable");
  EXPECT_USER_ERROR(tile(x, {1, -1}), "< 0");
  EXPECT_USER_ERROR(tile(x, {2}), "1 repeats");
  EXPECT_USER_ERROR(expand({kF32, dims({3})}, dims({4})), "cannot broadcast");
}

TEST(TransformBuilders, OutputShapesAreExpressionsOfTheInputDims) {
  arith::Var m("m"), n("n");
  OpInstance c = concat({{kF32, {m, n}}, {kF32, {m, 3}}, {kF32, {m, n}}}, 1);
  arith::Analyzer an;
  EXPECT_TRUE(an.provably_equal(c.outputs[0]->shape()[1], n * 2 + 3));
  OpInstance s = split({kF32, {m, n * 2}}, 1, {n, n});
  ASSERT_EQ(s.outputs.size(), 2u);
  EXPECT_TRUE(arith::structural_equal(s.outputs[1]->shape()[1], n));
  OpInstance st = slice({kF32, dims({10})}, {-1}, {kMinI64}, {}, {-3});
  EXPECT_EQ(st.outputs[0]->shape()[0].int_value(), 4);  // 9, 6, 3, 0
  OpInstance huge = slice({kF32, dims({10})}, {2}, {kMaxI64}, {}, {kMaxI64});
  EXPECT_EQ(huge.outputs[0]->shape()[0].int_value(), 1);  // 2 only
  OpInstance back = slice({kF32, dims({10})}, {kMaxI64}, {kMinI64}, {}, {kMinI64});
  EXPECT_EQ(back.outputs[0]->shape()[0].int_value(), 1);  // 9 only
  OpInstance p = pad({kF32, {m, n}}, {1, 0, 2, 0});
  EXPECT_TRUE(an.provably_equal(p.outputs[0]->shape()[0], m + 3));
  EXPECT_EQ(knob(p, {}, "vector_width"), 16);
}

// ---- trilu

// Element (.., r, c) is kept when c - r >= k (upper) or <= k (lower), else 0.
std::vector<double> trilu_ref(const vm::Tensor& x, bool upper, int64_t k) {
  std::vector<double> want;
  const vm::Shape& s = x.shape();
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = unravel(i, s);
    const int64_t d = idx[idx.size() - 1] - idx[idx.size() - 2];
    want.push_back((upper ? d >= k : d <= k) ? at(x, i) : 0.0);
  }
  return want;
}

TEST(Trilu, ConstantAndRunTimeDiagonalsOnSymbolicShapes) {
  arith::Var b("b"), r("r"), c("c");
  OpLibrary lib = OpLibrary::build({
      {"upper_k1_f32", trilu({kF32, {b, r, c}}, true, 1)},
      {"lower_k0_i64", trilu({kI64, {r, c}}, false)},
      {"upper_k_input_f32",
       [&] {
         TensorType k{kI64, {}};
         return trilu({kF32, {r, c}}, true, 0, &k);
       }()},
  });
  std::mt19937 rng(3);
  for (const vm::Shape& s : std::vector<vm::Shape>{{2, 3, 4}, {1, 5, 2}, {3, 1, 17}, {1, 0, 3}}) {
    vm::Tensor x = input(s, kF32, rng);
    check_one(lib, "upper_k1_f32", {x}, s, trilu_ref(x, true, 1));
  }
  for (const vm::Shape& s : std::vector<vm::Shape>{{4, 4}, {3, 9}, {9, 3}}) {
    vm::Tensor x = input(s, kI64, rng);
    check_one(lib, "lower_k0_i64", {x}, s, trilu_ref(x, false, 0));
  }
  for (int64_t k : {-7, -1, 0, 2, 30}) {
    vm::Tensor x = input({5, 6}, kF32, rng);
    vm::Tensor kt = vm::Tensor::from_vector(std::vector<int64_t>{k}, {}, kI64);
    vm::Tensor y = run_outputs(lib, "upper_k_input_f32", {x, kt}, {{5, 6}}, kF32)[0];
    expect_close(y, trilu_ref(x, true, k), 0, 0, "k = " + std::to_string(k));
  }
  EXPECT_USER_ERROR(trilu({kF32, {r}}, true), "trilu: the input has rank 1");
}

// The kept-or-zero test reads the row and the column: the kernel runs row by row, the
// column vectorized, not over a flat index that each element would divide back apart.
TEST(Trilu, RunsRowByRowWithoutDividingAFlatIndex) {
  arith::Var r("r"), c("c");
  const std::string lowered = tir::to_string(lower_op(trilu({kF32, {r, c}}, true, 0), {}, "t"));
  EXPECT_EQ(lowered.find("floormod"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("ramp("), std::string::npos) << lowered;  // vectors of columns
}

}  // namespace
}  // namespace dynvm::ops::testing
