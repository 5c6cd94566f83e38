// The disassembler (see disassembler.h; the language is docs/vmasm.md). It prints the
// tables in the order the assembler reads them back into the same indices: libraries,
// kernels, strings, constants, then functions. Instructions are printed generically
// from kOpcodeInfo, each operand by its OperandKind.
#include "vm/asm/disassembler.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "vm/asm/asm_syntax.h"
#include "vm/error.h"

namespace dynvm::vm {
namespace {

constexpr size_t kLabelWidth = 10;        // "L1234:" and padding
constexpr size_t kMnemonicWidth = 15;     // longest mnemonic + 2
constexpr size_t kMinCommentColumn = 44;  // of the pc comments
constexpr size_t kMaxCommentColumn = 72;
constexpr size_t kWrapColumn = 96;  // of constant values and library hex
constexpr size_t kHexBytesPerLine = 32;
constexpr size_t kPreviewElements = 8;  // of an abbreviated constant

std::string human_bytes(size_t n) {
  if (n < 1024) return str_cat(n, " B");
  char buf[32];
  double v = static_cast<double>(n) / 1024;
  const char* unit = "KiB";
  if (v >= 1024) {
    v /= 1024;
    unit = "MiB";
  }
  if (v >= 1024) {
    v /= 1024;
    unit = "GiB";
  }
  std::snprintf(buf, sizeof buf, "%.1f %s", v, unit);
  return buf;
}

std::string plural(size_t n, std::string_view word) {
  if (n != 1 && word.ends_with("ry"))
    return str_cat(n, " ", word.substr(0, word.size() - 1), "ies");
  return str_cat(n, " ", word, n == 1 ? "" : "s");
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string format_dim(const DimSpec& d) {
  if (!d.is_symbolic()) return std::to_string(d.value);
  std::string s = vmasm::name_or_quoted(d.symbol);
  bool bounded = d.max != std::numeric_limits<int64_t>::max();
  if (d.min != 0 || bounded) s += str_cat(":", d.min, "..", bounded ? std::to_string(d.max) : "");
  return s;
}

std::string format_spec(const TensorSpec& s) {
  std::string out = str_cat(vmasm::name_or_quoted(s.name), " ");
  out += is_valid_dtype(static_cast<int64_t>(s.dtype))
             ? std::string(dtype_name(s.dtype))
             : str_cat("?dtype(", static_cast<int>(s.dtype), ")");
  out += " [";
  for (size_t i = 0; i < s.dims.size(); ++i) out += str_cat(i ? ", " : "", format_dim(s.dims[i]));
  return out + "]";
}

std::string format_condition(const DimPredicate& p) {
  std::string dim = str_cat("arg", p.arg, ".dim", p.axis);
  switch (p.kind) {
    case DimPredicateKind::kEq:
      return str_cat(dim, " == ", p.a);
    case DimPredicateKind::kModEq:
      return str_cat(dim, " % ", p.a, " == ", p.b);
    case DimPredicateKind::kRange:
      return str_cat(dim, " in ", p.a, "..", p.b);
    case DimPredicateKind::kDimEq:
      return str_cat(dim, " == arg", p.a, ".dim", p.b);
  }
  return str_cat(dim, " ?cond(", static_cast<int>(p.kind), ")");
}

std::string_view library_format_word(LibraryFormat f) {
  switch (f) {
    case LibraryFormat::kSharedObject:
      return "so";
    case LibraryFormat::kPtx:
      return "ptx";
    case LibraryFormat::kCubin:
      return "cubin";
  }
  return "?";
}

// The text values of a host tensor's elements, parts of complex elements apart.
std::vector<std::string> element_texts(const Tensor& t, size_t max_elements) {
  DType part = vmasm::element_part_type(t.dtype());
  size_t n = std::min<size_t>(static_cast<size_t>(t.numel()), max_elements) *
             vmasm::parts_per_element(t.dtype());
  std::vector<std::string> out;
  out.reserve(n);
  const auto* data = static_cast<const uint8_t*>(t.data());
  for (size_t i = 0; i < n; ++i)
    out.push_back(vmasm::format_scalar(part, data + i * dtype_size(part)));
  return out;
}

// Names unique among `names` print as themselves, the others as #index.
std::vector<std::string> reference_names(const std::vector<std::string>& names) {
  std::map<std::string, int> count;
  for (const std::string& n : names) ++count[n];
  std::vector<std::string> refs;
  for (size_t i = 0; i < names.size(); ++i) {
    refs.push_back(count[names[i]] == 1 ? vmasm::name_or_quoted(names[i]) : str_cat("#", i));
  }
  return refs;
}

class Disassembler {
 public:
  Disassembler(const Executable& exe, const DisasmOptions& options) : exe_(exe), options_(options) {
    std::vector<std::string> names;
    for (const Function& f : exe.functions) names.push_back(f.name);
    function_refs_ = reference_names(names);
    names.clear();
    for (const Kernel& k : exe.kernels) names.push_back(k.name);
    kernel_refs_ = reference_names(names);
  }

  std::string run() {
    print_header();
    print_globals();
    for (size_t i = 0; i < exe_.libraries.size(); ++i) print_library(i);
    for (size_t i = 0; i < exe_.kernels.size(); ++i) print_kernel(i);
    if (!exe_.strings.empty()) out_ += "\n";
    for (size_t i = 0; i < exe_.strings.size(); ++i) {
      out_ += str_cat(".string s", i, " ", vmasm::quote(exe_.strings[i]), "\n");
    }
    if (!exe_.constants.empty()) out_ += "\n";
    for (size_t i = 0; i < exe_.constants.size(); ++i) print_constant(i);
    for (size_t i = 0; i < exe_.functions.size(); ++i) print_function(i);
    return std::move(out_);
  }

 private:
  void print_header() {
    size_t instructions = 0;
    for (const Function& f : exe_.functions) instructions += f.code.size();
    size_t const_bytes = 0;
    for (const Tensor& c : exe_.constants) const_bytes += c.defined() ? c.nbytes() : 0;
    size_t variants = 0;
    for (const Kernel& k : exe_.kernels) variants += k.variants.size();
    size_t lib_bytes = 0;
    for (const KernelLibrary& l : exe_.libraries) lib_bytes += l.bytes.size();

    out_ += "; dynvm executable\n";
    out_ += str_cat(";   entry      ",
                    exe_.entry < exe_.functions.size()
                        ? str_cat(vmasm::name_or_quoted(exe_.functions[exe_.entry].name),
                                  " (function ", exe_.entry, ")")
                        : str_cat("#", exe_.entry, " (out of range)"),
                    "\n");
    auto specs = [&](std::string_view title, const std::vector<TensorSpec>& list) {
      if (list.empty()) out_ += str_cat(";   ", pad(std::string(title), 11), "(none)\n");
      for (size_t i = 0; i < list.size(); ++i) {
        // tensor_spec_str trusts the dtype; an unverified executable may have any.
        std::string spec = is_valid_dtype(static_cast<int64_t>(list[i].dtype))
                               ? tensor_spec_str(list[i])
                               : format_spec(list[i]);
        out_ += str_cat(";   ", pad(std::string(i == 0 ? title : ""), 11), spec, "\n");
      }
    };
    specs("inputs", exe_.inputs);
    specs("outputs", exe_.outputs);
    out_ += str_cat(";   code       ", plural(exe_.functions.size(), "function"), ", ",
                    plural(instructions, "instruction"), "\n");
    out_ += str_cat(";   data       ", plural(exe_.constants.size(), "constant"), " (",
                    human_bytes(const_bytes), "), ", plural(exe_.strings.size(), "string"), "\n");
    out_ += str_cat(";   kernels    ", plural(exe_.kernels.size(), "kernel"), " (",
                    plural(variants, "variant"), "), ", plural(exe_.libraries.size(), "library"),
                    " (", human_bytes(lib_bytes), ")\n");
  }

  void print_globals() {
    out_ += "\n";
    if (!exe_.target.empty()) out_ += str_cat(".target ", vmasm::quote(exe_.target), "\n");
    if (!exe_.producer.empty()) out_ += str_cat(".producer ", vmasm::quote(exe_.producer), "\n");
    out_ += str_cat(
        ".entry ",
        exe_.entry < exe_.functions.size() ? function_refs_[exe_.entry] : str_cat("#", exe_.entry),
        "\n");
    for (const TensorSpec& s : exe_.inputs) out_ += str_cat(".input  ", format_spec(s), "\n");
    for (const TensorSpec& s : exe_.outputs) out_ += str_cat(".output ", format_spec(s), "\n");
  }

  void print_library(size_t i) {
    const KernelLibrary& lib = exe_.libraries[i];
    out_ += str_cat("\n; library ", i, ": ", library_format_word(lib.format), ", target ",
                    vmasm::quote(lib.target), ", ", human_bytes(lib.bytes.size()), "\n");
    out_ += str_cat(".library_bytes format=", library_format_word(lib.format),
                    " target=", vmasm::quote(lib.target), " size=", lib.bytes.size(), " = ");
    if (!options_.show_library_bytes) {
      out_ += "...\n";
      return;
    }
    out_ += "{\n";
    static constexpr char kHex[] = "0123456789abcdef";
    for (size_t at = 0; at < lib.bytes.size(); at += kHexBytesPerLine) {
      out_ += "    ";
      size_t end = std::min(lib.bytes.size(), at + kHexBytesPerLine);
      for (size_t b = at; b < end; ++b) {
        out_ += kHex[lib.bytes[b] >> 4];
        out_ += kHex[lib.bytes[b] & 15];
      }
      out_ += "\n";
    }
    out_ += "}\n";
  }

  void print_kernel(size_t i) {
    const Kernel& k = exe_.kernels[i];
    std::string line = str_cat(".kernel ", vmasm::name_or_quoted(k.name), " inputs=", k.num_inputs,
                               " outputs=", k.num_outputs, " library=", k.library);
    out_ += str_cat("\n", pad(line, 48), "  ; kernel ", i, "\n");
    for (const KernelVariant& v : k.variants) {
      out_ += str_cat("    variant ", vmasm::name_or_quoted(v.symbol));
      for (size_t c = 0; c < v.conditions.size(); ++c) {
        out_ += str_cat(c ? ", " : " when ", format_condition(v.conditions[c]));
      }
      out_ += "\n";
    }
  }

  void print_constant(size_t i) {
    const Tensor& t = exe_.constants[i];
    if (!t.defined()) {
      out_ += str_cat("; constant ", i, " is not a tensor\n");
      return;
    }
    std::string head =
        str_cat(".const c", i, " ", dtype_name(t.dtype()), " ", shape_str(t.shape()));
    size_t n = static_cast<size_t>(t.numel());
    if (n == 0) {
      out_ += head + "\n";
      return;
    }
    if (t.device().type != DeviceType::kCPU) {
      out_ += str_cat(head, " = ... (", plural(n, "element"), ")  ; on ", device_name(t.device()),
                      "\n");
      return;
    }
    if (n > options_.max_constant_elements) {
      std::string preview;
      for (const std::string& v : element_texts(t, kPreviewElements)) preview += v + " ";
      out_ += str_cat(head, " = ... (", plural(n, "element"), ")  ; ", preview,
                      n > kPreviewElements ? "..." : "", "\n");
      return;
    }
    std::vector<std::string> values = element_texts(t, n);
    std::string inline_text = head + " =";
    for (const std::string& v : values) inline_text += " " + v;
    if (inline_text.size() <= kWrapColumn) {
      out_ += inline_text + "\n";
      return;
    }
    out_ += head + " = {\n";
    std::string line = "   ";
    for (const std::string& v : values) {
      if (line.size() + 1 + v.size() > kWrapColumn) {
        out_ += line + "\n";
        line = "   ";
      }
      line += " " + v;
    }
    out_ += line + "\n}\n";
  }

  std::string operand(OperandKind kind, int64_t v, const Function& fn) const {
    auto in = [&](size_t n) { return v >= 0 && static_cast<uint64_t>(v) < n; };
    switch (kind) {
      case OperandKind::Dst:
      case OperandKind::Reg:
      case OperandKind::Regs:
        return v >= 0 ? str_cat("r", v) : str_cat("?reg(", v, ")");
      case OperandKind::Imm:
        return std::to_string(v);
      case OperandKind::Const:
        return in(exe_.constants.size()) ? str_cat("c", v) : str_cat("#", v);
      case OperandKind::Str:
        return in(exe_.strings.size()) ? str_cat("s", v) : str_cat("#", v);
      case OperandKind::Func:
        return in(exe_.functions.size()) ? function_refs_[v] : str_cat("#", v);
      case OperandKind::Kernel:
        return in(exe_.kernels.size()) ? kernel_refs_[v] : str_cat("#", v);
      case OperandKind::Target:
        return in(fn.code.size()) ? str_cat("L", v) : str_cat("@", v);
      case OperandKind::DType:
        return is_valid_dtype(v) ? std::string(dtype_name(static_cast<DType>(v)))
                                 : str_cat("?dtype(", v, ")");
      case OperandKind::Device:
        return vmasm::format_device(v);
      case OperandKind::Cmp:
        return v >= 0 && v < kNumCmpKinds ? std::string(cmp_name(static_cast<CmpKind>(v)))
                                          : str_cat("?cmp(", v, ")");
    }
    return "?";
  }

  // What a reader wants to see beside an operand without looking it up.
  std::string note(OperandKind kind, int64_t v) const {
    auto in = [&](size_t n) { return v >= 0 && static_cast<uint64_t>(v) < n; };
    if (kind == OperandKind::Str && in(exe_.strings.size())) {
      const std::string& s = exe_.strings[v];
      return s.size() > 40 ? vmasm::quote(s.substr(0, 37)) + "..." : vmasm::quote(s);
    }
    if (kind == OperandKind::Const && in(exe_.constants.size()) && exe_.constants[v].defined()) {
      const Tensor& t = exe_.constants[v];
      return str_cat(dtype_name(t.dtype()), " ", shape_str(t.shape()));
    }
    return "";
  }

  void print_function(size_t f) {
    const Function& fn = exe_.functions[f];
    std::string head = str_cat(".func ", vmasm::name_or_quoted(fn.name), " params=", fn.num_params,
                               " regs=", fn.num_registers);
    out_ += str_cat("\n", pad(head, 48), "  ; function ", f, ", ",
                    plural(fn.code.size(), "instruction"), "\n");
    std::vector<bool> is_target(fn.code.size(), false);
    for (const Instruction& ins : fn.code) {
      if (!is_valid_opcode(static_cast<int64_t>(ins.op))) continue;
      const OpcodeInfo& info = opcode_info(ins.op);
      for (size_t i = 0; i < ins.args.size() && i < info.num_operands; ++i) {
        int64_t v = ins.args[i];
        if (info.operands[i] == OperandKind::Target && v >= 0 &&
            static_cast<uint64_t>(v) < fn.code.size()) {
          is_target[v] = true;
        }
      }
    }
    std::vector<std::pair<std::string, std::string>> lines;  // code, comment
    size_t width = 0;
    for (size_t pc = 0; pc < fn.code.size(); ++pc) {
      const Instruction& ins = fn.code[pc];
      std::string label = is_target[pc] ? str_cat("L", pc, ":") : "";
      std::string comment = std::to_string(pc);
      std::string code;
      if (!is_valid_opcode(static_cast<int64_t>(ins.op))) {
        code = "; invalid opcode " + std::to_string(static_cast<int>(ins.op));
      } else {
        const OpcodeInfo& info = opcode_info(ins.op);
        size_t fixed = info.variadic ? info.num_operands - 1u : info.num_operands;
        code =
            pad(pad(label, kLabelWidth) + std::string(info.mnemonic), kLabelWidth + kMnemonicWidth);
        for (size_t i = 0; i < ins.args.size(); ++i) {
          OperandKind kind = i < fixed ? info.operands[i] : OperandKind::Regs;
          code += str_cat(i ? ", " : "", operand(kind, ins.args[i], fn));
          if (std::string n = note(kind, ins.args[i]); !n.empty()) comment += "  " + n;
        }
        while (!code.empty() && code.back() == ' ') code.pop_back();
      }
      width = std::max(width, code.size());
      lines.emplace_back(std::move(code), std::move(comment));
    }
    size_t column = std::clamp(width + 2, kMinCommentColumn, kMaxCommentColumn);
    for (auto& [code, comment] : lines) out_ += str_cat(pad(code, column), "; ", comment, "\n");
    out_ += ".end\n";
  }

  const Executable& exe_;
  const DisasmOptions& options_;
  std::vector<std::string> function_refs_;
  std::vector<std::string> kernel_refs_;
  std::string out_;
};

}  // namespace

std::string disassemble(const Executable& exe, const DisasmOptions& options) {
  return Disassembler(exe, options).run();
}

}  // namespace dynvm::vm
