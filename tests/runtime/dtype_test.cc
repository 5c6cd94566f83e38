// DType tables: sizes, names, and the DLPack / ONNX / NumPy mappings, checked against
// the values those formats define (not against our own tables).
#include <gtest/gtest.h>

#include "vm/dtype.h"

namespace dynvm::vm {
namespace {

TEST(DType, SizesMatchTheCTypes) {
  EXPECT_EQ(dtype_size(DType::kFloat32), sizeof(float));
  EXPECT_EQ(dtype_size(DType::kFloat64), sizeof(double));
  EXPECT_EQ(dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kInt64), sizeof(int64_t));
  EXPECT_EQ(dtype_size(DType::kUInt16), sizeof(uint16_t));
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_EQ(dtype_size(DType::kComplex64), 8u);
  EXPECT_EQ(dtype_size(DType::kComplex128), 16u);
}

TEST(DType, ParsesShortAndLongNames) {
  EXPECT_EQ(parse_dtype("f32"), DType::kFloat32);
  EXPECT_EQ(parse_dtype("float32"), DType::kFloat32);
  EXPECT_EQ(parse_dtype("float"), DType::kFloat32);
  EXPECT_EQ(parse_dtype("double"), DType::kFloat64);
  EXPECT_EQ(parse_dtype("i64"), DType::kInt64);
  EXPECT_EQ(parse_dtype("bool"), DType::kBool);
  EXPECT_EQ(parse_dtype("bf16"), DType::kBFloat16);
  EXPECT_FALSE(parse_dtype("f31").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
}

TEST(DType, OnnxCodesAreTheTensorProtoValues) {
  // onnx.proto TensorProto.DataType: FLOAT=1 UINT8=2 INT8=3 UINT16=4 INT16=5 INT32=6
  // INT64=7 BOOL=9 FLOAT16=10 DOUBLE=11 UINT32=12 UINT64=13 COMPLEX64=14 COMPLEX128=15
  // BFLOAT16=16
  EXPECT_EQ(from_onnx_code(1), DType::kFloat32);
  EXPECT_EQ(from_onnx_code(2), DType::kUInt8);
  EXPECT_EQ(from_onnx_code(3), DType::kInt8);
  EXPECT_EQ(from_onnx_code(7), DType::kInt64);
  EXPECT_EQ(from_onnx_code(9), DType::kBool);
  EXPECT_EQ(from_onnx_code(10), DType::kFloat16);
  EXPECT_EQ(from_onnx_code(11), DType::kFloat64);
  EXPECT_EQ(from_onnx_code(16), DType::kBFloat16);
  EXPECT_FALSE(from_onnx_code(8).has_value());  // STRING
  for (int t = 0; t < kNumDTypes; ++t) {
    DType d = static_cast<DType>(t);
    EXPECT_EQ(from_onnx_code(to_onnx_code(d)), d);
  }
}

TEST(DType, DlpackCodesFollowTheSpec) {
  DLDataType f32 = to_dlpack(DType::kFloat32);
  EXPECT_EQ(f32.code, kDLFloat);
  EXPECT_EQ(f32.bits, 32);
  EXPECT_EQ(f32.lanes, 1);
  DLDataType u8 = to_dlpack(DType::kUInt8);
  EXPECT_EQ(u8.code, kDLUInt);
  EXPECT_EQ(u8.bits, 8);
  EXPECT_EQ(to_dlpack(DType::kBFloat16).code, kDLBfloat);
  EXPECT_EQ(from_dlpack(DLDataType{kDLUInt, 1, 1}), DType::kBool);  // TVM's bool
  EXPECT_FALSE(from_dlpack(DLDataType{kDLFloat, 32, 4}).has_value());  // vectors
  for (int t = 0; t < kNumDTypes; ++t) {
    DType d = static_cast<DType>(t);
    EXPECT_EQ(from_dlpack(to_dlpack(d)), d);
  }
}

TEST(DType, NumpyDescriptors) {
  EXPECT_EQ(to_numpy_descr(DType::kFloat32), "<f4");
  EXPECT_EQ(to_numpy_descr(DType::kBool), "|b1");
  EXPECT_EQ(to_numpy_descr(DType::kInt8), "|i1");
  EXPECT_FALSE(to_numpy_descr(DType::kBFloat16).has_value());
  EXPECT_EQ(from_numpy_descr("<f8"), DType::kFloat64);
  EXPECT_EQ(from_numpy_descr("=i4"), DType::kInt32);
  EXPECT_EQ(from_numpy_descr("|u1"), DType::kUInt8);
  EXPECT_FALSE(from_numpy_descr(">f4").has_value());  // big-endian is not supported
  EXPECT_FALSE(from_numpy_descr("<U8").has_value());
}

}  // namespace
}  // namespace dynvm::vm
