// Gather and GatherElements compiled for the host and run through the runtime's loader on
// f32, i64 and bool data with int32 and int64 indices: symbolic shapes (one kernel called
// at several sizes) and static ones, axis 0, a middle axis and the last, scalar indices.
// Indices include negative ones (which wrap) and out-of-range ones (which clamp: see
// gather.h). References are plain index loops; comparisons are exact. Also GatherND (with
// batch dims), ReverseSequence, DepthToSpace / SpaceToDepth (against ONNX's reshape-transpose
// definition) and EyeLike.
#include "kernels/ops/gather.h"

#include "kernels/ops/eye_like.h"
#include "kernels/ops/space_depth.h"
#include "tests/kernels/ops/op_test_util.h"
#include "tests/support/expect_user_error.h"

namespace dynvm::ops::testing {
namespace {

// Mostly valid indices in [-n, n), with some beyond either end (wrapping cannot fix them).
vm::Tensor indices(const vm::Shape& shape, int64_t n, vm::DType dtype, std::mt19937& rng) {
  vm::Tensor t =
      random_tensor(shape, kI64, rng, static_cast<double>(-n - 3), static_cast<double>(n + 2));
  if (dtype == kI64) return t;
  vm::Tensor t32 = vm::Tensor::empty(shape, kI32);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t32.data_as<int32_t>()[i] = static_cast<int32_t>(t.data_as<int64_t>()[i]);
  }
  return t32;
}

// ONNX's wrap of a negative index, then our clamp (gather.h), written out.
int64_t element(double raw, int64_t n) {
  auto v = static_cast<int64_t>(raw);
  if (v < 0) v += n;
  if (v < 0) return 0;
  return v >= n ? n - 1 : v;
}

vm::Shape gather_shape(const vm::Shape& data, const vm::Shape& idx, size_t axis) {
  vm::Shape out(data.begin(), data.begin() + static_cast<int64_t>(axis));
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + static_cast<int64_t>(axis) + 1, data.end());
  return out;
}

std::vector<double> gather_reference(const vm::Tensor& data, const vm::Tensor& idx, size_t axis) {
  vm::Shape out_shape = gather_shape(data.shape(), idx.shape(), axis);
  size_t q = idx.shape().size();
  std::vector<double> out;
  for (int64_t o = 0; o < numel(out_shape); ++o) {
    std::vector<int64_t> oc = unravel(o, out_shape);
    std::vector<int64_t> ic(oc.begin() + static_cast<int64_t>(axis),
                            oc.begin() + static_cast<int64_t>(axis + q));
    std::vector<int64_t> dc(oc.begin(), oc.begin() + static_cast<int64_t>(axis));
    dc.push_back(element(at(idx, ravel(ic, idx.shape())), data.shape()[axis]));
    dc.insert(dc.end(), oc.begin() + static_cast<int64_t>(axis + q), oc.end());
    out.push_back(at(data, ravel(dc, data.shape())));
  }
  return out;
}

std::vector<double> gather_elements_reference(const vm::Tensor& data, const vm::Tensor& idx,
                                              size_t axis) {
  std::vector<double> out;
  for (int64_t o = 0; o < idx.numel(); ++o) {
    std::vector<int64_t> c = unravel(o, idx.shape());
    c[axis] = element(at(idx, o), data.shape()[axis]);
    out.push_back(at(data, ravel(c, data.shape())));
  }
  return out;
}

class Gather : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), k("k"), p("p"), q("q");
    std::vector<OpToBuild> ops;
    TensorType data3{kF32, {m, n, k}};
    ops.push_back({"gather_axis0", gather(data3, {kI64, {p, q}}, 0)});
    ops.push_back({"gather_axis1_i32", gather(data3, {kI32, {p}}, 1)});
    ops.push_back({"gather_last", gather(data3, {kI64, {p, q}}, -1)});
    ops.push_back({"gather_scalar_index", gather({kF32, {m, n}}, {kI64, {}}, 0)});
    ops.push_back({"gather_i64", gather({kI64, {m, n}}, {kI32, {p}}, 1)});
    ops.push_back({"gather_bool", gather({kBool, {m, n}}, {kI64, {p}}, 0)});
    ops.push_back({"gather_static", gather({kF32, dims({3, 17, 7})}, {kI64, dims({5})}, 1)});
    ops.push_back({"gather_elements_axis0", gather_elements({kF32, {m, n}}, {kI64, {p, n}}, 0)});
    ops.push_back(
        {"gather_elements_last_i64", gather_elements({kI64, {m, n, k}}, {kI32, {m, n, p}}, -1)});
    ops.push_back({"gather_elements_bool", gather_elements({kBool, {m, n}}, {kI64, {m, p}}, 1)});
    ops.push_back({"gather_elements_static_smaller",
                   gather_elements({kF32, dims({4, 7})}, {kI64, dims({5, 3})}, 0)});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* Gather::lib_ = nullptr;

