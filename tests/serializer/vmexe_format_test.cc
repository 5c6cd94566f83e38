// The .vmexe format when nothing is damaged: round trips, deterministic bytes, constant
// alignment, versions and feature bits, section framing, and saving/loading files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "serializer/format.h"
#include "serializer/testing.h"
#include "serializer/vmexe.h"
#include "tests/serializer/rich_executable.h"
#include "vm/error.h"
#include "vm/verifier.h"

namespace dynvm::serializer {
namespace {

using testing::get_le;
using testing::minimal_executable;
using testing::put_le;
using testing::rich_executable;

// The message of the UserError that `fn` throws; fails the test if it throws none.
template <typename Fn>
std::string user_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const UserError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UserError";
  return "";
}

void expect_same(const vm::Executable& a, const vm::Executable& b) {
  std::string why;
  EXPECT_TRUE(vm::executables_equal(a, b, &why)) << "differs in " << why;
}

SectionSpan section(const std::vector<SectionSpan>& sections, SectionId id) {
  for (const SectionSpan& s : sections) {
    if (s.id == static_cast<uint32_t>(id)) return s;
  }
  throw std::runtime_error("no such section");
}

// Appends a section to a file and fixes up the payload size and checksum.
void append_section(std::vector<uint8_t>& bytes, uint32_t id, std::vector<uint8_t> body) {
  size_t at = bytes.size();
  bytes.resize(at + kSectionHeaderSize);
  put_le(bytes, at, id, 4);
  put_le(bytes, at + 4, body.size(), 8);
  bytes.insert(bytes.end(), body.begin(), body.end());
  put_le(bytes, kPayloadSizeOffset, bytes.size() - kHeaderSize, 8);
  reseal_checksum(bytes);
}

// The file offsets of each constant's bytes, as stored in the constants section, by the
// layout README.md documents: u64 count, then per constant u8 dtype, u64 ndim, i64 dims,
// u64 offset, u64 nbytes.
std::vector<size_t> constant_offset_fields(const std::vector<uint8_t>& bytes) {
  SectionSpan meta = section(list_sections(bytes), SectionId::kConstants);
  std::vector<size_t> fields;
  size_t p = meta.body_offset;
  uint64_t n = get_le(bytes, p, 8);
  p += 8;
  for (uint64_t i = 0; i < n; ++i) {
    p += 9 + 8 * get_le(bytes, p + 1, 8);
    fields.push_back(p);
    p += 16;
  }
  return fields;
}

TEST(VmexeRoundTrip, FixturesPassTheVerifier) {
  EXPECT_NO_THROW(vm::verify(rich_executable()));
  EXPECT_NO_THROW(vm::verify(minimal_executable()));
}

TEST(VmexeRoundTrip, RichExecutableReadsBackEqual) {
  vm::Executable exe = rich_executable();
  vm::Executable back = read_vmexe(write_vmexe(exe));
  expect_same(exe, back);
  EXPECT_EQ(back.producer, exe.producer);
  EXPECT_EQ(back.strings[3], std::string("nul\0inside", 10));
  ASSERT_EQ(back.constants.size(), exe.constants.size());
  EXPECT_EQ(back.constants[0].ndim(), 0);
  EXPECT_EQ(*back.constants[0].data_as<int64_t>(), 42);
  EXPECT_EQ(back.constants[1].data_as<float>()[3], 3.25f);
  EXPECT_EQ(back.constants[2].shape(), (vm::Shape{0, 4}));
  for (const vm::Tensor& c : back.constants) EXPECT_EQ(c.device(), vm::kCpu);
  EXPECT_NO_THROW(vm::verify(back));
}

TEST(VmexeRoundTrip, MinimalExecutableReadsBackEqual) {
  vm::Executable exe = minimal_executable();
  std::vector<uint8_t> bytes = write_vmexe(exe);
  expect_same(exe, read_vmexe(bytes));
  EXPECT_EQ(read_header(bytes).features, 0u);
}

TEST(VmexeRoundTrip, SameExecutableGivesSameBytes) {
  std::vector<uint8_t> first = write_vmexe(rich_executable());
  EXPECT_EQ(first, write_vmexe(rich_executable()));
  EXPECT_EQ(first, write_vmexe(read_vmexe(first)));
}

// Parses the constants section by the layout README.md documents, independently of the
// reader, and checks that each constant's bytes sit at an aligned file offset.
TEST(VmexeRoundTrip, ConstantsAreAlignedInTheFile) {
  vm::Executable exe = rich_executable();
  std::vector<uint8_t> bytes = write_vmexe(exe);
  std::vector<SectionSpan> sections = list_sections(bytes);
  SectionSpan meta = section(sections, SectionId::kConstants);
  SectionSpan data = section(sections, SectionId::kConstantData);
  size_t p = meta.body_offset;
  ASSERT_EQ(get_le(bytes, p, 8), exe.constants.size());
  p += 8;
  for (const vm::Tensor& c : exe.constants) {
    EXPECT_EQ(get_le(bytes, p, 1), static_cast<uint64_t>(c.dtype()));
    uint64_t ndim = get_le(bytes, p + 1, 8);
    ASSERT_EQ(ndim, c.shape().size());
    p += 9 + 8 * ndim;
    uint64_t offset = get_le(bytes, p, 8);
    uint64_t nbytes = get_le(bytes, p + 8, 8);
    p += 16;
    EXPECT_EQ(offset % 64, 0u);
    EXPECT_EQ(nbytes, c.nbytes());
    EXPECT_GE(offset, data.body_offset);
    EXPECT_LE(offset + nbytes, data.body_offset + data.size);
    EXPECT_EQ(std::memcmp(bytes.data() + offset, c.data(), c.nbytes()), 0);
  }
  EXPECT_EQ(p, meta.body_offset + meta.size);
}

TEST(VmexeHeader, ReadHeaderReportsVersionFeaturesTargetAndProducer) {
  vm::Executable exe = rich_executable();
  std::vector<uint8_t> bytes = write_vmexe(exe);
  ASSERT_EQ(std::memcmp(bytes.data(), "DYNVMEXE", 8), 0);
  FileInfo info = read_header(bytes);
  EXPECT_EQ(info.major, kFormatMajor);
  EXPECT_EQ(info.minor, kFormatMinor);
  EXPECT_EQ(info.features, kFeatureCpuKernels | kFeatureCudaKernels);
  EXPECT_EQ(info.target, exe.target);
  EXPECT_EQ(info.producer, exe.producer);
  EXPECT_EQ(get_le(bytes, kPayloadSizeOffset, 8), bytes.size() - kHeaderSize);
}

TEST(VmexeVersions, OlderMinorLoadsWithEmptyProducer) {
  vm::Executable exe = rich_executable();
  std::vector<uint8_t> old = write_vmexe(exe, WriteOptions{.minor = 0});
  // The meta section lacks the producer string (its u64 length and bytes).
  EXPECT_EQ(section(list_sections(old), SectionId::kMeta).size + 8 + exe.producer.size(),
            section(list_sections(write_vmexe(exe)), SectionId::kMeta).size);
  EXPECT_EQ(read_header(old).minor, 0);
  EXPECT_EQ(read_header(old).producer, "");
  vm::Executable back = read_vmexe(old);
  EXPECT_EQ(back.producer, "");
  back.producer = exe.producer;
  expect_same(exe, back);
}

// 1.3: sequence and optional signature entries (their form after the specs).
TEST(VmexeVersions, SequenceAndOptionalFormsRoundTripFromOneThree) {
  vm::Executable exe = minimal_executable();
  exe.inputs = {vm::TensorSpec{"xs", vm::DType::kFloat32, {}, vm::ValueForm::kSequence, true}};
  exe.outputs.push_back(vm::TensorSpec{
      "o", vm::DType::kInt64, {vm::DimSpec{"", 4}}, vm::ValueForm::kOptional, false});
  vm::Executable back = read_vmexe(write_vmexe(exe));
  ASSERT_EQ(back.inputs.size(), exe.inputs.size());
  EXPECT_EQ(back.inputs.back(), exe.inputs.back());
  EXPECT_EQ(back.outputs.back(), exe.outputs.back());
  EXPECT_EQ(vm::tensor_spec_str(back.inputs.back()), "xs: sequence of f32 [?rank]");
  // A file of an older minor holds tensors only; a 1.2 file of tensors reads as tensors.
  EXPECT_THROW(write_vmexe(exe, WriteOptions{.minor = 2}), InternalError);
  vm::Executable tensors = read_vmexe(write_vmexe(minimal_executable(), WriteOptions{.minor = 2}));
  for (const vm::TensorSpec& s : tensors.inputs) EXPECT_EQ(s.form, vm::ValueForm::kTensor);
}

// 1.4: each kernel's schedule note (vmrun --info says which kernels were tuned).
TEST(VmexeVersions, KernelScheduleNotesRoundTripFromOneFour) {
  vm::Executable exe = rich_executable();
  ASSERT_FALSE(exe.kernels.empty());
  exe.kernels[0].schedule = "tuned: tile_m=8 tile_n=16";
  vm::Executable back = read_vmexe(write_vmexe(exe));
  EXPECT_EQ(back.kernels[0].schedule, "tuned: tile_m=8 tile_n=16");
  expect_same(exe, back);
  // 1.3 files have no notes: they load with empty ones.
  vm::Executable old = read_vmexe(write_vmexe(exe, WriteOptions{.minor = 3}));
  EXPECT_EQ(old.kernels[0].schedule, "");
}

// 1.5: the condition "this dim equals another argument's dim" (kind 3).
TEST(VmexeVersions, DimEqualsDimConditionRoundTripsFromOneFive) {
  vm::Executable exe = rich_executable();
  exe.kernels[0].variants[1].conditions.push_back({1, 1, vm::DimPredicateKind::kDimEq, 0, 1});
  vm::Executable back = read_vmexe(write_vmexe(exe));
  expect_same(exe, back);
  // A 1.4 file cannot say it; one that does is refused as a 1.4 reader refuses it.
  EXPECT_THROW(write_vmexe(exe, WriteOptions{.minor = 4}), InternalError);
  std::vector<uint8_t> bytes = write_vmexe(exe);
  put_le(bytes, kMinorOffset, 4, 2);
  reseal_checksum(bytes);
  std::string msg = user_error_of([&] { read_vmexe(bytes); });
  EXPECT_NE(msg.find("unknown condition kind 3"), std::string::npos) << msg;
}

TEST(VmexeVersions, NewerMajorIsRefusedNamingBothVersions) {
  std::vector<uint8_t> bytes = write_vmexe(rich_executable());
  put_le(bytes, kMajorOffset, 2, 2);
  put_le(bytes, kMinorOffset, 0, 2);
  std::string msg = user_error_of([&] { read_vmexe(bytes); });
  EXPECT_NE(msg.find("2.0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1." + std::to_string(kFormatMinor)), std::string::npos) << msg;
  EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
  // Refused on the version, not on the checksum the newer format may compute otherwise.
  EXPECT_EQ(msg.find("checksum"), std::string::npos) << msg;
  EXPECT_EQ(user_error_of([&] { read_header(bytes); }), msg);
}

TEST(VmexeVersions, OlderMajorIsRefused) {
  std::vector<uint8_t> bytes = write_vmexe(rich_executable());
  put_le(bytes, kMajorOffset, 0, 2);
  std::string msg = user_error_of([&] { read_vmexe(bytes); });
  EXPECT_NE(msg.find("0." + std::to_string(kFormatMinor) + " is older"), std::string::npos) << msg;
}

// A newer minor of the same major may add sections and trailing fields; both are
// skipped.
TEST(VmexeVersions, NewerMinorWithUnknownSectionsAndFieldsLoads) {
  vm::Executable exe = rich_executable();
  std::vector<uint8_t> bytes = write_vmexe(exe);
  put_le(bytes, kMinorOffset, kFormatMinor + 1, 2);
  reseal_checksum(bytes);
  // Extend the meta section, which comes first, with a field this runtime does not know.
  // That moves the constant data by 64 bytes (keeping it aligned); so do their offsets.
  std::vector<SectionSpan> sections = list_sections(bytes);
  SectionSpan meta = section(sections, SectionId::kMeta);
  for (size_t field : constant_offset_fields(bytes)) {
    put_le(bytes, field, get_le(bytes, field, 8) + 64, 8);
  }
  std::vector<uint8_t> extra(64, 0xab);
  bytes.insert(bytes.begin() + meta.body_offset + meta.size, extra.begin(), extra.end());
  put_le(bytes, meta.header_offset + 4, meta.size + extra.size(), 8);
  append_section(bytes, 1000, {1, 2, 3, 4, 5});
  FileInfo info = read_header(bytes);
  EXPECT_EQ(info.minor, kFormatMinor + 1);
  EXPECT_EQ(info.producer, exe.producer);
  expect_same(exe, read_vmexe(bytes));
}

TEST(VmexeVersions, TrailingFieldsInACurrentMinorAreCorrupt) {
  std::vector<uint8_t> bytes = write_vmexe(rich_executable());
  std::vector<SectionSpan> sections = list_sections(bytes);
  SectionSpan meta = section(sections, SectionId::kMeta);
  bytes.insert(bytes.begin() + meta.body_offset + meta.size, 0x11);
  put_le(bytes, meta.header_offset + 4, meta.size + 1, 8);
  put_le(bytes, kPayloadSizeOffset, bytes.size() - kHeaderSize, 8);
  reseal_checksum(bytes);
  // (The constants moved too, but the meta section is decoded first.)
  std::string msg = user_error_of([&] { read_vmexe(bytes); });
  EXPECT_EQ(msg, "corrupt executable: section 'meta': 1 unexpected bytes at the end");
}

TEST(VmexeSections, UnknownSectionIsSkipped) {
  vm::Executable exe = rich_executable();
  std::vector<uint8_t> bytes = write_vmexe(exe);
  append_section(bytes, 77, std::vector<uint8_t>(100, 0xee));
  append_section(bytes, 77, {});  // unknown ids may even repeat
  expect_same(exe, read_vmexe(bytes));
}

TEST(VmexeSections, DuplicateSectionIsCorrupt) {
  std::vector<uint8_t> bytes = write_vmexe(minimal_executable());
  append_section(bytes, static_cast<uint32_t>(SectionId::kStrings), {0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_EQ(user_error_of([&] { read_vmexe(bytes); }),
            "corrupt executable: payload: section 'strings' appears twice");
}

TEST(VmexeSections, MissingSectionIsCorrupt) {
  std::vector<uint8_t> bytes = write_vmexe(minimal_executable());
  // Renumber the functions section to an unknown id: it is then skipped, and missing.
  SectionSpan fns = section(list_sections(bytes), SectionId::kFunctions);
  put_le(bytes, fns.header_offset, 999, 4);
  reseal_checksum(bytes);
  EXPECT_EQ(user_error_of([&] { read_vmexe(bytes); }),
            "corrupt executable: missing section 'functions'");
}

TEST(VmexeSections, HugeCountIsRefusedBeforeAllocating) {
  std::vector<uint8_t> bytes = write_vmexe(rich_executable());
  SectionSpan strings = section(list_sections(bytes), SectionId::kStrings);
  put_le(bytes, strings.body_offset, uint64_t{1} << 40, 8);
  reseal_checksum(bytes);
  std::string msg = user_error_of([&] { read_vmexe(bytes); });
  EXPECT_NE(msg.find("1099511627776 strings cannot fit"), std::string::npos) << msg;
}

TEST(VmexeSections, HugeStringLengthIsRefusedBeforeAllocating) {
  std::vector<uint8_t> bytes = write_vmexe(rich_executable());
  SectionSpan meta = section(list_sections(bytes), SectionId::kMeta);
  put_le(bytes, meta.body_offset, ~uint64_t{0} - 3, 8);  // the target's length
  reseal_checksum(bytes);
  std::string msg = user_error_of([&] { read_vmexe(bytes); });
  EXPECT_NE(msg.find("section 'meta': target claims"), std::string::npos) << msg;
}

TEST(VmexeSections, OutOfRangeEnumBytesAreCorrupt) {
  vm::Executable exe = minimal_executable();
  exe.functions[0].code[0].op = static_cast<vm::Opcode>(200);
  std::string msg = user_error_of([&] { read_vmexe(write_vmexe(exe)); });
  EXPECT_NE(msg.find("unknown opcode 200"), std::string::npos) << msg;

  exe = minimal_executable();
  exe.inputs[0].dtype = static_cast<vm::DType>(vm::kNumDTypes);
  msg = user_error_of([&] { read_vmexe(write_vmexe(exe)); });
  EXPECT_NE(msg.find("unknown dtype code 15"), std::string::npos) << msg;

  exe = rich_executable();
  exe.kernels[0].variants[1].conditions[0].kind = static_cast<vm::DimPredicateKind>(9);
  msg = user_error_of([&] { read_vmexe(write_vmexe(exe)); });
  EXPECT_NE(msg.find("unknown condition kind 9"), std::string::npos) << msg;
}

TEST(VmexeFeatures, UnknownFeatureBitIsRefusedByNumber) {
  std::vector<uint8_t> bytes = write_vmexe(rich_executable());
  put_le(bytes, kFeaturesOffset, get_le(bytes, kFeaturesOffset, 8) | (uint64_t{1} << 5), 8);
  reseal_checksum(bytes);
  std::string msg = user_error_of([&] { read_vmexe(bytes); });
  EXPECT_NE(msg.find("feature bit 5,"), std::string::npos) << msg;
  EXPECT_NE(msg.find("newer dynvm"), std::string::npos) << msg;
}

TEST(VmexeFeatures, BitsMustMatchTheLibraries) {
  std::vector<uint8_t> bytes = write_vmexe(rich_executable());
  put_le(bytes, kFeaturesOffset, kFeatureCpuKernels, 8);  // hides the CUDA library
  reseal_checksum(bytes);
  std::string msg = user_error_of([&] { read_vmexe(bytes); });
  EXPECT_NE(msg.find("corrupt executable: the header's feature bits (1)"), std::string::npos)
      << msg;
}

TEST(VmexeMagic, OtherBytesAreNotADynvmExecutable) {
  std::vector<uint8_t> bytes = write_vmexe(minimal_executable());
  bytes[0] = 'X';
  EXPECT_EQ(user_error_of([&] { read_vmexe(bytes); }), "not a dynvm executable (bad magic)");
  std::string text = "{\"not\": \"a vmexe\"}";
  EXPECT_EQ(user_error_of([&] {
              read_vmexe({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
            }),
            "not a dynvm executable (bad magic)");
  EXPECT_EQ(user_error_of([&] { read_vmexe({}); }), "not a dynvm executable (the file is empty)");
}

class VmexeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("vmexe_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(VmexeFiles, SaveThenLoadRoundTripsAndLeavesNoTemporaryFile) {
  vm::Executable exe = rich_executable();
  save_vmexe(exe, path("model.vmexe"));
  save_vmexe(exe, path("model.vmexe"));  // replacing an existing file works too
  expect_same(exe, load_vmexe(path("model.vmexe")));
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "model.vmexe");
  }
  EXPECT_EQ(files, 1u);
}

TEST_F(VmexeFiles, LoadOfMissingFileSaysSo) {
  std::string p = path("absent.vmexe");
  EXPECT_EQ(user_error_of([&] { load_vmexe(p); }),
            "cannot open " + p + ": No such file or directory");
}

TEST_F(VmexeFiles, LoadOfOtherFileNamesIt) {
  std::string p = path("model.onnx");
  std::ofstream(p) << "this is not an executable";
  EXPECT_EQ(user_error_of([&] { load_vmexe(p); }), p + " is not a dynvm executable (bad magic)");
}

TEST_F(VmexeFiles, LoadOfDamagedFileNamesIt) {
  std::vector<uint8_t> bytes = write_vmexe(rich_executable());
  bytes[bytes.size() / 2] ^= 0x10;
  std::string p = path("damaged.vmexe");
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(user_error_of([&] { load_vmexe(p); }),
            "corrupt executable " + p + ": checksum mismatch (the file is damaged)");
}

TEST_F(VmexeFiles, LoadOfDirectoryFails) {
  EXPECT_EQ(user_error_of([&] { load_vmexe(dir_.string()); }),
            "cannot read " + dir_.string() + ": Is a directory");
}

TEST_F(VmexeFiles, SaveIntoMissingDirectoryFailsAndWritesNothing) {
  std::string p = path("no/such/dir/model.vmexe");
  std::string msg = user_error_of([&] { save_vmexe(minimal_executable(), p); });
  EXPECT_EQ(msg, "cannot write " + p + ": No such file or directory");
  EXPECT_FALSE(std::filesystem::exists(path("no")));
}

}  // namespace
}  // namespace dynvm::serializer
