// The .vmasm assembler (see assembler.h; the language is docs/vmasm.md). Two passes:
// the first reads every line into the Executable's tables and keeps each instruction's
// operand tokens; the second resolves operands (names, labels, registers) once every
// function, kernel, constant and string is known, so anything may be used before it is
// declared. Instructions are read generically from kOpcodeInfo: each operand by its
// OperandKind, with no per-opcode code.
#include "vm/asm/assembler.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "vm/asm/asm_syntax.h"
#include "vm/error.h"
#include "vm/verifier.h"

namespace dynvm::vm {
namespace {

using vmasm::Token;
using vmasm::TokenKind;

struct PendingInstruction {
  Opcode op;
  std::vector<Token> operands;
  int line;
};

struct PendingFunction {
  int line = 0;  // of its .func
  bool regs_given = false;
  std::vector<PendingInstruction> code;
  std::map<std::string, uint32_t> labels;  // name -> pc
};

class Assembler {
 public:
  Assembler(std::string_view text, const std::string& source_name, const std::string& base_dir)
      : tokens_(vmasm::tokenize(text, source_name)), source_(source_name), base_dir_(base_dir) {}

  Executable run() {
    while (peek().kind != TokenKind::kEnd) parse_line();
    if (current_ >= 0) {
      fail(pending_[current_].line, "function ", exe_.functions[current_].name, " has no .end");
    }
    resolve();
    return std::move(exe_);
  }

 private:
  // ---- tokens -------------------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool at_line_end() const {
    return peek().kind == TokenKind::kNewline || peek().kind == TokenKind::kEnd;
  }

  template <typename... Args>
  [[noreturn]] void fail(int line, Args&&... what) const {
    user_error(source_, ":", line, ": ", std::forward<Args>(what)...);
  }

  void end_line() {
    if (!at_line_end())
      fail(peek().line, "unexpected ", vmasm::describe(peek()), " at the end of the line");
    next();
  }
  const Token& expect_word(std::string_view what) {
    if (peek().kind != TokenKind::kWord)
      fail(peek().line, "expected ", what, ", got ", vmasm::describe(peek()));
    return next();
  }
  void expect_punct(std::string_view p) {
    if (!peek().is_punct(p)) fail(peek().line, "expected '", p, "', got ", vmasm::describe(peek()));
    next();
  }
  std::string expect_string(std::string_view what) {
    if (peek().kind != TokenKind::kString) {
      fail(peek().line, "expected ", what, " (a quoted string), got ", vmasm::describe(peek()));
    }
    return next().text;
  }
  // A name: an identifier, or any text in quotes.
  std::string expect_name(std::string_view what) {
    const Token& t = peek();
    if (t.kind == TokenKind::kString) return next().text;
    if (t.kind != TokenKind::kWord || !vmasm::is_identifier(t.text)) {
      fail(t.line, "expected ", what, " (a name), got ", vmasm::describe(t));
    }
    return next().text;
  }
  int64_t to_int(const Token& t, std::string_view what) const {
    std::optional<int64_t> v;
    if (t.kind == TokenKind::kWord) v = vmasm::parse_int(t.text);
    if (!v) fail(t.line, "expected ", what, " (an integer), got ", vmasm::describe(t));
    return *v;
  }
  uint32_t to_u32(const Token& t, std::string_view what) const {
    int64_t v = to_int(t, what);
    if (v < 0 || v > std::numeric_limits<uint32_t>::max()) {
      fail(t.line, what, " ", v, " is out of range");
    }
    return static_cast<uint32_t>(v);
  }
  DType expect_dtype() {
    const Token& t = expect_word("a dtype");
    std::optional<DType> d = parse_dtype(t.text);
    if (!d) fail(t.line, "unknown dtype ", vmasm::describe(t));
    return *d;
  }

