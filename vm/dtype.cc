#include "vm/dtype.h"

#include <array>

namespace dynvm::vm {
namespace {

// kDLBool was added to DLPack after 0.6 (Debian 12's version) with this value.
constexpr uint8_t kDLBoolCode = 6;

struct DTypeInfo {
  DType type;
  const char* short_name;
  const char* long_name;
  uint8_t size;
  uint8_t dl_code;
  int onnx_code;
  const char* numpy_descr;  // nullptr: none
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {DType::kFloat32, "f32", "float32", 4, kDLFloat, 1, "<f4"},
    {DType::kFloat64, "f64", "float64", 8, kDLFloat, 11, "<f8"},
    {DType::kFloat16, "f16", "float16", 2, kDLFloat, 10, "<f2"},
    {DType::kBFloat16, "bf16", "bfloat16", 2, kDLBfloat, 16, nullptr},
    {DType::kInt8, "i8", "int8", 1, kDLInt, 3, "|i1"},
    {DType::kInt16, "i16", "int16", 2, kDLInt, 5, "<i2"},
    {DType::kInt32, "i32", "int32", 4, kDLInt, 6, "<i4"},
    {DType::kInt64, "i64", "int64", 8, kDLInt, 7, "<i8"},
    {DType::kUInt8, "u8", "uint8", 1, kDLUInt, 2, "|u1"},
    {DType::kUInt16, "u16", "uint16", 2, kDLUInt, 4, "<u2"},
    {DType::kUInt32, "u32", "uint32", 4, kDLUInt, 12, "<u4"},
    {DType::kUInt64, "u64", "uint64", 8, kDLUInt, 13, "<u8"},
    {DType::kBool, "bool", "bool", 1, kDLBoolCode, 9, "|b1"},
    {DType::kComplex64, "c64", "complex64", 8, kDLComplex, 14, "<c8"},
    {DType::kComplex128, "c128", "complex128", 16, kDLComplex, 15, "<c16"},
}};

const DTypeInfo& info(DType t) { return kInfo[static_cast<size_t>(t)]; }

}  // namespace

bool is_valid_dtype(int64_t code) { return code >= 0 && code < kNumDTypes; }

size_t dtype_size(DType t) { return info(t).size; }

std::string_view dtype_name(DType t) { return info(t).short_name; }

std::string_view dtype_long_name(DType t) { return info(t).long_name; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& i : kInfo) {
    if (name == i.short_name || name == i.long_name) return i.type;
  }
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  return std::nullopt;
}

DLDataType to_dlpack(DType t) {
  const auto& i = info(t);
  return DLDataType{i.dl_code, static_cast<uint8_t>(i.size * 8), 1};
}

std::optional<DType> from_dlpack(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  for (const auto& i : kInfo) {
    if (i.dl_code == t.code && i.size * 8 == t.bits) return i.type;
  }
  // Older producers (TVM) describe bool as a 1-bit unsigned integer.
  if (t.code == kDLUInt && t.bits == 1) return DType::kBool;
  return std::nullopt;
}

std::optional<DType> from_onnx_code(int code) {
  for (const auto& i : kInfo) {
    if (i.onnx_code == code) return i.type;
  }
  return std::nullopt;
}

int to_onnx_code(DType t) { return info(t).onnx_code; }

std::optional<std::string> to_numpy_descr(DType t) {
  if (info(t).numpy_descr == nullptr) return std::nullopt;
  return std::string(info(t).numpy_descr);
}

std::optional<DType> from_numpy_descr(std::string_view descr) {
  if (descr.size() < 2) return std::nullopt;
  // '=' (native) and '<' (little-endian) mean the same here; '|' is "not applicable".
  char order = descr[0];
  if (order != '<' && order != '=' && order != '|') return std::nullopt;
  std::string_view rest = descr.substr(1);
  for (const auto& i : kInfo) {
    if (i.numpy_descr != nullptr && rest == std::string_view(i.numpy_descr).substr(1)) {
      return i.type;
    }
  }
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 ||
         t == DType::kBFloat16;
}

bool is_integer(DType t) {
  switch (t) {
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: case DType::kUInt64:
      return true;
    default:
      return false;
  }
}

}  // namespace dynvm::vm
