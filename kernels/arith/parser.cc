// Recursive-descent parser for the expression text form; one function per precedence level,
// loosest first (the same levels the printer uses): || , &&, !, comparisons, + -, * // %,
// unary minus, then literals, names, calls and parentheses. Operand types are checked here,
// so ill-typed text is a UserError with a column rather than an internal check in make().
#include "kernels/arith/parser.h"

#include <cctype>
#include <cstdint>
#include <utility>

#include "kernels/arith/int_math.h"
#include "vm/error.h"

namespace dynvm::arith {

Var VarScope::get(const std::string& name) {
  auto it = vars_.find(name);
  if (it == vars_.end()) it = vars_.emplace(name, Var(name)).first;
  return it->second;
}

void VarScope::add(const Var& v) { vars_.insert_or_assign(v.name(), v); }

const Var* VarScope::find(std::string_view name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : &it->second;
}

namespace {

constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;  // |INT64_MIN|

class Parser {
 public:
  Parser(std::string_view text, VarScope& scope) : text_(text), scope_(scope) { lex(); }

  Expr parse() {
    Expr e = parse_or();
    if (token_.kind != Token::kEnd) fail(token_.pos, str_cat("unexpected '", token_.text, "'"));
    return e;
  }

 private:
  struct Token {
    enum Kind { kEnd, kInt, kIdent, kSymbol } kind = kEnd;
    std::string_view text;
    size_t pos = 0;
    uint64_t magnitude = 0;  // kInt only
  };

  [[noreturn]] void fail(size_t pos, const std::string& message) {
    user_error("parse error at column ", pos + 1, ": ", message, " in \"", text_, "\"");
  }

  void lex() {
    size_t i = pos_;
    while (i < text_.size() && std::isspace(static_cast<unsigned char>(text_[i]))) ++i;
    token_ = Token{Token::kEnd, {}, i, 0};
    if (i == text_.size()) {
      pos_ = i;
      return;
    }
    unsigned char c = static_cast<unsigned char>(text_[i]);
    size_t end = i + 1;
    if (std::isdigit(c)) {
      uint64_t value = 0;
      end = i;
      while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) {
        uint64_t digit = static_cast<uint64_t>(text_[end] - '0');
        if (value > (kMaxMagnitude - digit) / 10) fail(i, "integer literal out of range");
        value = value * 10 + digit;
        ++end;
      }
      token_.kind = Token::kInt;
      token_.magnitude = value;
    } else if (std::isalpha(c) || c == '_') {
      while (end < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_')) {
        ++end;
      }
      token_.kind = Token::kIdent;
    } else {
      static constexpr std::string_view kTwoChar[] = {"//", "==", "!=", "<=", ">=", "&&", "||"};
      std::string_view rest = text_.substr(i);
      for (std::string_view op : kTwoChar) {
        if (rest.starts_with(op)) end = i + 2;
      }
      if (end == i + 1 &&
          std::string_view("+-*%(),<>!").find(static_cast<char>(c)) == std::string_view::npos) {
        fail(i, str_cat("unexpected character '", static_cast<char>(c), "'"));
      }
      token_.kind = Token::kSymbol;
    }
    token_.text = text_.substr(i, end - i);
    pos_ = end;
  }

  // Consumes the current token if it is this symbol or keyword.
  bool accept(std::string_view op) {
    if (token_.kind == Token::kInt || token_.kind == Token::kEnd || token_.text != op) {
      return false;
    }
    lex();
    return true;
  }

  void expect(std::string_view op) {
    if (!accept(op)) {
      fail(token_.pos, str_cat("expected '", op, "'",
                               token_.kind == Token::kEnd ? " at the end"
                                                          : str_cat(", got '", token_.text, "'")));
    }
  }

  Expr want_int(Expr e, size_t pos, std::string_view where) {
    if (e.is_boolean()) fail(pos, str_cat("a condition cannot be ", where));
    return e;
  }

  Expr want_bool(Expr e, size_t pos, std::string_view where) {
    if (!e.is_boolean()) fail(pos, str_cat("an integer cannot be ", where));
    return e;
  }

  Expr parse_or() {
    size_t pos = token_.pos;
    Expr e = parse_and();
    while (token_.text == "||" && token_.kind == Token::kSymbol) {
      want_bool(e, pos, "an operand of '||'");
      lex();
      pos = token_.pos;
      e = logical_or(e, want_bool(parse_and(), pos, "an operand of '||'"));
    }
    return e;
  }

  Expr parse_and() {
    size_t pos = token_.pos;
    Expr e = parse_not();
    while (token_.text == "&&" && token_.kind == Token::kSymbol) {
      want_bool(e, pos, "an operand of '&&'");
      lex();
      pos = token_.pos;
      e = logical_and(e, want_bool(parse_not(), pos, "an operand of '&&'"));
    }
    return e;
  }

  Expr parse_not() {
    if (accept("!")) {
      size_t pos = token_.pos;
      return logical_not(want_bool(parse_not(), pos, "negated with '!'"));
    }
    return parse_compare();
  }

