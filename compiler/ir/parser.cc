// The graph IR parser (see parser.h): recursive descent over the text, tokens read on
// demand; dim expressions are handed to the arith parser.
#include "compiler/ir/parser.h"

#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "kernels/arith/parser.h"
#include "vm/error.h"

namespace dynvm::compiler {
namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Parser {
 public:
  Parser(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  Module module() {
    Module m;
    while (skip(), pos_ < text_.size()) {
      std::string word = ident();
      if (word == "dim") {
        std::string name = ident();
        arith::Var v = dims_.get(name);
        if (accept(":")) {
          DimSymbol d{v, integer(), std::numeric_limits<int64_t>::max()};
          expect("..");
          if (skip(), pos_ < text_.size() && (std::isdigit(peek()) || peek() == '-')) {
            d.max = integer();
          }
          if (d.min > d.max) fail("dim ", name, ": empty range ", d.min, "..", d.max);
          m.dims.push_back(d);
        }
      } else if (word == "entry") {
        expect("@");
        m.entry = ident();
      } else if (word == "fn") {
        expect("@");
        auto f = std::make_shared<Function>();
        f->name = ident();
        if (m.find_function(f->name) != nullptr) fail("function @", f->name, " defined twice");
        scopes_.clear();
        scopes_.emplace_back();
        function_rest(f.get());
        m.functions.push_back(std::move(f));
      } else {
        fail("expected 'dim', 'entry' or 'fn', got '", word, "'");
      }
    }
    return m;
  }

 private:
  // ---- lexing ----
  void skip() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ';' || (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/')) {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else {
        break;
      }
    }
  }
  char peek() {
    skip();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  bool accept(std::string_view token) {
    skip();
    if (text_.substr(pos_, token.size()) != token) return false;
    // A word token must not be the prefix of a longer word.
    if (ident_char(token.back()) && pos_ + token.size() < text_.size() &&
        ident_char(text_[pos_ + token.size()])) {
      return false;
    }
    pos_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) fail("expected '", token, "'", found());
  }
  std::string found() {
    skip();
    if (pos_ >= text_.size()) return ", got the end of the text";
    size_t end = pos_;
    while (end < text_.size() && end < pos_ + 12 &&
           !std::isspace(static_cast<unsigned char>(text_[end])))
      ++end;
    return str_cat(", got '", text_.substr(pos_, end - pos_), "'");
  }
  std::string ident() {
    skip();
    if (pos_ >= text_.size() || !ident_start(text_[pos_])) fail("expected a name", found());
    size_t start = pos_;
    while (pos_ < text_.size() && ident_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }
  // A %name or a bare name after '%'.
  std::string var_token() {
    expect("%");
    size_t start = pos_;
    while (pos_ < text_.size() && ident_char(text_[pos_])) ++pos_;
    if (start == pos_) fail("expected a variable name after '%'");
    return std::string(text_.substr(start, pos_ - start));
  }
  int64_t integer() {
    skip();
    size_t start = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    std::string s(text_.substr(start, pos_ - start));
    if (s.empty() || s == "-" || s == "+") fail("expected an integer", found());
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == ERANGE) fail("integer ", s, " out of range");
    return v;
  }
  // A number token: (int, false) or (double, true).
  std::pair<double, bool> number(int64_t* as_int) {
    skip();
    for (auto [word, value] : {std::pair<const char*, double>{"nan", NAN},
                               {"inf", INFINITY},
                               {"-inf", -INFINITY},
                               {"+inf", INFINITY}}) {
      if (accept(word)) return {value, true};
    }
    size_t start = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    bool is_float = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (std::isdigit(static_cast<unsigned char>(c))) {
      } else if (c == '.' && !(pos_ + 1 < text_.size() && text_[pos_ + 1] == '.')) {
        is_float = true;
      } else if ((c == 'e' || c == 'E') && pos_ > start) {
        is_float = true;
        if (pos_ + 1 < text_.size() && (text_[pos_ + 1] == '-' || text_[pos_ + 1] == '+')) ++pos_;
      } else {
        break;
      }
      ++pos_;
    }
    std::string s(text_.substr(start, pos_ - start));
    if (s.empty() || s == "-" || s == "+") fail("expected a number", found());
    errno = 0;
    if (!is_float) {
      long long v = std::strtoll(s.c_str(), nullptr, 10);
      if (errno == ERANGE) fail("integer ", s, " out of range");
      *as_int = v;
      return {std::strtod(s.c_str(), nullptr), false};  // strtod keeps "-0" negative
    }
    return {std::strtod(s.c_str(), nullptr), true};
  }
  std::string string_literal() {
    expect("\"");
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      if (e == 'n') {
        out += '\n';
      } else if (e == 'x' && pos_ + 2 <= text_.size()) {
        out += static_cast<char>(hex_byte(text_.substr(pos_, 2)));
        pos_ += 2;
      } else {
        out += e;
      }
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return out;
  }

  uint8_t hex_byte(std::string_view two) {
    auto digit = [&](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      fail("'", two, "' is not a hex byte");
    };
    return static_cast<uint8_t>(digit(two[0]) * 16 + digit(two[1]));
  }

  template <typename... Args>
  [[noreturn]] void fail(Args&&... args) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < std::min(pos_, text_.size()); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    user_error(file_, ":", line, ":", col, ": ", std::forward<Args>(args)...);
  }

  // ---- types ----
  Type type() {
    if (accept("(")) {
      std::vector<Type> fields;
      while (!accept(")")) {
        fields.push_back(type());
        if (!accept(",")) {
          expect(")");
          break;
        }
      }
      return tuple_type(std::move(fields));
    }
    if (accept("fn")) {
      expect("(");
      std::vector<Type> params = type_list(")");
      expect("->");
      expect("(");
      return func_type(std::move(params), type_list(")"));
    }
    std::string name = ident();
    if ((name == "seq" || name == "opt") && accept("<")) return container_type(name);
    std::optional<vm::DType> dtype = vm::parse_dtype(name);
    if (!dtype) fail("unknown dtype '", name, "'");
    return tensor_rest(*dtype);
  }
  // A tensor type's dims, after its dtype.
  Type tensor_rest(vm::DType dtype) {
    expect("[");
    std::vector<Dim> dims;
    if (!accept("]")) {
      while (true) {
        dims.push_back(dim());
        if (accept("]")) break;
        expect(",");
      }
    }
    return tensor_type(dtype, std::move(dims));
  }
  // After `seq<` or `opt<`: `seq<f32[?, 3]>`, `seq<f32>` (rank unknown), `opt<T>`.
  Type container_type(const std::string& name) {
    if (name == "opt") {
      Type elem = type();
      if (!elem.is_tensor() && !elem.is_sequence())
        fail("an optional holds a tensor or a sequence");
      expect(">");
      return optional_type(elem);
    }
    std::string elem_name = ident();
    std::optional<vm::DType> dtype = vm::parse_dtype(elem_name);
    if (!dtype) fail("unknown dtype '", elem_name, "'");
    if (accept(">")) return sequence_type(*dtype);
    if (accept(",")) {
      expect("empty");
      expect(">");
      return empty_sequence_type(*dtype);
    }
    Type elem = tensor_rest(*dtype);
    expect(">");
    return sequence_type(*dtype, elem);
  }
  std::vector<Type> type_list(std::string_view close) {
    std::vector<Type> out;
    if (accept(close)) return out;
    while (true) {
      out.push_back(type());
      if (accept(close)) return out;
      expect(",");
    }
  }
  // One dim: `?` or an arith expression up to the next ',' or ']' outside parentheses.
  Dim dim() {
    if (accept("?")) return Dim::any();
    skip();
    size_t start = pos_;
    int depth = 0;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '(') ++depth;
      if (c == ')') --depth;
      if (depth == 0 && (c == ',' || c == ']')) break;
      if (depth < 0) break;
      ++pos_;
    }
    std::string_view expr_text = text_.substr(start, pos_ - start);
    try {
      arith::Expr e = arith::parse_expr(expr_text, dims_);
      if (e.is_boolean()) fail("dim '", expr_text, "' is a condition, not an integer");
      return Dim(e);
    } catch (const UserError& error) {
      std::string message = error.what();
      pos_ = start;
      fail("bad dim '", expr_text, "': ", message);
    }
  }

  // ---- functions and expressions ----
  void function_rest(Function* f) {
    expect("(");
    f->params = params();
    if (accept("->")) f->result_type = type();
    f->primitive = accept("primitive");
    f->body = block();
  }
  std::vector<Expr> params() {
    std::vector<Expr> out;
    if (accept(")")) return out;
    while (true) {
      std::string name = var_token();
      Type t;
      if (accept(":")) t = type();
      Expr v = make_var(name, t);
      define(name, v);
      out.push_back(v);
      if (accept(")")) return out;
      expect(",");
    }
  }
  void define(const std::string& name, const Expr& v) {
    if (scopes_.back().count(name)) fail("%", name, " is defined twice in one scope");
    scopes_.back()[name] = v;
  }
  // The variable `%name` at the current position (the error points at its '%').
  Expr use_var() {
    skip();
    size_t start = pos_;
    std::string name = var_token();
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    pos_ = start;
    fail("unknown variable %", name);
  }

  // `{ bindings return e }` as nested lets; its own scope.
  Expr block() {
    expect("{");
    scopes_.emplace_back();
    std::vector<std::pair<Expr, Expr>> bindings;
    while (!accept("return")) {
      if (peek() != '%') fail("expected a binding '%name = ...' or 'return'", found());
      std::string name = var_token();
      Type t;
      if (accept(":")) t = type();
      expect("=");
      Expr value = expr();
      Expr v = make_var(name, t);
      define(name, v);
      bindings.emplace_back(v, value);
    }
    Expr body = expr();
    expect("}");
    scopes_.pop_back();
    for (auto it = bindings.rbegin(); it != bindings.rend(); ++it) {
      body = make_let(it->first, it->second, body);
    }
    return body;
  }

  Expr expr() {
    Expr e = primary();
    while (true) {
      skip();
      if (pos_ + 1 < text_.size() && text_[pos_] == '.' && std::isdigit(text_[pos_ + 1])) {
        ++pos_;
        e = make_get_item(e, integer());
      } else {
        return e;
      }
    }
  }

  std::vector<Expr> args(std::string_view close) {
    std::vector<Expr> out;
    if (accept(close)) return out;
    while (true) {
      out.push_back(expr());
      if (accept(close)) return out;
      expect(",");
    }
  }

  Expr primary() {
    char c = peek();
    if (c == '%') return use_var();
    if (c == '{') return block();
    if (c == '@') {
      expect("@");
      std::string callee = ident();
      expect("(");
      return make_call_function(callee, args(")"));
    }
    if (c == '(') {
      expect("(");
      std::vector<Expr> fields;
      bool trailing_comma = false;
      while (!accept(")")) {
        fields.push_back(expr());
        trailing_comma = accept(",");
        if (!trailing_comma) {
          expect(")");
          break;
        }
      }
      if (fields.size() == 1 && !trailing_comma) return fields[0];  // parentheses
      return make_tuple(std::move(fields));
    }
    if (!ident_start(c)) fail("expected an expression", found());
    std::string word = ident();
    if (word == "const") return constant();
    if (word == "if") {
      Expr cond = expr();
      Expr then_branch = block();
      expect("else");
      return make_if(cond, then_branch, block());
    }
    if (word == "loop") return loop();
    // A namespaced operator: dynvm.Refine.
    while (pos_ + 1 < text_.size() && text_[pos_] == '.' && ident_start(text_[pos_ + 1])) {
      ++pos_;
      word += "." + ident();
    }
    expect("(");
    std::vector<Expr> operands = args(")");
    return make_call(word, std::move(operands), attrs());
  }

  // `{name=value, ...}` after a call, told apart from a block by `name =`.
  Attrs attrs() {
    Attrs out;
    size_t save = pos_;
    if (!accept("{")) return out;
    skip();
    size_t look = pos_;
    while (look < text_.size() && ident_char(text_[look])) ++look;
    while (look < text_.size() && std::isspace(static_cast<unsigned char>(text_[look]))) ++look;
    if (look == pos_ || look >= text_.size() || text_[look] != '=') {
      pos_ = save;  // a block: not ours
      return out;
    }
    while (true) {
      std::string name = ident();
      expect("=");
      if (out.count(name)) fail("attribute '", name, "' given twice");
      out[name] = attr_value();
      if (accept("}")) return out;
      expect(",");
    }
  }

  AttrValue attr_value() {
    char c = peek();
    if (c == '"') return string_literal();
    if (accept("const")) return constant()->value;
    if (c != '[') {
      int64_t i = 0;
      auto [d, is_float] = number(&i);
      return is_float ? AttrValue(d) : AttrValue(i);
    }
    expect("[");
    if (accept("]")) return std::vector<int64_t>{};
    if (peek() == '"') {
      std::vector<std::string> out;
      do {
        out.push_back(string_literal());
      } while (accept(","));
      expect("]");
      return out;
    }
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool any_float = false;
    do {
      int64_t i = 0;
      auto [d, is_float] = number(&i);
      any_float |= is_float;
      ints.push_back(i);
      floats.push_back(d);
    } while (accept(","));
    expect("]");
    if (any_float) return floats;
    return ints;
  }

  Expr constant() {
    expect("(");
    Type t = type();
    if (!t.is_tensor()) fail("a constant must have a tensor type");
    vm::Shape shape;
    for (const Dim& d : t->dims) {
      if (!d.is_const() || d.value() < 0) fail("a constant's dims must be constants");
      shape.push_back(d.value());
    }
    expect(",");
    vm::Tensor value = vm::Tensor::empty(shape, t->dtype);
    if (accept("hex")) {
      std::string hex = string_literal();
      if (hex.size() != 2 * value.nbytes()) {
        fail("constant ", to_string(t), " needs ", value.nbytes(), " bytes, got ", hex.size() / 2);
      }
      auto* bytes = static_cast<uint8_t*>(value.data());
      for (size_t i = 0; i < value.nbytes(); ++i) {
        bytes[i] = hex_byte(std::string_view(hex).substr(2 * i, 2));
      }
    } else {
      expect("[");
      int64_t n = 0;
      if (!accept("]")) {
        while (true) {
          if (n >= value.numel())
            fail("constant ", to_string(t), " has more than ", value.numel(), " values");
          store(value, n++);
          if (accept("]")) break;
          expect(",");
        }
      }
      if (n != value.numel()) {
        fail("constant ", to_string(t), " needs ", value.numel(), " values, got ", n);
      }
    }
    expect(")");
    return make_constant(value);
  }

  void store(vm::Tensor& t, int64_t i) {
    if (t.dtype() == vm::DType::kBool) {
      if (accept("true")) {
        t.data_as<uint8_t>()[i] = 1;
      } else {
        expect("false");
        t.data_as<uint8_t>()[i] = 0;
      }
      return;
    }
    int64_t iv = 0;
    auto [d, is_float] = number(&iv);
    switch (t.dtype()) {
      case vm::DType::kFloat32:
        t.data_as<float>()[i] = static_cast<float>(d);
        return;
      case vm::DType::kFloat64:
        t.data_as<double>()[i] = d;
        return;
      default:
        break;
    }
    if (is_float) fail("an integer constant cannot hold ", d);
    switch (t.dtype()) {
      case vm::DType::kInt8:
        t.data_as<int8_t>()[i] = static_cast<int8_t>(iv);
        return;
      case vm::DType::kInt16:
        t.data_as<int16_t>()[i] = static_cast<int16_t>(iv);
        return;
      case vm::DType::kInt32:
        t.data_as<int32_t>()[i] = static_cast<int32_t>(iv);
        return;
      case vm::DType::kInt64:
        t.data_as<int64_t>()[i] = iv;
        return;
      case vm::DType::kUInt8:
        t.data_as<uint8_t>()[i] = static_cast<uint8_t>(iv);
        return;
      case vm::DType::kUInt16:
        t.data_as<uint16_t>()[i] = static_cast<uint16_t>(iv);
        return;
      case vm::DType::kUInt32:
        t.data_as<uint32_t>()[i] = static_cast<uint32_t>(iv);
        return;
      case vm::DType::kUInt64:
        t.data_as<uint64_t>()[i] = static_cast<uint64_t>(iv);
        return;
      default:
        fail("constants of dtype ", vm::dtype_name(t.dtype()), " are written as hex\"...\"");
    }
  }

  Expr optional_expr() { return accept("none") ? Expr() : expr(); }

  Expr loop() {
    expect("(");
    expect("max_trip");
    expect("=");
    Expr max_trip = optional_expr();
    expect(",");
    expect("cond");
    expect("=");
    Expr cond = optional_expr();
    std::vector<Expr> carried;
    if (accept(",")) {
      carried = args(")");
    } else {
      expect(")");
    }
    expect("scan_outputs");
    expect("=");
    int64_t scans = integer();
    if (scans < 0) fail("scan_outputs must be >= 0");
    expect("fn");
    auto body = std::make_shared<Function>();
    body->name = "loop_body";
    scopes_.emplace_back();
    expect("(");
    body->params = params();
    if (body->params.size() != carried.size() + 2) {
      fail("the loop body takes ", body->params.size(), " parameters, expected ",
           carried.size() + 2, " (iteration, cond, then one per carried value)");
    }
    body->body = block();
    scopes_.pop_back();
    return make_loop(max_trip, cond, std::move(carried), std::move(body), scans);
  }

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  arith::VarScope dims_;
  std::vector<std::map<std::string, Expr>> scopes_;
};

}  // namespace

Module parse_module(std::string_view text, const std::string& file_name) {
  return Parser(text, file_name).module();
}

}  // namespace dynvm::compiler