  // key=value pairs (value: a word or a string) until something else.
  std::map<std::string, Token> parse_attributes(std::initializer_list<std::string_view> allowed) {
    std::map<std::string, Token> attrs;
    while (peek().kind == TokenKind::kWord && peek(1).is_punct("=")) {
      const Token& key = next();
      next();
      if (std::find(allowed.begin(), allowed.end(), key.text) == allowed.end()) {
        std::string list;
        for (std::string_view a : allowed) list += str_cat(list.empty() ? "" : ", ", a);
        fail(key.line, "unknown attribute '", key.text, "' (expected ", list, ")");
      }
      if (peek().kind != TokenKind::kWord && peek().kind != TokenKind::kString) {
        fail(peek().line, "expected a value for ", key.text, ", got ", vmasm::describe(peek()));
      }
      if (!attrs.emplace(key.text, next()).second) {
        fail(key.line, "attribute '", key.text, "' given twice");
      }
    }
    return attrs;
  }

  // ---- lines --------------------------------------------------------------------------
  void parse_line() {
    const Token& t = peek();
    if (t.kind == TokenKind::kNewline) {
      next();
      return;
    }
    if (t.kind == TokenKind::kWord && t.text.size() > 1 && t.text.back() == ':') {
      define_label(next());
      if (at_line_end()) {
        next();
        return;
      }
    }
    const Token& head = peek();
    if (head.kind == TokenKind::kWord && head.text[0] == '.') {
      parse_directive(next());
    } else if (current_ >= 0) {
      parse_instruction(next());
    } else if (head.is(TokenKind::kWord, "variant")) {
      next();
      parse_variant(head.line);
    } else {
      fail(head.line, "expected a directive (.func, .const, ...), got ", vmasm::describe(head),
           "; instructions belong inside .func ... .end");
    }
  }

  void define_label(const Token& t) {
    std::string name = t.text.substr(0, t.text.size() - 1);
    if (current_ < 0) fail(t.line, "label '", name, "' outside a function");
    if (!vmasm::is_identifier(name)) fail(t.line, "bad label name '", name, "'");
    PendingFunction& f = pending_[current_];
    if (!f.labels.emplace(name, static_cast<uint32_t>(f.code.size())).second) {
      fail(t.line, "label '", name, "' defined twice in function ", exe_.functions[current_].name);
    }
  }

  void parse_directive(const Token& d) {
    const std::string& name = d.text;
    if (name != ".end" && current_ >= 0) {
      fail(d.line, "directive ", name, " inside function ", exe_.functions[current_].name,
           " (missing .end?)");
    }
    if (name != ".kernel") current_kernel_ = -1;
    if (name == ".target") {
      set_once(d, exe_.target, have_target_);
    } else if (name == ".producer") {
      set_once(d, exe_.producer, have_producer_);
    } else if (name == ".entry") {
      if (entry_.kind != TokenKind::kEnd) fail(d.line, "duplicate .entry");
      entry_ = next();
      if (entry_.kind != TokenKind::kWord && entry_.kind != TokenKind::kString) {
        fail(entry_.line, "expected the entry function's name, got ", vmasm::describe(entry_));
      }
    } else if (name == ".input" || name == ".output") {
      (name == ".input" ? exe_.inputs : exe_.outputs).push_back(parse_tensor_spec());
    } else if (name == ".const") {
      parse_const(d.line);
    } else if (name == ".string") {
      std::string key = expect_name("a string name");
      if (!string_names_.emplace(key, exe_.strings.size()).second) {
        fail(d.line, "string '", key, "' declared twice");
      }
      exe_.strings.push_back(expect_string("the string's text"));
    } else if (name == ".library") {
      parse_library_file(d.line);
    } else if (name == ".library_bytes") {
      parse_library_bytes(d.line);
    } else if (name == ".kernel") {
      parse_kernel();
    } else if (name == ".func") {
      parse_func(d.line);
    } else if (name == ".end") {
      if (current_ < 0) fail(d.line, ".end outside a function");
      current_ = -1;
    } else {
      fail(d.line, "unknown directive ", name);
    }
    end_line();
  }

  void set_once(const Token& d, std::string& field, bool& seen) {
    if (seen) fail(d.line, "duplicate ", d.text);
    seen = true;
    field = expect_string(d.text.substr(1));
  }

