// Reading .vmexe files. The order of checks matters and is deliberate:
//   1. magic -- is this a dynvm executable at all?
//   2. version and feature bits -- can this runtime read it? These come before the
//      checksum because a newer major may checksum (or lay out) differently, and the
//      user should hear "rebuild with a newer dynvm", not "damaged".
//   3. payload size and checksum -- is it intact?
//   4. sections -- decoded with bounded readers that check every count and length
//      against what remains before allocating, and every enum byte against its range.
// Every failure is a UserError with one line. The verifier is not run here:
// vm::Program::load does that.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <new>
#include <optional>

#include "serializer/bounded_io.h"
#include "serializer/format.h"
#include "serializer/testing.h"
#include "serializer/vmexe.h"
#include "vm/error.h"

namespace dynvm::serializer {
namespace {

struct Header {
  uint16_t major = 0;
  uint16_t minor = 0;
  uint64_t features = 0;
};

// Messages that are not about damage name the file like this: "model.vmexe: ...".
std::string where(std::string_view source) {
  return source.empty() ? std::string() : str_cat(source, ": ");
}

std::string version_str(uint16_t major, uint16_t minor) { return str_cat(major, ".", minor); }

Header check_header(std::span<const uint8_t> file, std::string_view source) {
  std::string_view head(reinterpret_cast<const char*>(file.data()),
                        std::min(file.size(), kMagic.size()));
  if (file.empty() || head != kMagic.substr(0, head.size())) {
    std::string what = file.empty() ? "the file is empty" : "bad magic";
    if (source.empty()) user_error("not a dynvm executable (", what, ")");
    user_error(source, " is not a dynvm executable (", what, ")");
  }
  auto truncated_header = [&] {
    corrupt("truncated header (", file.size(), " of ", kHeaderSize, " bytes)");
  };
  if (file.size() < kMinorOffset + 2) truncated_header();

  Header h;
  h.major = static_cast<uint16_t>(load_le(file.data() + kMajorOffset, 2));
  h.minor = static_cast<uint16_t>(load_le(file.data() + kMinorOffset, 2));
  std::string ours = version_str(kFormatMajor, kFormatMinor);
  if (h.major > kFormatMajor) {
    user_error(where(source), "file format ", version_str(h.major, h.minor),
               " is newer than this runtime's ", ours, "; rebuild with a newer dynvm");
  }
  if (h.major < kFormatMajor) {
    user_error(where(source), "file format ", version_str(h.major, h.minor),
               " is older than this runtime's ", ours,
               " and no longer supported; recompile the model");
  }
  if (file.size() < kHeaderSize) truncated_header();

  h.features = load_le(file.data() + kFeaturesOffset, 8);
  if (uint64_t unknown = h.features & ~kKnownFeatures; unknown != 0) {
    std::string bits;
    for (int bit = 0; bit < 64; ++bit) {
      if (unknown >> bit & 1) bits += str_cat(bits.empty() ? "" : ", ", bit);
    }
    user_error(where(source), "the file needs feature bit",
               bits.find(',') == bits.npos ? " " : "s ", bits, ", unknown to this runtime (format ",
               ours, "); rebuild with a newer dynvm");
  }

  uint64_t payload_size = load_le(file.data() + kPayloadSizeOffset, 8);
  uint64_t present = file.size() - kHeaderSize;
  if (payload_size > present) {
    corrupt("truncated (the header promises ", payload_size, " payload bytes, the file has ",
            present, ")");
  }
  if (payload_size < present) {
    corrupt(present - payload_size, " stray bytes after the payload");
  }
  if (load_le(file.data() + kChecksumOffset, 8) != file_checksum(file)) {
    corrupt("checksum mismatch (the file is damaged)");
  }
  return h;
}

struct RawSection {
  SectionSpan span;
  std::span<const uint8_t> body;
};

// Splits the payload into sections. Known ids may appear once; unknown ids (from a
// newer minor) are kept in the list and ignored by the decoders.
std::vector<RawSection> split_sections(std::span<const uint8_t> file) {
  BoundedReader payload(file.subspan(kHeaderSize), "payload");
  std::vector<RawSection> sections;
  std::map<uint32_t, size_t> seen;
  while (payload.remaining() > 0) {
    size_t header_offset = kHeaderSize + payload.position();
    if (payload.remaining() < kSectionHeaderSize) {
      payload.fail("truncated section header at file offset ", header_offset);
    }
    uint32_t id = payload.u32("section id");
    uint64_t size = payload.u64("section length");
    if (size > payload.remaining()) {
      payload.fail("section ", id, " (", section_name(id), ") claims ", size, " bytes but only ",
                   payload.remaining(), " are left");
    }
    size_t body_offset = kHeaderSize + payload.position();
    std::span<const uint8_t> body = payload.take(static_cast<size_t>(size), "section body");
    if (section_name(id) != "unknown" && seen[id]++ > 0) {
      payload.fail("section '", section_name(id), "' appears twice");
    }
    sections.push_back({{id, header_offset, body_offset, static_cast<size_t>(size)}, body});
  }
  return sections;
}

const RawSection& find_section(const std::vector<RawSection>& sections, SectionId id) {
  for (const RawSection& s : sections) {
    if (s.span.id == static_cast<uint32_t>(id)) return s;
  }
  corrupt("missing section '", section_name(static_cast<uint32_t>(id)), "'");
}

std::string section_what(SectionId id) {
  return str_cat("section '", section_name(static_cast<uint32_t>(id)), "'");
}

// ---- Section decoders. `newer` is true when the file's minor is newer than ours: a
// section may then end with fields this runtime does not know. ----

struct Meta {
  std::string target;
  uint32_t entry = 0;
  std::string producer;
};

Meta decode_meta(std::span<const uint8_t> body, const Header& h) {
  BoundedReader r(body, section_what(SectionId::kMeta));
  Meta m;
  m.target = r.string("target");
  m.entry = r.u32("entry");
  if (h.minor >= 1) m.producer = r.string("producer");
  r.expect_end(h.minor > kFormatMinor);
  return m;
}

void decode_strings(std::span<const uint8_t> body, bool newer, vm::Executable& exe) {
  BoundedReader r(body, section_what(SectionId::kStrings));
  size_t n = r.count("strings", 8);
  exe.strings.reserve(n);
  for (size_t i = 0; i < n; ++i) exe.strings.push_back(r.string("string"));
  r.expect_end(newer);
}

void decode_functions(std::span<const uint8_t> body, bool newer, vm::Executable& exe) {
  BoundedReader r(body, section_what(SectionId::kFunctions));
  size_t n = r.count("functions", 8 + 4 + 4 + 8);
  exe.functions.resize(n);
  for (size_t f = 0; f < n; ++f) {
    vm::Function& fn = exe.functions[f];
    fn.name = r.string("function name");
    fn.num_params = r.u32("num_params");
    fn.num_registers = r.u32("num_registers");
    size_t num_instructions = r.count("instructions", 1 + 8);
    fn.code.resize(num_instructions);
    for (size_t pc = 0; pc < num_instructions; ++pc) {
      vm::Instruction& ins = fn.code[pc];
      uint8_t op = r.u8("opcode");
      if (!vm::is_valid_opcode(op)) {
        r.fail("function ", f, " instruction ", pc, ": unknown opcode ", int{op});
      }
      ins.op = static_cast<vm::Opcode>(op);
      size_t num_args = r.count("operands", 8);
      ins.args.resize(num_args);
      for (int64_t& a : ins.args) a = r.i64("operand");
    }
  }
  r.expect_end(newer);
}

void decode_kernels(std::span<const uint8_t> body, uint16_t minor, vm::Executable& exe) {
  BoundedReader r(body, section_what(SectionId::kKernels));
  size_t n = r.count("kernels", 8 + 4 + 4 + 4 + 8);
  exe.kernels.resize(n);
  for (size_t k = 0; k < n; ++k) {
    vm::Kernel& kernel = exe.kernels[k];
    kernel.name = r.string("kernel name");
    kernel.library = r.u32("library index");
    kernel.num_inputs = r.u32("num_inputs");
    kernel.num_outputs = r.u32("num_outputs");
    kernel.variants.resize(r.count("variants", 8 + 8));
    for (vm::KernelVariant& v : kernel.variants) {
      v.symbol = r.string("variant symbol");
      v.conditions.resize(r.count("conditions", 4 + 4 + 1 + 8 + 8));
      for (vm::DimPredicate& p : v.conditions) {
        p.arg = r.u32("condition argument");
        p.axis = r.u32("condition axis");
        uint8_t kind = r.u8("condition kind");
        if (kind >= vm::kNumDimPredicateKinds ||
            (minor < 5 && kind == static_cast<uint8_t>(vm::DimPredicateKind::kDimEq))) {
          r.fail("kernel ", k, ": unknown condition kind ", int{kind});
        }
        p.kind = static_cast<vm::DimPredicateKind>(kind);
        p.a = r.i64("condition a");
        p.b = r.i64("condition b");
      }
    }
  }
  if (minor >= 4) {  // each kernel's schedule note (1.4), after the table
    for (vm::Kernel& kernel : exe.kernels) kernel.schedule = r.string("kernel schedule");
  }
  r.expect_end(minor > kFormatMinor);
}

void decode_libraries(std::span<const uint8_t> body, bool newer, vm::Executable& exe) {
  BoundedReader r(body, section_what(SectionId::kLibraries));
  size_t n = r.count("libraries", 1 + 8 + 8);
  exe.libraries.resize(n);
  for (size_t i = 0; i < n; ++i) {
    vm::KernelLibrary& lib = exe.libraries[i];
    uint8_t format = r.u8("library format");
    if (format >= vm::kNumLibraryFormats) {
      r.fail("library ", i, ": unknown format ", int{format});
    }
    lib.format = static_cast<vm::LibraryFormat>(format);
    lib.target = r.string("library target");
    lib.bytes = r.blob("library bytes");
  }
  r.expect_end(newer);
}

vm::DType decode_dtype(BoundedReader& r, std::string_view field) {
  uint8_t code = r.u8(field);
  if (!vm::is_valid_dtype(code)) r.fail("unknown dtype code ", int{code}, " in ", field);
  return static_cast<vm::DType>(code);
}

std::vector<vm::TensorSpec> decode_tensor_specs(BoundedReader& r, std::string_view field) {
  std::vector<vm::TensorSpec> specs(r.count(field, 8 + 1 + 8));
  for (vm::TensorSpec& s : specs) {
    s.name = r.string("tensor name");
    s.dtype = decode_dtype(r, "tensor dtype");
    s.dims.resize(r.count("dims", 8 + 8 + 8 + 8));
    for (vm::DimSpec& d : s.dims) {
      d.symbol = r.string("dim symbol");
      d.value = r.i64("dim value");
      d.min = r.i64("dim min");
      d.max = r.i64("dim max");
    }
  }
  return specs;
}

void decode_signature(std::span<const uint8_t> body, uint16_t minor, vm::Executable& exe) {
  BoundedReader r(body, section_what(SectionId::kSignature));
  exe.inputs = decode_tensor_specs(r, "inputs");
  exe.outputs = decode_tensor_specs(r, "outputs");
  if (minor >= 3) {  // each entry's form (1.3)
    for (auto* specs : {&exe.inputs, &exe.outputs}) {
      for (vm::TensorSpec& s : *specs) {
        uint8_t form = r.u8("value form");
        if (form >= vm::kNumValueForms) r.fail("unknown value form ", int{form}, " of ", s.name);
        s.form = static_cast<vm::ValueForm>(form);
        s.any_rank = r.u8("any rank") != 0;
      }
    }
  }
  r.expect_end(minor > kFormatMinor);
}

// Constants are described in one section and stored in another. Each constant must lie
// inside the data section, start at an aligned file offset, and begin after the previous
// one ends: the order rule means the bytes allocated for constants never exceed the
// size of the data section, however many constants the metadata claims.
void decode_constants(std::span<const uint8_t> body, bool newer, const RawSection& data,
                      vm::Executable& exe) {
  BoundedReader r(body, section_what(SectionId::kConstants));
  uint64_t data_begin = data.span.body_offset;
  uint64_t data_end = data_begin + data.span.size;
  uint64_t cursor = data_begin;
  size_t n = r.count("constants", 1 + 8 + 8 + 8);
  exe.constants.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    vm::DType dtype = decode_dtype(r, "constant dtype");
    vm::Shape shape(r.count("constant dims", 8));
    uint64_t numel = 1;
    for (int64_t& d : shape) {
      d = r.i64("constant dim");
      if (d < 0) r.fail("constant ", i, ": negative dim ", d);
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel)) {
        r.fail("constant ", i, ": shape ", vm::shape_str(shape), " is too large");
      }
    }
    uint64_t offset = r.u64("constant offset");
    uint64_t nbytes = r.u64("constant size");
    uint64_t expected;
    if (__builtin_mul_overflow(numel, vm::dtype_size(dtype), &expected) || expected != nbytes) {
      r.fail("constant ", i, ": ", nbytes, " bytes do not match its shape ", vm::shape_str(shape),
             " of ", vm::dtype_name(dtype));
    }
    if (offset % kConstantAlignment != 0) {
      r.fail("constant ", i, ": file offset ", offset, " is not ", kConstantAlignment,
             "-byte aligned");
    }
    if (offset < cursor || offset > data_end || nbytes > data_end - offset) {
      r.fail("constant ", i, ": bytes [", offset, ", +", nbytes,
             ") are not after the previous constant inside the data section [", data_begin, ", ",
             data_end, ")");
    }
    cursor = offset + nbytes;
    vm::Tensor t = vm::Tensor::empty(std::move(shape), dtype);
    if (nbytes > 0) std::memcpy(t.data(), data.body.data() + (offset - data_begin), nbytes);
    exe.constants.push_back(std::move(t));
  }
  r.expect_end(newer);
}