  Expr parse_compare() {
    static constexpr std::pair<std::string_view, ExprKind> kOps[] = {
        {"==", ExprKind::kEq}, {"!=", ExprKind::kNe}, {"<", ExprKind::kLt},
        {"<=", ExprKind::kLe}, {">", ExprKind::kGt},  {">=", ExprKind::kGe}};
    size_t pos = token_.pos;
    Expr left = parse_add();
    for (auto [op, kind] : kOps) {
      if (token_.kind == Token::kSymbol && token_.text == op) {
        want_int(left, pos, str_cat("compared with '", op, "'"));
        lex();
        size_t right_pos = token_.pos;
        Expr right = want_int(parse_add(), right_pos, str_cat("compared with '", op, "'"));
        return make_binary(kind, left, right);
      }
    }
    return left;
  }

  Expr parse_add() {
    size_t pos = token_.pos;
    Expr e = parse_mul();
    for (;;) {
      ExprKind kind;
      if (token_.kind == Token::kSymbol && token_.text == "+") {
        kind = ExprKind::kAdd;
      } else if (token_.kind == Token::kSymbol && token_.text == "-") {
        kind = ExprKind::kSub;
      } else {
        return e;
      }
      want_int(e, pos, str_cat("an operand of '", token_.text, "'"));
      std::string_view op = token_.text;
      lex();
      pos = token_.pos;
      e = make_binary(kind, e, want_int(parse_mul(), pos, str_cat("an operand of '", op, "'")));
    }
  }

  Expr parse_mul() {
    size_t pos = token_.pos;
    Expr e = parse_unary();
    for (;;) {
      ExprKind kind;
      std::string_view op = token_.text;
      if (token_.kind == Token::kSymbol && op == "*") {
        kind = ExprKind::kMul;
      } else if ((token_.kind == Token::kSymbol && op == "//") ||
                 (token_.kind == Token::kIdent && op == "floordiv")) {
        kind = ExprKind::kFloorDiv;
      } else if ((token_.kind == Token::kSymbol && op == "%") ||
                 (token_.kind == Token::kIdent && op == "floormod")) {
        kind = ExprKind::kFloorMod;
      } else {
        return e;
      }
      want_int(e, pos, str_cat("an operand of '", op, "'"));
      lex();
      pos = token_.pos;
      e = make_binary(kind, e, want_int(parse_unary(), pos, str_cat("an operand of '", op, "'")));
    }
  }

  Expr parse_unary() {
    if (token_.kind == Token::kSymbol && token_.text == "-") {
      lex();
      // A negative literal is one constant, so that printing -3 reads back as -3.
      if (token_.kind == Token::kInt) {
        uint64_t magnitude = token_.magnitude;
        lex();
        return make_int(magnitude == kMaxMagnitude ? kNegInf : -static_cast<int64_t>(magnitude));
      }
      size_t pos = token_.pos;
      return -want_int(parse_unary(), pos, "negated with '-'");
    }
    return parse_primary();
  }

  Expr parse_call(std::string_view name, int arity) {
    expect("(");
    Expr args[3];
    for (int i = 0; i < arity; ++i) {
      if (i > 0) expect(",");
      size_t pos = token_.pos;
      args[i] = parse_or();
      bool want_condition = name == "select" && i == 0;
      if (want_condition) {
        want_bool(args[i], pos, "the condition of select");
      } else {
        want_int(args[i], pos, str_cat("an argument of ", name));
      }
    }
    expect(")");
    if (name == "min") return min(args[0], args[1]);
    if (name == "max") return max(args[0], args[1]);
    return select(args[0], args[1], args[2]);
  }

  Expr parse_primary() {
    Token t = token_;
    switch (t.kind) {
      case Token::kInt:
        if (t.magnitude == kMaxMagnitude) fail(t.pos, "integer literal out of range");
        lex();
        return make_int(static_cast<int64_t>(t.magnitude));
      case Token::kIdent:
        lex();
        if (t.text == "true" || t.text == "false") return make_bool(t.text == "true");
        if (t.text == "min" || t.text == "max") return parse_call(t.text, 2);
        if (t.text == "select") return parse_call(t.text, 3);
        if (t.text == "floordiv" || t.text == "floormod") {
          fail(t.pos, str_cat("expected an operand before '", t.text, "'"));
        }
        return scope_.get(std::string(t.text));
      case Token::kSymbol:
        if (t.text == "(") {
          lex();
          Expr e = parse_or();
          expect(")");
          return e;
        }
        fail(t.pos, str_cat("expected an operand, got '", t.text, "'"));
      case Token::kEnd:
        break;
    }
    fail(t.pos, "expected an operand at the end");
  }

  std::string_view text_;
  VarScope& scope_;
  size_t pos_ = 0;  // where the next token starts
  Token token_;     // the current token
};

}  // namespace

Expr parse_expr(std::string_view text, VarScope& scope) { return Parser(text, scope).parse(); }

}  // namespace dynvm::arith