void check_gather(const OpLibrary& lib, const std::string& symbol, vm::DType dtype,
                  const vm::Shape& data_shape, vm::DType index_dtype, const vm::Shape& index_shape,
                  size_t axis, std::mt19937& rng) {
  vm::Tensor data = random_tensor(data_shape, dtype, rng, -1000, 1000);
  vm::Tensor idx = indices(index_shape, data_shape[axis], index_dtype, rng);
  vm::Shape out_shape = gather_shape(data_shape, index_shape, axis);
  vm::Tensor y = run_op(lib, symbol, {data, idx}, out_shape, dtype);
  expect_close(y, gather_reference(data, idx, axis), 0, 0,
               symbol + " " + shape_name(data_shape) + " " + shape_name(index_shape));
}

TEST_F(Gather, AxisFirstMiddleAndLastOnSymbolicShapes) {
  std::mt19937 rng(31);
  const std::vector<vm::Shape> shapes = {{1, 1, 1}, {3, 7, 17}, {17, 3, 129}, {7, 1, 3}};
  const std::vector<vm::Shape> index_shapes = {{1, 1}, {3, 7}, {17, 1}};
  for (const vm::Shape& s : shapes) {
    for (const vm::Shape& is : index_shapes) {
      check_gather(*lib_, "gather_axis0", kF32, s, kI64, is, 0, rng);
      check_gather(*lib_, "gather_last", kF32, s, kI64, is, 2, rng);
      check_gather(*lib_, "gather_axis1_i32", kF32, s, kI32, {is[0] * is[1]}, 1, rng);
    }
  }
}

TEST_F(Gather, ScalarIndexIntegerAndBoolDataStaticShape) {
  std::mt19937 rng(32);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1}, {3, 7}, {129, 17}}) {
    check_gather(*lib_, "gather_scalar_index", kF32, s, kI64, {}, 0, rng);
    check_gather(*lib_, "gather_i64", kI64, s, kI32, {9}, 1, rng);
    check_gather(*lib_, "gather_bool", kBool, s, kI64, {1}, 0, rng);
    check_gather(*lib_, "gather_bool", kBool, s, kI64, {129}, 0, rng);
  }
  check_gather(*lib_, "gather_static", kF32, {3, 17, 7}, kI64, {5}, 1, rng);
}

TEST_F(Gather, NegativeIndicesWrapAndOutOfRangeOnesClamp) {
  vm::Tensor data = vm::Tensor::from_vector(std::vector<float>{10, 11, 12, 13}, {4, 1, 1}, kF32);
  vm::Tensor idx =
      vm::Tensor::from_vector(std::vector<int64_t>{-1, -4, -5, 4, 100, 2}, {6, 1}, kI64);
  vm::Tensor y = run_op(*lib_, "gather_axis0", {data, idx}, {6, 1, 1, 1}, kF32);
  expect_close(y, {13, 10, 10, 13, 13, 12}, 0, 0, "wrap and clamp");
}

void check_elements(const OpLibrary& lib, const std::string& symbol, vm::DType dtype,
                    const vm::Shape& data_shape, vm::DType index_dtype,
                    const vm::Shape& index_shape, size_t axis, std::mt19937& rng) {
  vm::Tensor data = random_tensor(data_shape, dtype, rng, -1000, 1000);
  vm::Tensor idx = indices(index_shape, data_shape[axis], index_dtype, rng);
  vm::Tensor y = run_op(lib, symbol, {data, idx}, index_shape, dtype);
  expect_close(y, gather_elements_reference(data, idx, axis), 0, 0,
               symbol + " " + shape_name(data_shape) + " " + shape_name(index_shape));
}

TEST_F(Gather, ElementsAlongFirstAndLastAxis) {
  std::mt19937 rng(33);
  for (auto [a, b] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 7}, {17, 129}}) {
    for (int64_t p : {1, 3, 17}) {
      check_elements(*lib_, "gather_elements_axis0", kF32, {a, b}, kI64, {p, b}, 0, rng);
      check_elements(*lib_, "gather_elements_last_i64", kI64, {a, b, 3}, kI32, {a, b, p}, 2, rng);
      check_elements(*lib_, "gather_elements_bool", kBool, {a, b}, kI64, {a, p}, 1, rng);
    }
  }
  check_elements(*lib_, "gather_elements_static_smaller", kF32, {4, 7}, kI64, {5, 3}, 0, rng);
}

