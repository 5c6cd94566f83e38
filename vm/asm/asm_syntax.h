// The vocabulary the .vmasm assembler (assembler.h) and the disassembler
// (disassembler.h) share, so that what one prints the other reads: the lexer, the
// spelling of names, strings, integers and devices, and the exact text form of tensor
// elements of every dtype (printing an element and parsing it back gives the same bytes,
// NaN payloads, signed zeros and float16/bfloat16 included). docs/vmasm.md is the
// language reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vm/dtype.h"
#include "vm/opcodes.h"

namespace dynvm::vm::vmasm {

enum class TokenKind : uint8_t {
  kWord,     // a run of characters that are not blanks, punctuation, quotes or ';'
  kString,   // "..." with its escapes decoded
  kPunct,    // one of , [ ] { } ( ) = % or ==
  kNewline,  // end of a line (comments end at the newline)
  kEnd,      // end of the text
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int line = 0;
  bool is(TokenKind k, std::string_view t) const { return kind == k && text == t; }
  bool is_punct(std::string_view t) const { return is(TokenKind::kPunct, t); }
};

// Splits .vmasm text into tokens, always ending with kEnd. Throws
// UserError("<source_name>:<line>: ...") for a malformed string literal.
std::vector<Token> tokenize(std::string_view text, const std::string& source_name);

// [A-Za-z_][A-Za-z0-9_.]*: what may stand bare as a name; anything else is quoted.
bool is_identifier(std::string_view s);
// A string literal: printable ASCII as is, \" \\ \n \t \r, other bytes below 0x20 and
// 0x7f as \xHH; bytes from 0x80 up stay raw (UTF-8 text reads as itself).
std::string quote(std::string_view s);
// `s` bare when it is an identifier, else quoted.
std::string name_or_quoted(std::string_view s);

// Decimal or 0x-hex, optionally signed; nullopt when malformed or out of range.
std::optional<int64_t> parse_int(std::string_view word);
std::optional<uint64_t> parse_uint(std::string_view word);

// Plain decimal digits only (no sign, no hex), as in register numbers and indices.
std::optional<int64_t> parse_decimal(std::string_view s);
// `prefix` then plain decimal digits: ("r12", 'r') -> 12, ("#3", '#') -> 3.
std::optional<int64_t> parse_prefixed_index(std::string_view word, char prefix);
// "lo..hi" (inclusive). With open_ends, "lo.." means hi = INT64_MAX and "..hi" lo = 0.
std::optional<std::pair<int64_t, int64_t>> parse_range(std::string_view s, bool open_ends);

// For messages: 'word', "string", or "the end of the line".
std::string describe(const Token& t);
// The short name of an operand kind, as error messages list an opcode's operands.
std::string_view operand_kind_name(OperandKind k);

// Device operands: "cpu", "cpu:N", "cuda", "cuda:N" <-> (type << 32) | id.
std::string format_device(int64_t code);
std::optional<int64_t> parse_device(std::string_view word);

// Tensor elements in text. A complex element is two text values (real, imaginary) of
// its part type; every other element is one value of its own type.
DType element_part_type(DType t);  // c64 -> f32, c128 -> f64, else t
int parts_per_element(DType t);    // 2 for complex, else 1
// One value of part type `t` stored at `p`, spelled so parse_scalar gives the same bytes.
std::string format_scalar(DType t, const void* p);
// Parses `word` as one value of part type `t` into `out` (dtype_size(t) bytes). Returns
// an empty string on success, else what is wrong (for an error message).
std::string parse_scalar(DType t, std::string_view word, void* out);

}  // namespace dynvm::vm::vmasm