  // ---- signature ----------------------------------------------------------------------
  TensorSpec parse_tensor_spec() {
    TensorSpec spec;
    spec.name = expect_name("a tensor name");
    spec.dtype = expect_dtype();
    expect_punct("[");
    while (!peek().is_punct("]")) {
      spec.dims.push_back(parse_dim());
      if (peek().is_punct(","))
        next();
      else if (!peek().is_punct("]"))
        fail(peek().line, "expected ',' or ']', got ", vmasm::describe(peek()));
    }
    next();
    return spec;
  }

  DimSpec parse_dim() {
    DimSpec dim;
    const Token& t = next();
    std::string_view range;
    if (t.kind == TokenKind::kString) {
      dim.symbol = t.text;
      if (peek().kind == TokenKind::kWord && peek().text[0] == ':') range = next().text;
    } else if (t.kind == TokenKind::kWord &&
               ((t.text[0] >= '0' && t.text[0] <= '9') || t.text[0] == '-')) {
      dim.value = to_int(t, "a dim");
      return dim;
    } else if (t.kind == TokenKind::kWord) {
      std::string_view w = t.text;
      size_t colon = w.find(':');
      dim.symbol = std::string(w.substr(0, colon));
      if (colon != std::string_view::npos) range = w.substr(colon);
      if (!vmasm::is_identifier(dim.symbol)) fail(t.line, "bad dim symbol '", dim.symbol, "'");
    } else {
      fail(t.line, "expected a dim (a number or a symbol), got ", vmasm::describe(t));
    }
    if (!range.empty()) {
      range.remove_prefix(1);  // ':'
      auto r = vmasm::parse_range(range, /*open_ends=*/true);
      if (!r) {
        fail(t.line, "bad range '", range, "' for dim ", dim.symbol, " (expected lo..hi or lo..)");
      }
      std::tie(dim.min, dim.max) = *r;
    }
    return dim;
  }