TEST(GatherBuilders, RejectBadAttributes) {
  arith::Var m("m"), n("n"), p("p");
  EXPECT_USER_ERROR(gather({kF32, {m, n}}, {kI64, {p}}, 2), "axis 2 is out of range");
  EXPECT_USER_ERROR(gather({kF32, {m, n}}, {kI64, {p}}, -3), "out of range");
  EXPECT_USER_ERROR(gather({kF32, {m, n}}, {kF32, {p}}, 0), "int32 or int64");
  EXPECT_USER_ERROR(gather({kF32, {}}, {kI64, {p}}, 0), "rank >= 1");
  EXPECT_USER_ERROR(gather({kF32, dims({0, 3})}, {kI64, {p}}, 0), "empty");
  EXPECT_USER_ERROR(gather_elements({kF32, {m, n}}, {kI64, {p}}, 0), "rank");
  EXPECT_USER_ERROR(gather_elements({kF32, {m, n}}, {kI64, {p, p}}, 0), "dim 1");
  EXPECT_USER_ERROR(gather_elements({kF32, dims({4, 3})}, {kI64, dims({2, 5})}, 0), "dim 1");
}

// GatherND written out: batch coordinates, then k loaded indices (negative ones wrap).
std::vector<double> gather_nd_reference(const vm::Tensor& data, const vm::Tensor& idx,
                                        size_t batch_dims) {
  const vm::Shape& ds = data.shape();
  const vm::Shape& is = idx.shape();
  const auto k = static_cast<size_t>(is.back());
  vm::Shape out_shape(is.begin(), is.end() - 1);
  out_shape.insert(out_shape.end(), ds.begin() + static_cast<int64_t>(batch_dims + k), ds.end());
  std::vector<double> out;
  for (int64_t o = 0; o < numel(out_shape); ++o) {
    std::vector<int64_t> oc = unravel(o, out_shape);
    std::vector<int64_t> ic(oc.begin(), oc.begin() + static_cast<int64_t>(is.size() - 1));
    std::vector<int64_t> dc(oc.begin(), oc.begin() + static_cast<int64_t>(batch_dims));
    for (size_t j = 0; j < k; ++j) {
      ic.push_back(static_cast<int64_t>(j));
      auto v = static_cast<int64_t>(at(idx, ravel(ic, is)));
      ic.pop_back();
      dc.push_back(v < 0 ? v + ds[batch_dims + j] : v);
    }
    dc.insert(dc.end(), oc.begin() + static_cast<int64_t>(is.size() - 1), oc.end());
    out.push_back(at(data, ravel(dc, ds)));
  }
  return out;
}

// ONNX's definition of DepthToSpace / SpaceToDepth: reshape to 6-D, transpose, reshape.
std::vector<double> reshape_transpose(const vm::Tensor& x, const vm::Shape& six,
                                      const std::vector<size_t>& perm) {
  vm::Shape t(6);
  for (size_t d = 0; d < 6; ++d) t[d] = six[perm[d]];
  std::vector<double> out;
  for (int64_t o = 0; o < numel(t); ++o) {
    std::vector<int64_t> oc = unravel(o, t), ic(6);
    for (size_t d = 0; d < 6; ++d) ic[perm[d]] = oc[d];
    out.push_back(at(x, ravel(ic, six)));
  }
  return out;
}

class IndexingExtra : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    arith::Var m("m"), n("n"), k("k"), p("p");
    std::vector<OpToBuild> ops;
    ops.push_back({"gather_nd_2", gather_nd({kF32, {m, n, k}}, {kI64, {p, arith::make_int(2)}})});
    ops.push_back(
        {"gather_nd_1_i32", gather_nd({kI64, {m, n}}, {kI32, {p, k, arith::make_int(1)}})});
    ops.push_back(
        {"gather_nd_batch", gather_nd({kF32, {m, n, k}}, {kI64, {m, p, arith::make_int(1)}}, 1)});
    ops.push_back({"reverse_time0", reverse_sequence({kF32, {m, n}}, {kI64, {n}}, 0, 1)});
    ops.push_back({"reverse_time1_i32", reverse_sequence({kF32, {m, n, k}}, {kI32, {m}}, 1, 0)});
    TensorType x4{kF32, {m, arith::make_int(8), n, k}};
    ops.push_back({"depth_to_space_dcr", depth_to_space(x4, 2, DepthToSpaceMode::kDCR)});
    ops.push_back({"depth_to_space_crd", depth_to_space(x4, 2, DepthToSpaceMode::kCRD)});
    ops.push_back({"space_to_depth", space_to_depth({kF32, dims({2, 3, 6, 9})}, 3)});
    ops.push_back({"eye_sym", eye_like({m, n}, kF32, 0)});
    ops.push_back({"eye_above_i32", eye_like({m, n}, kI32, 1)});
    ops.push_back({"eye_below_static", eye_like(dims({4, 3}), kF32, -2)});
    lib_ = new OpLibrary(OpLibrary::build(ops));
  }
  static void TearDownTestSuite() { delete lib_; }
  static OpLibrary* lib_;
};
OpLibrary* IndexingExtra::lib_ = nullptr;