uint64_t features_of_libraries(const vm::Executable& exe) {
  uint64_t features = 0;
  for (const vm::KernelLibrary& lib : exe.libraries) {
    features |=
        lib.format == vm::LibraryFormat::kSharedObject ? kFeatureCpuKernels : kFeatureCudaKernels;
  }
  return features;
}

vm::Executable decode(std::span<const uint8_t> file, std::string_view source) {
  Header h = check_header(file, source);
  std::vector<RawSection> sections = split_sections(file);
  for (SectionId id : kRequiredSections) find_section(sections, id);  // all there?
  bool newer = h.minor > kFormatMinor;

  vm::Executable exe;
  Meta meta = decode_meta(find_section(sections, SectionId::kMeta).body, h);
  exe.target = std::move(meta.target);
  exe.producer = std::move(meta.producer);
  exe.entry = meta.entry;
  decode_strings(find_section(sections, SectionId::kStrings).body, newer, exe);
  decode_functions(find_section(sections, SectionId::kFunctions).body, newer, exe);
  decode_kernels(find_section(sections, SectionId::kKernels).body, h.minor, exe);
  decode_libraries(find_section(sections, SectionId::kLibraries).body, newer, exe);
  decode_signature(find_section(sections, SectionId::kSignature).body, h.minor, exe);
  decode_constants(find_section(sections, SectionId::kConstants).body, newer,
                   find_section(sections, SectionId::kConstantData), exe);

  if (uint64_t actual = features_of_libraries(exe); actual != h.features) {
    corrupt("the header's feature bits (", h.features, ") do not match its kernel libraries (",
            actual, ")");
  }
  return exe;
}