  // ---- constants ----------------------------------------------------------------------
  void parse_const(int line) {
    std::string name = expect_name("a constant name");
    if (const_names_.contains(name)) fail(line, "constant '", name, "' declared twice");
    DType dtype = expect_dtype();
    Shape shape;
    expect_punct("[");
    while (!peek().is_punct("]")) {
      int64_t d = to_int(next(), "a dim");
      if (d < 0) fail(line, "constant ", name, " has a negative dim");
      shape.push_back(d);
      if (peek().is_punct(",")) next();
    }
    next();
    uint64_t numel = 1;
    for (int64_t d : shape) {
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel) || numel > (1ull << 40)) {
        fail(line, "constant ", name, " is too large");
      }
    }
    std::vector<Token> values;
    if (peek().is_punct("=")) {
      next();
      if (peek().is(TokenKind::kWord, "...")) {
        fail(line, "constant ", name,
             " was printed abbreviated ('= ...'); disassemble with "
             "max_constant_elements unlimited to reassemble it");
      }
      values = parse_value_list();
    }
    uint64_t parts = numel * vmasm::parts_per_element(dtype);
    if (values.size() != parts) {
      fail(line, "constant ", name, " (", dtype_name(dtype), " ", shape_str(shape), ") needs ",
           parts, " value", parts == 1 ? "" : "s", ", got ", values.size());
    }
    DType part = vmasm::element_part_type(dtype);
    size_t part_size = dtype_size(part);
    Tensor t = Tensor::empty(shape, dtype);
    auto* data = static_cast<uint8_t*>(t.data());
    for (size_t i = 0; i < values.size(); ++i) {
      std::string err = vmasm::parse_scalar(part, values[i].text, data + i * part_size);
      if (!err.empty()) fail(values[i].line, "constant ", name, ": ", err);
    }
    const_names_.emplace(name, exe_.constants.size());
    exe_.constants.push_back(std::move(t));
  }

  // Words on the rest of the line, or in { } across lines; commas between them optional.
  std::vector<Token> parse_value_list() {
    std::vector<Token> values;
    bool braced = peek().is_punct("{");
    if (braced) next();
    for (;;) {
      const Token& t = peek();
      if (braced && t.is_punct("}")) {
        next();
        break;
      }
      if (!braced && at_line_end()) break;
      if (t.kind == TokenKind::kEnd) fail(t.line, "missing '}'");
      if (t.kind == TokenKind::kNewline || t.is_punct(",")) {
        next();
        continue;
      }
      if (t.kind != TokenKind::kWord) fail(t.line, "expected a value, got ", vmasm::describe(t));
      values.push_back(next());
    }
    return values;
  }

  // ---- kernel libraries ---------------------------------------------------------------
  void apply_library_attributes(const std::map<std::string, Token>& attrs, KernelLibrary& lib) {
    if (auto it = attrs.find("format"); it != attrs.end()) {
      const std::string& f = it->second.text;
      if (f == "so")
        lib.format = LibraryFormat::kSharedObject;
      else if (f == "ptx")
        lib.format = LibraryFormat::kPtx;
      else if (f == "cubin")
        lib.format = LibraryFormat::kCubin;
      else
        fail(it->second.line, "unknown library format '", f, "' (expected so, ptx, cubin)");
    }
    if (auto it = attrs.find("target"); it != attrs.end()) {
      if (it->second.kind != TokenKind::kString) fail(it->second.line, "target= takes a string");
      lib.target = it->second.text;
    }
  }

  void parse_library_file(int line) {
    std::string path = expect_string("the library's path");
    KernelLibrary lib;
    if (path.ends_with(".ptx")) lib.format = LibraryFormat::kPtx;
    if (path.ends_with(".cubin")) lib.format = LibraryFormat::kCubin;
    apply_library_attributes(parse_attributes({"format", "target"}), lib);
    std::filesystem::path p(path);
    if (p.is_relative()) p = std::filesystem::path(base_dir_) / p;
    std::ifstream in(p, std::ios::binary);
    if (!in) fail(line, "cannot read library '", p.string(), "': ", std::strerror(errno));
    lib.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    exe_.libraries.push_back(std::move(lib));
  }

  void parse_library_bytes(int line) {
    KernelLibrary lib;
    auto attrs = parse_attributes({"format", "target", "size"});
    apply_library_attributes(attrs, lib);
    auto size = attrs.find("size");
    if (size == attrs.end()) fail(line, ".library_bytes needs size=N");
    int64_t n = to_int(size->second, "size");
    expect_punct("=");
    if (peek().is(TokenKind::kWord, "...")) {
      fail(line, "library ", exe_.libraries.size(),
           "'s bytes were not printed ('= ...'); "
           "disassemble with show_library_bytes to reassemble it");
    }
    for (const Token& t : parse_value_list()) {
      if (t.text.size() % 2 != 0) fail(t.line, "odd number of hex digits in '", t.text, "'");
      for (size_t i = 0; i < t.text.size(); i += 2) {
        unsigned byte = 0;
        auto r = std::from_chars(t.text.data() + i, t.text.data() + i + 2, byte, 16);
        if (r.ec != std::errc() || r.ptr != t.text.data() + i + 2) {
          fail(t.line, "'", t.text, "' is not hex");
        }
        lib.bytes.push_back(static_cast<uint8_t>(byte));
      }
    }
    if (static_cast<int64_t>(lib.bytes.size()) != n) {
      fail(line, "library says size=", n, " but has ", lib.bytes.size(), " bytes");
    }
    exe_.libraries.push_back(std::move(lib));
  }

  // ---- kernels ------------------------------------------------------------------------
  void parse_kernel() {
    Kernel k;
    int line = peek().line;
    k.name = expect_name("a kernel name");
    auto attrs = parse_attributes({"inputs", "outputs", "library"});
    for (const char* required : {"inputs", "outputs"}) {
      if (!attrs.contains(required)) fail(line, ".kernel ", k.name, " needs ", required, "=N");
    }
    k.num_inputs = to_u32(attrs["inputs"], "inputs");
    k.num_outputs = to_u32(attrs["outputs"], "outputs");
    if (attrs.contains("library")) k.library = to_u32(attrs["library"], "library");
    current_kernel_ = static_cast<int64_t>(exe_.kernels.size());
    exe_.kernels.push_back(std::move(k));
  }

  void parse_variant(int line) {
    if (current_kernel_ < 0) fail(line, "'variant' must follow a .kernel line or another variant");
    KernelVariant v;
    v.symbol = expect_name("the variant's symbol");
    if (peek().is(TokenKind::kWord, "when")) {
      next();
      v.conditions.push_back(parse_condition());
      while (peek().is_punct(",")) {
        next();
        v.conditions.push_back(parse_condition());
      }
    }
    end_line();
    exe_.kernels[current_kernel_].variants.push_back(std::move(v));
  }

  // argN.dimM: which argument's which dim, or nullopt when `t` is not of that form.
  static std::optional<std::pair<uint32_t, uint32_t>> arg_dim(const Token& t) {
    if (t.kind != TokenKind::kWord) return std::nullopt;
    std::string_view w = t.text;
    size_t dot = w.find(".dim");
    if (!w.starts_with("arg") || dot == std::string_view::npos) return std::nullopt;
    std::optional<int64_t> arg = vmasm::parse_decimal(w.substr(3, dot - 3));
    std::optional<int64_t> axis = vmasm::parse_decimal(w.substr(dot + 4));
    if (!arg || !axis || *arg > UINT32_MAX || *axis > UINT32_MAX) return std::nullopt;
    return std::pair{static_cast<uint32_t>(*arg), static_cast<uint32_t>(*axis)};
  }

  // argA.dimB == N | argA.dimB == argC.dimD | argA.dimB % M == R | argA.dimB in LO..HI
  DimPredicate parse_condition() {
    DimPredicate p;
    const Token& t = expect_word("a condition (argN.dimM ...)");
    auto dim = arg_dim(t);
    if (!dim) fail(t.line, "expected argN.dimM in a condition, got ", vmasm::describe(t));
    std::tie(p.arg, p.axis) = *dim;
    if (peek().is_punct("==")) {
      next();
      if (auto other = arg_dim(peek())) {
        next();
        p.kind = DimPredicateKind::kDimEq;
        p.a = other->first;
        p.b = other->second;
        return p;
      }
      p.kind = DimPredicateKind::kEq;
      p.a = to_int(next(), "a value");
    } else if (peek().is_punct("%")) {
      next();
      p.kind = DimPredicateKind::kModEq;
      p.a = to_int(next(), "a divisor");
      expect_punct("==");
      p.b = to_int(next(), "a remainder");
    } else if (peek().is(TokenKind::kWord, "in")) {
      next();
      const Token& t = expect_word("a range lo..hi");
      auto r = vmasm::parse_range(t.text, /*open_ends=*/false);
      if (!r) fail(t.line, "expected a range lo..hi, got ", vmasm::describe(t));
      std::tie(p.a, p.b) = *r;
      p.kind = DimPredicateKind::kRange;
    } else {
      fail(peek().line, "expected '==', '%' or 'in' after ", t.text, ", got ",
           vmasm::describe(peek()));
    }
    return p;
  }

  // ---- functions ----------------------------------------------------------------------
  void parse_func(int line) {
    Function fn;
    fn.name = expect_name("a function name");
    auto attrs = parse_attributes({"params", "regs"});
    if (attrs.contains("params")) fn.num_params = to_u32(attrs["params"], "params");
    PendingFunction pending;
    pending.line = line;
    if (attrs.contains("regs")) {
      pending.regs_given = true;
      fn.num_registers = to_u32(attrs["regs"], "regs");
    }
    current_ = static_cast<int64_t>(exe_.functions.size());
    exe_.functions.push_back(std::move(fn));
    pending_.push_back(std::move(pending));
  }

  void parse_instruction(const Token& mnemonic) {
    if (mnemonic.kind != TokenKind::kWord) {
      fail(mnemonic.line, "expected an instruction, got ", vmasm::describe(mnemonic));
    }
    std::optional<Opcode> op = opcode_from_mnemonic(mnemonic.text);
    if (!op) fail(mnemonic.line, "unknown mnemonic '", mnemonic.text, "'");
    PendingInstruction ins{*op, {}, mnemonic.line};
    while (!at_line_end()) {
      const Token& t = next();
      if (t.kind != TokenKind::kWord && t.kind != TokenKind::kString) {
        fail(t.line, "expected an operand, got ", vmasm::describe(t));
      }
      ins.operands.push_back(t);
      if (!at_line_end()) expect_punct(",");
    }
    next();
    const OpcodeInfo& info = opcode_info(*op);
    size_t fixed = info.variadic ? info.num_operands - 1u : info.num_operands;
    if (info.variadic ? ins.operands.size() < fixed : ins.operands.size() != fixed) {
      std::string kinds;
      for (size_t i = 0; i < info.num_operands; ++i) {
        kinds += str_cat(i ? ", " : "", vmasm::operand_kind_name(info.operands[i]));
      }
      fail(ins.line, "'", info.mnemonic, "' takes ", info.variadic ? "at least " : "", fixed,
           " operand", fixed == 1 ? "" : "s", " (", kinds, "), got ", ins.operands.size());
    }
    pending_[current_].code.push_back(std::move(ins));
  }

  // ---- pass 2: operands ---------------------------------------------------------------
  void resolve() {
    for (size_t i = 0; i < exe_.functions.size(); ++i) {
      function_names_[exe_.functions[i].name].push_back(i);
    }
    for (size_t i = 0; i < exe_.kernels.size(); ++i)
      kernel_names_[exe_.kernels[i].name].push_back(i);
    for (size_t f = 0; f < exe_.functions.size(); ++f) resolve_function(f);
    if (entry_.kind != TokenKind::kEnd) {
      exe_.entry = static_cast<uint32_t>(
          resolve_named(entry_, function_names_, exe_.functions.size(), "function"));
    }
  }

  void resolve_function(size_t f) {
    Function& fn = exe_.functions[f];
    PendingFunction& pending = pending_[f];
    int64_t max_reg = -1;
    for (const PendingInstruction& p : pending.code) {
      const OpcodeInfo& info = opcode_info(p.op);
      size_t fixed = info.variadic ? info.num_operands - 1u : info.num_operands;
      Instruction ins{p.op, {}};
      ins.args.reserve(p.operands.size());
      for (size_t i = 0; i < p.operands.size(); ++i) {
        OperandKind kind = i < fixed ? info.operands[i] : OperandKind::Regs;
        int64_t v = resolve_operand(kind, p.operands[i], fn, pending);
        if (kind == OperandKind::Dst || kind == OperandKind::Reg || kind == OperandKind::Regs) {
          max_reg = std::max(max_reg, v);
        }
        ins.args.push_back(v);
      }
      fn.code.push_back(std::move(ins));
    }
    if (!pending.regs_given) {
      fn.num_registers = std::max<uint32_t>(fn.num_params, static_cast<uint32_t>(max_reg + 1));
    }
  }

  int64_t resolve_operand(OperandKind kind, const Token& t, const Function& fn,
                          const PendingFunction& pending) {
    switch (kind) {
      case OperandKind::Dst:
      case OperandKind::Reg:
      case OperandKind::Regs:
        return resolve_register(t, fn, pending);
      case OperandKind::Imm:
        return to_int(t, "an integer");
      case OperandKind::Const:
        return resolve_indexed(t, const_names_, 'c', exe_.constants.size(), "constant");
      case OperandKind::Str:
        if (t.kind == TokenKind::kString) return intern_string(t.text);
        return resolve_indexed(t, string_names_, 's', exe_.strings.size(), "string");
      case OperandKind::Func:
        return resolve_named(t, function_names_, exe_.functions.size(), "function");
      case OperandKind::Kernel:
        return resolve_named(t, kernel_names_, exe_.kernels.size(), "kernel");
      case OperandKind::Target: {
        if (t.kind != TokenKind::kWord) fail(t.line, "expected a label, got ", vmasm::describe(t));
        auto it = pending.labels.find(t.text);
        if (it == pending.labels.end()) {
          fail(t.line, "undefined label '", t.text, "' in function ", fn.name);
        }
        if (it->second >= pending.code.size()) {
          fail(t.line, "label '", t.text, "' marks the end of function ", fn.name,
               ", not an instruction");
        }
        return it->second;
      }
      case OperandKind::DType: {
        std::optional<DType> d;
        if (t.kind == TokenKind::kWord) d = parse_dtype(t.text);
        if (!d) fail(t.line, "unknown dtype ", vmasm::describe(t));
        return static_cast<int64_t>(*d);
      }
      case OperandKind::Device: {
        std::optional<int64_t> d;
        if (t.kind == TokenKind::kWord) d = vmasm::parse_device(t.text);
        if (!d) fail(t.line, "unknown device ", vmasm::describe(t), " (expected cpu or cuda:N)");
        return *d;
      }
      case OperandKind::Cmp: {
        std::optional<CmpKind> c;
        if (t.kind == TokenKind::kWord) c = cmp_from_name(t.text);
        if (!c)
          fail(t.line, "unknown comparison ", vmasm::describe(t), " (expected eq ne lt le gt ge)");
        return static_cast<int64_t>(*c);
      }
    }
    fail(t.line, "bad operand kind");
  }

  int64_t resolve_register(const Token& t, const Function& fn, const PendingFunction& pending) {
    std::optional<int64_t> r;
    if (t.kind == TokenKind::kWord) r = vmasm::parse_prefixed_index(t.text, 'r');
    if (!r) {
      fail(t.line, t.kind == TokenKind::kWord ? "unknown register " : "expected a register, got ",
           vmasm::describe(t));
    }
    if (*r >= kMaxRegisters) fail(t.line, "register ", t.text, " is too large");
    if (pending.regs_given && *r >= fn.num_registers) {
      fail(t.line, "register ", t.text, " out of range: function ", fn.name,
           " has regs=", fn.num_registers);
    }
    return *r;
  }

  // A declared name, or the default name <prefix>N, or #N.
  int64_t resolve_indexed(const Token& t, const std::map<std::string, size_t>& names, char prefix,
                          size_t count, std::string_view what) {
    if (t.kind == TokenKind::kWord) {
      if (auto it = names.find(t.text); it != names.end()) return static_cast<int64_t>(it->second);
      std::optional<int64_t> i = vmasm::parse_prefixed_index(t.text, prefix);
      if (!i) i = vmasm::parse_prefixed_index(t.text, '#');
      if (i && *i >= 0 && static_cast<size_t>(*i) < count) return *i;
    }
    fail(t.line, "unknown ", what, " ", vmasm::describe(t));
  }

  // A name (bare or quoted) that must be unique, or #N.
  int64_t resolve_named(const Token& t, const std::map<std::string, std::vector<size_t>>& names,
                        size_t count, std::string_view what) {
    if (t.kind == TokenKind::kWord) {
      if (std::optional<int64_t> i = vmasm::parse_prefixed_index(t.text, '#')) {
        if (*i < 0 || static_cast<size_t>(*i) >= count) {
          fail(t.line, what, " ", t.text, " out of range (", count, ")");
        }
        return *i;
      }
    }
    auto it = names.find(t.text);
    if (it == names.end()) fail(t.line, "unknown ", what, " ", vmasm::describe(t));
    if (it->second.size() > 1) {
      fail(t.line, what, " name ", vmasm::describe(t), " is ambiguous (", it->second.size(),
           " have it); refer to one as #N");
    }
    return static_cast<int64_t>(it->second[0]);
  }

  int64_t intern_string(const std::string& s) {
    for (size_t i = 0; i < exe_.strings.size(); ++i) {
      if (exe_.strings[i] == s) return static_cast<int64_t>(i);
    }
    exe_.strings.push_back(s);
    return static_cast<int64_t>(exe_.strings.size() - 1);
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::string source_;
  std::string base_dir_;

  Executable exe_;
  std::vector<PendingFunction> pending_;
  int64_t current_ = -1;         // function being read, -1: none
  int64_t current_kernel_ = -1;  // kernel that 'variant' lines extend, -1: none
  bool have_target_ = false;
  bool have_producer_ = false;
  Token entry_;  // kind kEnd: no .entry
  std::map<std::string, size_t> const_names_;
  std::map<std::string, size_t> string_names_;
  std::map<std::string, std::vector<size_t>> function_names_;
  std::map<std::string, std::vector<size_t>> kernel_names_;
};

}  // namespace

Executable assemble(std::string_view text, const std::string& source_name,
                    const std::string& base_dir) {
  return Assembler(text, source_name, base_dir).run();
}

Executable assemble_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error("cannot read '", path, "': ", std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string dir = std::filesystem::path(path).parent_path().string();
  return assemble(text, path, dir.empty() ? "." : dir);
}

}  // namespace dynvm::vm