// Valid indices in [-n, n) (GatherND's negative ones wrap), int64 or int32.
vm::Tensor valid_indices(const vm::Shape& shape, const std::vector<int64_t>& extents,
                         vm::DType dtype, std::mt19937& rng) {
  vm::Tensor t = vm::Tensor::empty(shape, dtype);
  const auto k = static_cast<int64_t>(extents.size());
  for (int64_t i = 0; i < t.numel(); ++i) {
    int64_t n = extents[static_cast<size_t>(i % k)];
    int64_t v = std::uniform_int_distribution<int64_t>(-n, n - 1)(rng);
    if (dtype == kI64) {
      t.data_as<int64_t>()[i] = v;
    } else {
      t.data_as<int32_t>()[i] = static_cast<int32_t>(v);
    }
  }
  return t;
}

TEST_F(IndexingExtra, GatherNdWithAndWithoutBatchDims) {
  std::mt19937 rng(61);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 1, 1}, {3, 4, 5}, {2, 17, 9}}) {
    vm::Tensor data = random_tensor(s, kF32, rng, -1000, 1000);
    for (int64_t p : {1, 6}) {
      vm::Tensor idx = valid_indices({p, 2}, {s[0], s[1]}, kI64, rng);
      expect_close(run_op(*lib_, "gather_nd_2", {data, idx}, {p, s[2]}, kF32),
                   gather_nd_reference(data, idx, 0), 0, 0, "gather_nd_2 " + shape_name(s));
      vm::Tensor bidx = valid_indices({s[0], p, 1}, {s[1]}, kI64, rng);
      expect_close(run_op(*lib_, "gather_nd_batch", {data, bidx}, {s[0], p, s[2]}, kF32),
                   gather_nd_reference(data, bidx, 1), 0, 0, "gather_nd_batch " + shape_name(s));
      vm::Tensor idata = random_tensor({s[1], s[2]}, kI64, rng, -1000, 1000);
      vm::Tensor iidx = valid_indices({p, 3, 1}, {s[1]}, kI32, rng);
      expect_close(run_op(*lib_, "gather_nd_1_i32", {idata, iidx}, {p, 3, s[2]}, kI64),
                   gather_nd_reference(idata, iidx, 0), 0, 0, "gather_nd_1_i32 " + shape_name(s));
    }
  }
  // ONNX's example: data [[0, 1], [2, 3]], indices [[0, 0], [1, 1]] -> [0, 3].
  vm::Tensor data = vm::Tensor::from_vector(std::vector<float>{0, 1, 2, 3}, {2, 2, 1}, kF32);
  vm::Tensor idx = vm::Tensor::from_vector(std::vector<int64_t>{0, 0, 1, -1}, {2, 2}, kI64);
  expect_close(run_op(*lib_, "gather_nd_2", {data, idx}, {2, 1}, kF32), {0, 3}, 0, 0, "example");
}

TEST_F(IndexingExtra, ReverseSequenceAlongEitherAxis) {
  // ONNX's example (time_axis 0, batch_axis 1): lengths [4, 3, 2, 1] on a 4 x 4 input.
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  vm::Tensor x = vm::Tensor::from_vector(v, {4, 4}, kF32);
  vm::Tensor lens = vm::Tensor::from_vector(std::vector<int64_t>{4, 3, 2, 1}, {4}, kI64);
  expect_close(run_op(*lib_, "reverse_time0", {x, lens}, {4, 4}, kF32),
               {12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15}, 0, 0, "time axis 0");
  // time_axis 1, batch_axis 0 on [3, 5, 2]: row b reversed over its first lens[b] steps.
  std::mt19937 rng(62);
  vm::Tensor x3 = random_tensor({3, 5, 2}, kF32, rng);
  vm::Tensor lens3 = vm::Tensor::from_vector(std::vector<int32_t>{5, 0, 3}, {3}, kI32);
  std::vector<double> want;
  for (int64_t b = 0; b < 3; ++b) {
    const int64_t n = lens3.data_as<int32_t>()[b];
    for (int64_t t = 0; t < 5; ++t) {
      for (int64_t c = 0; c < 2; ++c) {
        const int64_t src = t < n ? n - 1 - t : t;
        want.push_back(at(x3, ravel({b, src, c}, {3, 5, 2})));
      }
    }
  }
  expect_close(run_op(*lib_, "reverse_time1_i32", {x3, lens3}, {3, 5, 2}, kF32), want, 0, 0,
               "time axis 1");
}

