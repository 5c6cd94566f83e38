// The .npy reader and writer: files NumPy wrote (made at test time by npy_numpy.py into
// NPY_NUMPY_DIR) read as the values computed here; hand-made headers in every form NumPy
// and older writers produce parse; and every malformed file is one UserError line naming
// the file. (That NumPy reads our files is tools.npy_numpy_reads_ours.)
#include "vm/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "tests/tools/npy_samples.h"
#include "vm/error.h"

namespace dynvm::vm {
namespace {

using testing::npy_sample_tensor;
using testing::npy_samples;

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  return std::vector<uint8_t>(p, p + t.nbytes());
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(bytes_of(got), bytes_of(want)) << what;
}

// A .npy file with header dict `dict`, padded as NumPy pads, then `data`.
std::vector<uint8_t> npy_file(std::string dict, const std::vector<uint8_t>& data, int major = 1) {
  size_t preamble = major == 1 ? 10 : 12;
  while ((preamble + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < preamble - 8; ++i) out.push_back((dict.size() >> (8 * i)) & 0xff);
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<uint8_t> f32_data(std::vector<float> v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// The message of the UserError `parse` throws; fails the test if it throws nothing.
template <typename F>
std::string error_of(F parse) {
  try {
    parse();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UserError";
  return "";
}

std::string parse_error(const std::vector<uint8_t>& bytes) {
  return error_of([&] { parse_npy(bytes, "bad.npy"); });
}

void expect_one_line_naming_file(const std::string& msg) {
  EXPECT_NE(msg.find("'bad.npy'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(NpyNumpyFiles, EverySampleReadsAsTheValuesComputedHere) {
  for (const auto& sample : npy_samples()) {
    std::string path = std::string(NPY_NUMPY_DIR) + "/" + sample.name + ".npy";
    expect_same(read_npy(path), npy_sample_tensor(sample), sample.name);
  }
}

TEST(NpyNumpyFiles, FormatVersions2And3Read) {
  Tensor want = npy_sample_tensor(DType::kFloat32, {2, 3});
  expect_same(read_npy(NPY_NUMPY_DIR "/v2_f32_2x3.npy"), want, "v2");
  expect_same(read_npy(NPY_NUMPY_DIR "/v3_f32_2x3.npy"), want, "v3");
}

TEST(NpyNumpyFiles, BigEndianDataIsByteSwapped) {
  expect_same(read_npy(NPY_NUMPY_DIR "/big_i32_2x2x2.npy"),
              npy_sample_tensor(DType::kInt32, {2, 2, 2}), "i32");
  expect_same(read_npy(NPY_NUMPY_DIR "/big_f64_5.npy"), npy_sample_tensor(DType::kFloat64, {5}),
              "f64");
  expect_same(read_npy(NPY_NUMPY_DIR "/big_c128_2.npy"), npy_sample_tensor(DType::kComplex128, {2}),
              "c128");
  expect_same(read_npy(NPY_NUMPY_DIR "/big_u16_4.npy"), npy_sample_tensor(DType::kUInt16, {4}),
              "u16");
}

TEST(NpyNumpyFiles, FortranOrderIsRefusedUnlessItIsAlsoCOrder) {
  std::string msg = error_of([] { read_npy(NPY_NUMPY_DIR "/fortran_f32_2x3.npy"); });
  EXPECT_NE(msg.find("Fortran"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fortran_f32_2x3.npy"), std::string::npos) << msg;
  expect_same(read_npy(NPY_NUMPY_DIR "/fortran_f32_1x5.npy"),
              npy_sample_tensor(DType::kFloat32, {1, 5}), "1x5");
}

TEST(NpyNumpyFiles, UnsupportedTypesAreOneLineErrors) {
  for (const char* name : {"unsupported_structured", "unsupported_unicode", "unsupported_object",
                           "unsupported_datetime"}) {
    std::string path = std::string(NPY_NUMPY_DIR) + "/" + name + ".npy";
    std::string msg = error_of([&] { read_npy(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_TRUE(msg.find("not supported") != std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(Npy, FormatThenParseKeepsEveryDTypeAndShape) {
  for (const auto& sample : npy_samples()) {
    Tensor t = npy_sample_tensor(sample);
    expect_same(parse_npy(format_npy(t)), t, sample.name);
  }
}

TEST(Npy, WrittenHeaderIsVersion1AlignedTo64Bytes) {
  std::vector<uint8_t> bytes = format_npy(npy_sample_tensor(DType::kFloat32, {2, 3}));
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(std::memcmp(bytes.data(), "\x93NUMPY\x01\x00", 8), 0);
  size_t header_len = bytes[8] | (bytes[9] << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_len + 24);
  std::string header(bytes.begin() + 10, bytes.begin() + 10 + header_len);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0u)
      << header;
  EXPECT_EQ(header.back(), '\n');
}

TEST(Npy, OneDimShapeIsWrittenWithTrailingComma) {
  std::vector<uint8_t> bytes = format_npy(npy_sample_tensor(DType::kInt64, {6}));
  std::string text(bytes.begin(), bytes.end());
  EXPECT_NE(text.find("'shape': (6,)"), std::string::npos);
  bytes = format_npy(npy_sample_tensor(DType::kInt64, {}));
  text.assign(bytes.begin(), bytes.end());
  EXPECT_NE(text.find("'shape': ()"), std::string::npos);
}

TEST(Npy, WriteThenReadFile) {
  std::string path = ::testing::TempDir() + "/npy_write_then_read.npy";
  Tensor t = npy_sample_tensor(DType::kComplex64, {3});
  write_npy(t, path);
  expect_same(read_npy(path), t, path);
  std::filesystem::remove(path);
}

TEST(Npy, HeaderVariantsFromOtherWritersParse) {
  std::vector<uint8_t> data = f32_data({1, 2, 3, 4, 5, 6});
  Tensor want = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}, DType::kFloat32);
  for (const char* dict : {
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
           "{'shape': (2, 3), 'descr': '<f4', 'fortran_order': False}",
           "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,3)}",
           "{ 'descr' : '=f4' ,'fortran_order':False,'shape':[2, 3] , }",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",  // Python 2
       }) {
    expect_same(parse_npy(npy_file(dict, data)), want, dict);
  }
  for (int major : {2, 3}) {
    expect_same(parse_npy(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
                                   data, major)),
                want, "major " + std::to_string(major));
  }
}

TEST(Npy, ZeroDimAndEmptyArrays) {
  Tensor scalar = parse_npy(
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", f32_data({2.5f})));
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.data_as<float>()[0], 2.5f);
  Tensor empty =
      parse_npy(npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (4, 0)}", {}));
  EXPECT_EQ(empty.shape(), (Shape{4, 0}));
  EXPECT_EQ(empty.numel(), 0);
}

TEST(Npy, BadMagicAndVersionsAreRefused) {
  EXPECT_NE(parse_error({}).find("not a NumPy .npy file"), std::string::npos);
  std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '\n'};
  EXPECT_NE(parse_error(text).find("not a NumPy .npy file"), std::string::npos);
  std::vector<uint8_t> v4 =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", f32_data({1}));
  v4[6] = 4;
  std::string msg = parse_error(v4);
  EXPECT_NE(msg.find("unsupported format version 4.0"), std::string::npos) << msg;
  expect_one_line_naming_file(msg);
}

TEST(Npy, TruncatedFilesAreRefused) {
  std::vector<uint8_t> full = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
                                       f32_data({1, 2, 3, 4, 5, 6}));
  for (size_t keep : {size_t{7}, size_t{9}, size_t{40}, full.size() - 24, full.size() - 1}) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(keep));
    std::string msg = parse_error(cut);
    EXPECT_NE(msg.find("truncated"), std::string::npos) << keep << ": " << msg;
    expect_one_line_naming_file(msg);
  }
}

TEST(Npy, DataLongerThanTheShapeIsRefused) {
  std::string msg = parse_error(npy_file(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}", f32_data({1, 2, 3, 4, 5})));
  EXPECT_NE(msg.find("needs 16 bytes of data, but 20 follow the header"), std::string::npos) << msg;
}

TEST(Npy, MalformedHeadersAreOneLineErrors) {
  std::vector<uint8_t> data = f32_data({1, 2});
  struct Case {
    const char* dict;
    const char* expect;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"", "malformed header"},
           {"[1, 2]", "not a dict"},
           {"{'descr': '<f4', 'shape': (2,)}", "needs the keys"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key"},
           {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
            "given twice"},
           {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "malformed header"},
           {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", "expected"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "after the header"},
           {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "fortran_order"},
           {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}", "unexpected character"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': 'x'}", "not a tuple"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'a')}", "not an int"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "negative dimension"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
            "integer too large"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}",
            "too large"},
           {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3) }", "needs 24 bytes"},
           {"{'descr': '<U3', 'fortran_order': False, 'shape': (2,)}", "not supported"},
           {"{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (2,)}", "structured"},
           {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}", "Fortran"},
       }) {
    std::string msg = parse_error(npy_file(c.dict, data));
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.dict << " -> " << msg;
    expect_one_line_naming_file(msg);
  }
}

TEST(Npy, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': ";
  dict += std::string(100000, '(');
  std::string msg = parse_error(npy_file(dict, {}, 2));
  EXPECT_NE(msg.find("nesting too deep"), std::string::npos) << msg;
}

TEST(Npy, HeaderLengthBeyondTheFileIsRefused) {
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff, '{'};
  EXPECT_NE(parse_error(bytes).find("truncated header"), std::string::npos);
}

TEST(Npy, FileErrorsNameThePath) {
  std::string missing = ::testing::TempDir() + "/no_such_dir/x.npy";
  std::string msg = error_of([&] { read_npy(missing); });
  EXPECT_NE(msg.find("cannot open '" + missing + "'"), std::string::npos) << msg;
  msg = error_of([&] { read_npy(::testing::TempDir()); });
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
  msg = error_of([&] { write_npy(npy_sample_tensor(DType::kFloat32, {2}), missing); });
  EXPECT_NE(msg.find("cannot write '" + missing + "'"), std::string::npos) << msg;

  std::string truncated = ::testing::TempDir() + "/npy_truncated.npy";
  std::vector<uint8_t> bytes = format_npy(npy_sample_tensor(DType::kFloat64, {5}));
  std::ofstream(truncated, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size() - 3));
  msg = error_of([&] { read_npy(truncated); });
  EXPECT_NE(msg.find("truncated data"), std::string::npos) << msg;
  EXPECT_NE(msg.find(truncated), std::string::npos) << msg;
  std::filesystem::remove(truncated);
}

TEST(Npy, BFloat16HasNoNumpyTypeAndIsRefusedOnWrite) {
  Tensor t = Tensor::empty({2}, DType::kBFloat16);
  std::string msg = error_of([&] { format_npy(t); });
  EXPECT_NE(msg.find("NumPy has no such type"), std::string::npos) << msg;
}

}  // namespace
}  // namespace dynvm::vm
