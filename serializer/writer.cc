// Writing .vmexe files: an Executable becomes the header and the tagged sections that
// serializer/README.md describes, and save_vmexe puts them on disk atomically.
//
// The output is a pure function of the Executable (no pointers, times or padding
// garbage reach the file), so the same executable always gives the same bytes.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "serializer/bounded_io.h"
#include "serializer/format.h"
#include "serializer/testing.h"
#include "serializer/vmexe.h"
#include "vm/error.h"

namespace dynvm::serializer {
namespace {

uint64_t align_up(uint64_t v, uint64_t alignment) {
  return (v + alignment - 1) / alignment * alignment;
}

uint64_t features_of(const vm::Executable& exe) {
  uint64_t features = 0;
  for (const vm::KernelLibrary& lib : exe.libraries) {
    features |=
        lib.format == vm::LibraryFormat::kSharedObject ? kFeatureCpuKernels : kFeatureCudaKernels;
  }
  return features;
}

// The constants as host tensors: a device constant is copied rather than read through a
// device pointer.
std::vector<vm::Tensor> host_constants(const vm::Executable& exe) {
  std::vector<vm::Tensor> out;
  out.reserve(exe.constants.size());
  for (size_t i = 0; i < exe.constants.size(); ++i) {
    const vm::Tensor& c = exe.constants[i];
    DYNVM_INTERNAL_CHECK(c.defined(), "constant ", i, " is not defined");
    DYNVM_INTERNAL_CHECK(vm::is_valid_dtype(static_cast<int64_t>(c.dtype())), "constant ", i,
                         " has a bad dtype");
    out.push_back(c.device().type == vm::DeviceType::kCPU ? c : c.copy_to(vm::kCpu));
  }
  return out;
}

void write_meta(ByteWriter& w, const vm::Executable& exe, uint16_t minor) {
  w.string(exe.target);
  w.u32(exe.entry);
  if (minor >= 1) w.string(exe.producer);  // added in 1.1
}

void write_strings(ByteWriter& w, const vm::Executable& exe) {
  w.u64(exe.strings.size());
  for (const std::string& s : exe.strings) w.string(s);
}

void write_functions(ByteWriter& w, const vm::Executable& exe) {
  w.u64(exe.functions.size());
  for (const vm::Function& fn : exe.functions) {
    w.string(fn.name);
    w.u32(fn.num_params);
    w.u32(fn.num_registers);
    w.u64(fn.code.size());
    for (const vm::Instruction& ins : fn.code) {
      w.u8(static_cast<uint8_t>(ins.op));
      // An explicit count rather than the one the opcode table implies: a file whose
      // arity is wrong then still decodes, and the verifier explains what is wrong.
      w.u64(ins.args.size());
      for (int64_t a : ins.args) w.i64(a);
    }
  }
}

void write_kernels(ByteWriter& w, const vm::Executable& exe, uint16_t minor) {
  w.u64(exe.kernels.size());
  for (const vm::Kernel& k : exe.kernels) {
    w.string(k.name);
    w.u32(k.library);
    w.u32(k.num_inputs);
    w.u32(k.num_outputs);
    w.u64(k.variants.size());
    for (const vm::KernelVariant& v : k.variants) {
      w.string(v.symbol);
      w.u64(v.conditions.size());
      for (const vm::DimPredicate& p : v.conditions) {
        DYNVM_INTERNAL_CHECK(minor >= 5 || p.kind != vm::DimPredicateKind::kDimEq, "format 1.",
                             minor, " has no condition between two arguments' dims (kernel ",
                             k.name, ")");
        w.u32(p.arg);
        w.u32(p.axis);
        w.u8(static_cast<uint8_t>(p.kind));
        w.i64(p.a);
        w.i64(p.b);
      }
    }
  }
  if (minor >= 4) {
    for (const vm::Kernel& k : exe.kernels) w.string(k.schedule);
  }
}

void write_libraries(ByteWriter& w, const vm::Executable& exe) {
  w.u64(exe.libraries.size());
  for (const vm::KernelLibrary& lib : exe.libraries) {
    w.u8(static_cast<uint8_t>(lib.format));
    w.string(lib.target);
    w.blob(lib.bytes);
  }
}

void write_tensor_specs(ByteWriter& w, const std::vector<vm::TensorSpec>& specs) {
  w.u64(specs.size());
  for (const vm::TensorSpec& s : specs) {
    w.string(s.name);
    w.u8(static_cast<uint8_t>(s.dtype));
    w.u64(s.dims.size());
    for (const vm::DimSpec& d : s.dims) {
      w.string(d.symbol);
      w.i64(d.value);
      w.i64(d.min);
      w.i64(d.max);
    }
  }
}

void write_signature(ByteWriter& w, const vm::Executable& exe, uint16_t minor) {
  write_tensor_specs(w, exe.inputs);
  write_tensor_specs(w, exe.outputs);
  if (minor < 3) {
    for (const auto* specs : {&exe.inputs, &exe.outputs}) {
      for (const vm::TensorSpec& s : *specs) {
        DYNVM_INTERNAL_CHECK(s.form == vm::ValueForm::kTensor && !s.any_rank, "format 1.", minor,
                             " has no sequences or optionals (", s.name, ")");
      }
    }
    return;
  }
  // Added in 1.3: each entry's form, inputs then outputs.
  for (const auto* specs : {&exe.inputs, &exe.outputs}) {
    for (const vm::TensorSpec& s : *specs) {
      w.u8(static_cast<uint8_t>(s.form));
      w.u8(s.any_rank ? 1 : 0);
    }
  }
}

// The size of the constants section, known before the offsets it holds are: every
// field has a fixed width.
uint64_t constants_section_size(const std::vector<vm::Tensor>& constants) {
  uint64_t size = 8;
  for (const vm::Tensor& c : constants) size += 1 + 8 + 8 * c.shape().size() + 8 + 8;
  return size;
}

// File offsets of the constants' bytes when the constant data section's body starts at
// `data_start`: each aligned, in order, without overlap.
std::vector<uint64_t> layout_constants(const std::vector<vm::Tensor>& constants,
                                       uint64_t data_start) {
  std::vector<uint64_t> offsets;
  uint64_t cursor = data_start;
  for (const vm::Tensor& c : constants) {
    uint64_t offset = align_up(cursor, kConstantAlignment);
    offsets.push_back(offset);
    cursor = offset + c.nbytes();
  }
  return offsets;
}

void write_constants(ByteWriter& w, const std::vector<vm::Tensor>& constants,
                     const std::vector<uint64_t>& offsets) {
  w.u64(constants.size());
  for (size_t i = 0; i < constants.size(); ++i) {
    const vm::Tensor& c = constants[i];
    w.u8(static_cast<uint8_t>(c.dtype()));
    w.u64(c.shape().size());
    for (int64_t d : c.shape()) w.i64(d);
    w.u64(offsets[i]);
    w.u64(c.nbytes());
  }
}

void write_constant_data(ByteWriter& w, const std::vector<vm::Tensor>& constants,
                         const std::vector<uint64_t>& offsets, uint64_t data_start) {
  for (size_t i = 0; i < constants.size(); ++i) {
    w.zeros(offsets[i] - (data_start + w.size()));
    const vm::Tensor& c = constants[i];
    if (c.nbytes() > 0) w.raw({static_cast<const uint8_t*>(c.data()), c.nbytes()});
  }
}

void append_section(ByteWriter& file, SectionId id, ByteWriter& body) {
  file.u32(static_cast<uint32_t>(id));
  file.u64(body.size());
  file.raw(body.take());
}

template <typename Fn>
void append_section(ByteWriter& file, SectionId id, Fn&& write_body) {
  ByteWriter body;
  write_body(body);
  append_section(file, id, body);
}

}  // namespace

std::vector<uint8_t> write_vmexe(const vm::Executable& exe, const WriteOptions& options) {
  DYNVM_INTERNAL_CHECK(options.minor <= kFormatMinor, "cannot write format ", kFormatMajor, ".",
                       options.minor, ", this build writes up to ", kFormatMajor, ".",
                       kFormatMinor);
  std::vector<vm::Tensor> constants = host_constants(exe);

  ByteWriter file;
  file.raw({reinterpret_cast<const uint8_t*>(kMagic.data()), kMagic.size()});
  file.u16(kFormatMajor);
  file.u16(options.minor);
  file.u64(features_of(exe));
  file.u64(0);  // payload size, patched below
  file.u64(0);  // checksum, patched below

  // Small sections first, so that read_header finds the meta section at once and the
  // bulk of the file (constant data) comes last.
  append_section(file, SectionId::kMeta, [&](ByteWriter& w) { write_meta(w, exe, options.minor); });
  append_section(file, SectionId::kStrings, [&](ByteWriter& w) { write_strings(w, exe); });
  append_section(file, SectionId::kFunctions, [&](ByteWriter& w) { write_functions(w, exe); });
  append_section(file, SectionId::kKernels,
                 [&](ByteWriter& w) { write_kernels(w, exe, options.minor); });
  append_section(file, SectionId::kLibraries, [&](ByteWriter& w) { write_libraries(w, exe); });
  append_section(file, SectionId::kSignature,
                 [&](ByteWriter& w) { write_signature(w, exe, options.minor); });

  // The constants section holds absolute file offsets into the data section that follows
  // it; its own size does not depend on their values.
  uint64_t data_start =
      file.size() + kSectionHeaderSize + constants_section_size(constants) + kSectionHeaderSize;
  std::vector<uint64_t> offsets = layout_constants(constants, data_start);
  append_section(file, SectionId::kConstants,
                 [&](ByteWriter& w) { write_constants(w, constants, offsets); });
  DYNVM_INTERNAL_CHECK(file.size() + kSectionHeaderSize == data_start);
  append_section(file, SectionId::kConstantData,
                 [&](ByteWriter& w) { write_constant_data(w, constants, offsets, data_start); });

  std::vector<uint8_t> bytes = file.take();
  store_le(bytes.data() + kPayloadSizeOffset, bytes.size() - kHeaderSize, 8);
  reseal_checksum(bytes);
  return bytes;
}

void reseal_checksum(std::vector<uint8_t>& bytes) {
  DYNVM_INTERNAL_CHECK(bytes.size() >= kHeaderSize, "no room for a header");
  store_le(bytes.data() + kChecksumOffset, file_checksum(bytes), 8);
}

namespace {

// Closes the descriptor and removes the temporary file unless disarmed.
class TempFile {
 public:
  TempFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  // Closes the descriptor; returns errno on failure, 0 on success.
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc == 0 ? 0 : errno;
  }
  void keep() { path_.clear(); }

 private:
  int fd_;
  std::string path_;
};

}  // namespace

void save_vmexe(const vm::Executable& exe, const std::string& path) {
  std::vector<uint8_t> bytes = write_vmexe(exe);
  // A unique name in the same directory, so the final rename stays within one file
  // system and is atomic; O_EXCL never reuses someone else's file.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = str_cat(path, ".tmp.", ::getpid(), ".", counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) user_error("cannot write ", path, ": ", std::strerror(errno));
  TempFile file(fd, tmp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(file.fd(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) user_error("cannot write ", path, ": ", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  // Durable before it becomes visible: after a crash the name holds the old file or the
  // whole new one.
  if (::fsync(file.fd()) != 0) user_error("cannot write ", path, ": ", std::strerror(errno));
  if (int err = file.close(); err != 0) {
    user_error("cannot write ", path, ": ", std::strerror(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    user_error("cannot write ", path, ": ", std::strerror(errno));
  }
  file.keep();
}

}  // namespace dynvm::serializer