TEST_F(IndexingExtra, DepthToSpaceAndSpaceToDepthFollowOnnxsDefinition) {
  std::mt19937 rng(63);
  for (const vm::Shape& s : std::vector<vm::Shape>{{1, 8, 1, 1}, {1, 8, 2, 3}, {2, 8, 5, 17}}) {
    vm::Tensor x = random_tensor(s, kF32, rng);
    const int64_t n = s[0], h = s[2], w = s[3];
    const vm::Shape out{n, 2, h * 2, w * 2};
    // DCR: [N, b, b, C', H, W] transposed by (0, 3, 4, 1, 5, 2); CRD: [N, C', b, b, H, W] by
    // (0, 1, 4, 2, 5, 3).
    expect_close(run_op(*lib_, "depth_to_space_dcr", {x}, out, kF32),
                 reshape_transpose(x, {n, 2, 2, 2, h, w}, {0, 3, 4, 1, 5, 2}), 0, 0,
                 "dcr " + shape_name(s));
    expect_close(run_op(*lib_, "depth_to_space_crd", {x}, out, kF32),
                 reshape_transpose(x, {n, 2, 2, 2, h, w}, {0, 1, 4, 2, 5, 3}), 0, 0,
                 "crd " + shape_name(s));
  }
  // SpaceToDepth: [N, C, H/b, b, W/b, b] transposed by (0, 3, 5, 1, 2, 4).
  vm::Tensor x = random_tensor({2, 3, 6, 9}, kF32, rng);
  expect_close(run_op(*lib_, "space_to_depth", {x}, {2, 27, 2, 3}, kF32),
               reshape_transpose(x, {2, 3, 2, 3, 3, 3}, {0, 3, 5, 1, 2, 4}), 0, 0,
               "space_to_depth");
}

TEST_F(IndexingExtra, EyeLikeOnTheKthDiagonal) {
  expect_close(run_op(*lib_, "eye_sym", {}, {2, 3}, kF32), {1, 0, 0, 0, 1, 0}, 0, 0, "eye");
  expect_close(run_op(*lib_, "eye_above_i32", {}, {3, 4}, kI32),
               {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, 0, 0, "eye k=1");
  expect_close(run_op(*lib_, "eye_below_static", {}, {4, 3}, kF32),
               {0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0}, 0, 0, "eye k=-2");
  std::vector<double> big(17 * 129, 0.0);
  for (int64_t i = 0; i < 17; ++i) big[static_cast<size_t>(i * 129 + i)] = 1;
  expect_close(run_op(*lib_, "eye_sym", {}, {17, 129}, kF32), big, 0, 0, "eye 17 x 129");
}

TEST(IndexingExtraBuilders, RejectBadAttributes) {
  arith::Var m("m"), n("n"), p("p");
  EXPECT_USER_ERROR(gather_nd({kF32, {m, n}}, {kI64, {p, n}}), "last dim");
  EXPECT_USER_ERROR(gather_nd({kF32, {m, n}}, {kI64, {p, arith::make_int(3)}}), "rank");
  EXPECT_USER_ERROR(gather_nd({kF32, {m, n}}, {kI64, {p, arith::make_int(1)}}, 1), "batch dim 0");
  EXPECT_USER_ERROR(reverse_sequence({kF32, {m, n}}, {kI64, {n}}, 0, 0), "differ");
  EXPECT_USER_ERROR(depth_to_space({kF32, dims({1, 6, 2, 2})}, 2, DepthToSpaceMode::kDCR),
                    "divisible");
  EXPECT_USER_ERROR(space_to_depth({kF32, dims({1, 1, 5, 4})}, 2), "divisible");
  EXPECT_USER_ERROR(eye_like({m}, kF32, 0), "2-D");
}

}  // namespace
}  // namespace dynvm::ops::testing