// Runs `fn` and turns anything but a dynvm::Error into a one-line UserError: damage is
// reported as "corrupt executable[ <source>]: ...", and no cereal or standard library
// exception escapes.
template <typename Fn>
auto guarded(std::string_view source, Fn&& fn) -> decltype(fn()) {
  std::string prefix =
      source.empty() ? "corrupt executable: " : str_cat("corrupt executable ", source, ": ");
  try {
    return fn();
  } catch (const CorruptFile& e) {
    user_error(prefix, e.what());
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    user_error(where(source), "out of memory while loading the executable");
  } catch (const cereal::Exception& e) {
    user_error(prefix, e.what());
  } catch (const std::exception& e) {
    user_error(prefix, e.what());
  }
}

FileInfo decode_info(std::span<const uint8_t> file, std::string_view source) {
  Header h = check_header(file, source);
  std::vector<RawSection> sections = split_sections(file);
  Meta meta = decode_meta(find_section(sections, SectionId::kMeta).body, h);
  return FileInfo{h.major, h.minor, h.features, std::move(meta.target), std::move(meta.producer)};
}

std::vector<uint8_t> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) user_error("cannot open ", path, ": ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) user_error("cannot read ", path, ": ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) user_error("cannot read ", path, ": ", std::strerror(EISDIR));
  std::vector<uint8_t> bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<size_t>(st.st_size));
  uint8_t chunk[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) user_error("cannot read ", path, ": ", std::strerror(errno));
    if (n == 0) break;
    bytes.insert(bytes.end(), chunk, chunk + n);
  }
  return bytes;
}

}  // namespace

vm::Executable read_vmexe(std::span<const uint8_t> bytes) {
  return guarded("", [&] { return decode(bytes, ""); });
}

FileInfo read_header(std::span<const uint8_t> bytes) {
  return guarded("", [&] { return decode_info(bytes, ""); });
}

vm::Executable load_vmexe(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  return guarded(path, [&] { return decode(bytes, path); });
}

std::vector<SectionSpan> list_sections(std::span<const uint8_t> file) {
  return guarded("", [&] {
    check_header(file, "");
    std::vector<SectionSpan> out;
    for (const RawSection& s : split_sections(file)) out.push_back(s.span);
    return out;
  });
}

}  // namespace dynvm::serializer
