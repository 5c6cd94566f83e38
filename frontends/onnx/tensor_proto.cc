// TensorProto conversion (see tensor_proto.h).
#include "frontends/onnx/tensor_proto.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <limits>

#include "vm/error.h"

namespace dynvm::frontends::onnx_import {
namespace {

template <typename Dst, typename Field>
void copy_field(const Field& field, vm::Tensor& t) {
  auto* out = t.data_as<Dst>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

}  // namespace

vm::Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& where) {
  if (proto.data_location() == onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0) {
    user_error(where,
               ": external tensor data is not supported (save the model with its "
               "weights inside the .onnx file)");
  }
  std::optional<vm::DType> dtype = vm::from_onnx_code(proto.data_type());
  if (!dtype) {
    user_error(where, ": unsupported tensor data type ",
               onnx::TensorProto::DataType_Name(
                   static_cast<onnx::TensorProto::DataType>(proto.data_type())),
               " (", proto.data_type(), ")");
  }
  vm::Shape shape;
  int64_t numel = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) user_error(where, ": negative dim ", d);
    if (d > 0 && numel > std::numeric_limits<int64_t>::max() / d / 16) {
      user_error(where, ": too many elements");
    }
    numel *= d;
    shape.push_back(d);
  }
  vm::Tensor t = vm::Tensor::empty(shape, *dtype);
  const size_t nbytes = t.nbytes();
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != nbytes) {
      user_error(where, ": raw_data has ", proto.raw_data().size(),
                 " bytes, its dims and type need ", nbytes);
    }
    if (nbytes > 0) std::memcpy(t.data(), proto.raw_data().data(), nbytes);
    return t;
  }
  auto expect_count = [&](int count, const char* field) {
    if (count != numel) {
      user_error(where, ": ", field, " has ", count, " values, its dims need ", numel);
    }
  };
  switch (*dtype) {
    case vm::DType::kFloat32:
      expect_count(proto.float_data_size(), "float_data");
      copy_field<float>(proto.float_data(), t);
      break;
    case vm::DType::kFloat64:
      expect_count(proto.double_data_size(), "double_data");
      copy_field<double>(proto.double_data(), t);
      break;
    case vm::DType::kInt64:
      expect_count(proto.int64_data_size(), "int64_data");
      copy_field<int64_t>(proto.int64_data(), t);
      break;
    case vm::DType::kUInt32:
    case vm::DType::kUInt64:
      expect_count(proto.uint64_data_size(), "uint64_data");
      if (*dtype == vm::DType::kUInt32) {
        copy_field<uint32_t>(proto.uint64_data(), t);
      } else {
        copy_field<uint64_t>(proto.uint64_data(), t);
      }
      break;
    case vm::DType::kInt32:
      expect_count(proto.int32_data_size(), "int32_data");
      copy_field<int32_t>(proto.int32_data(), t);
      break;
    case vm::DType::kInt8:
      expect_count(proto.int32_data_size(), "int32_data");
      copy_field<int8_t>(proto.int32_data(), t);
      break;
    case vm::DType::kInt16:
      expect_count(proto.int32_data_size(), "int32_data");
      copy_field<int16_t>(proto.int32_data(), t);
      break;
    case vm::DType::kUInt8:
    case vm::DType::kBool:
      expect_count(proto.int32_data_size(), "int32_data");
      copy_field<uint8_t>(proto.int32_data(), t);
      break;
    case vm::DType::kUInt16:
    case vm::DType::kFloat16:
    case vm::DType::kBFloat16:
      // 16-bit types keep their bits in the low half of each int32.
      expect_count(proto.int32_data_size(), "int32_data");
      copy_field<uint16_t>(proto.int32_data(), t);
      break;
    default:
      user_error(where, ": tensors of ", vm::dtype_name(*dtype), " need raw_data");
  }
  return t;
}

}  // namespace dynvm::frontends::onnx_import
