// Gather and GatherElements compiled for the host and run through the runtime's loader on
// f32, i64 and bool data with int32 and int64 indices: symbolic shapes (one kernel called
// at several sizes) and static ones, axis 0, a middle axis and the last, scalar indices.
// Indices include negative ones (which wrap) and out-of-range ones (which clamp: see
// gather.h). References are plain index loops; comparisons are exact.
#include "kernels/ops/gather.h"

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

}  // namespace
}  // namespace dynvm::ops::testing
