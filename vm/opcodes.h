// The one opcode table. DYNVM_OPCODES generates the Opcode enum, the mnemonics, the
// operand layouts that the verifier, the assembler, the disassembler and the serializer
// read; only the interpreter has one hand-written case per instruction.
//
// Operand kinds (an instruction's operands are int64 values in this order):
//   Dst     register written          Reg     register read
//   Imm     signed 64-bit immediate   Const   index into the constant table
//   Func    index into the functions  Kernel  index into the kernel table
//   Target  instruction index in the same function (jump target)
//   Str     index into the string table (Assert/Fatal messages)
//   DType   a DType code               Device  (device type << 32) | device id
//   Cmp     a CmpKind code
//   Regs    any number of registers read; always the last operand
//
// Adding an instruction is one line here plus its case in interpreter.cc. Numbering is
// part of the .vmexe format: append only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dynvm::vm {

enum class OperandKind : uint8_t {
  Dst, Reg, Imm, Const, Func, Kernel, Target, Str, DType, Device, Cmp, Regs
};

// clang-format off
#define DYNVM_OPCODES(X)                                                                   \
  X(Move,         "move",          Dst, Reg)                 /* dst = src */               \
  X(Ret,          "ret",           Reg)                      /* return src to the caller */\
  X(Invoke,       "invoke",        Dst, Func, Regs)          /* dst = func(args...) */      \
  X(InvokeKernel, "invoke_kernel", Kernel, Imm, Regs)        /* Imm = #inputs; then outputs */\
  X(If,           "if",            Reg, Target, Target)      /* int != 0 ? then : else */  \
  X(Goto,         "goto",          Target)                                                  \
  X(LoadConst,    "load_const",    Dst, Const)                                              \
  X(LoadImm,      "load_imm",      Dst, Imm)                                                \
  X(AllocStorage, "alloc_storage", Dst, Reg, Device)         /* Reg = size in bytes */      \
  X(AllocTensor,  "alloc_tensor",  Dst, Reg, Reg, Reg, DType) /* storage, offset, shape */  \
  X(ShapeOf,      "shape_of",      Dst, Reg)                                                \
  X(Dim,          "dim",           Dst, Reg, Imm)            /* tensor or shape, axis */    \
  X(AddI,         "add",           Dst, Reg, Reg)                                           \
  X(SubI,         "sub",           Dst, Reg, Reg)                                           \
  X(MulI,         "mul",           Dst, Reg, Reg)                                           \
  X(DivI,         "div",           Dst, Reg, Reg)            /* floor division */           \
  X(ModI,         "mod",           Dst, Reg, Reg)            /* floor modulo */             \
  X(MinI,         "min",           Dst, Reg, Reg)                                           \
  X(MaxI,         "max",           Dst, Reg, Reg)                                           \
  X(CmpI,         "cmp",           Dst, Cmp, Reg, Reg)       /* dst = (a <cmp> b) ? 1 : 0 */\
  X(MakeShape,    "make_shape",    Dst, Regs)                /* from integer registers */   \
  X(ReshapeView,  "reshape_view",  Dst, Reg, Reg)            /* tensor, shape */            \
  X(AllocTuple,   "alloc_tuple",   Dst, Regs)                                               \
  X(GetField,     "get_field",     Dst, Reg, Imm)                                           \
  X(DeviceCopy,   "device_copy",   Dst, Reg, Device)                                        \
  X(Free,         "free",          Reg)                      /* the register dies */        \
  X(Assert,       "assert",        Reg, Str)                 /* fail with Str if int == 0 */\
  X(Fatal,        "fatal",         Str)                                                     \
  X(LoadScalar,   "load_scalar",   Dst, Reg)                 /* 1-element host tensor -> int */\
  X(ShapeTensor,  "shape_tensor",  Dst, Reg, Imm, DType)     /* shape -> integer host      */\
                                                      /* tensor; Imm = rank (1: [n]; 0: []) */\
  X(TupleAppend,  "tuple_append",  Dst, Reg, Reg)            /* dst = tuple + (value,)     */\
  X(TupleGet,     "tuple_get",     Dst, Reg, Reg)            /* dst = tuple[int register]  */\
  X(LoadElem,     "load_elem",     Dst, Reg, Imm)            /* element Imm of a host      */\
                                                      /* integer tensor -> int (row-major) */\
  X(SelectI,      "select",        Dst, Reg, Reg, Reg)       /* dst = c != 0 ? a : b       */\
  X(TupleLen,     "tuple_len",     Dst, Reg)                 /* dst = number of fields     */\
  X(TupleInsert,  "tuple_insert",  Dst, Reg, Reg, Reg)       /* dst = tuple with value     */\
                                                   /* (last) inserted at int position 0..len */\
  X(TupleErase,   "tuple_erase",   Dst, Reg, Reg)            /* dst = tuple without field  */\
                                                           /* at int position 0..len-1 */\
  X(RowView,      "row_view",      Dst, Reg, Reg)            /* dst = tensor[int] along    */\
                                   /* axis 0, a view; a negative int counts from the end */
// clang-format on

enum class Opcode : uint8_t {
#define DYNVM_OPCODE_ENUM(name, mnemonic, ...) name,
  DYNVM_OPCODES(DYNVM_OPCODE_ENUM)
#undef DYNVM_OPCODE_ENUM
};

inline constexpr int kNumOpcodes = 0
#define DYNVM_OPCODE_COUNT(name, mnemonic, ...) +1
    DYNVM_OPCODES(DYNVM_OPCODE_COUNT)
#undef DYNVM_OPCODE_COUNT
    ;

inline constexpr int kMaxFixedOperands = 6;

struct OpcodeInfo {
  std::string_view name;      // "InvokeKernel"
  std::string_view mnemonic;  // "invoke_kernel"
  std::array<OperandKind, kMaxFixedOperands> operands;
  uint8_t num_operands;
  bool variadic;    // last operand is Regs
  bool terminator;  // never falls through to the next instruction
};

namespace detail {
template <typename... K>
constexpr OpcodeInfo make_opcode_info(std::string_view name, std::string_view mnemonic,
                                      K... kinds) {
  OpcodeInfo info{name, mnemonic, {}, static_cast<uint8_t>(sizeof...(kinds)), false, false};
  int i = 0;
  ((info.operands[i++] = kinds), ...);
  info.variadic = sizeof...(kinds) > 0 && info.operands[sizeof...(kinds) - 1] == OperandKind::Regs;
  info.terminator = name == "Ret" || name == "Goto" || name == "If" || name == "Fatal";
  return info;
}
}  // namespace detail

inline constexpr std::array<OpcodeInfo, kNumOpcodes> kOpcodeInfo = {{
#define DYNVM_OPCODE_INFO(name, mnemonic, ...)                 \
  [] {                                                         \
    using enum OperandKind;                                    \
    return detail::make_opcode_info(#name, mnemonic, __VA_ARGS__); \
  }(),
    DYNVM_OPCODES(DYNVM_OPCODE_INFO)
#undef DYNVM_OPCODE_INFO
}};

inline const OpcodeInfo& opcode_info(Opcode op) { return kOpcodeInfo[static_cast<size_t>(op)]; }
inline bool is_valid_opcode(int64_t code) { return code >= 0 && code < kNumOpcodes; }
std::optional<Opcode> opcode_from_mnemonic(std::string_view mnemonic);

enum class CmpKind : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
inline constexpr int kNumCmpKinds = 6;
std::string_view cmp_name(CmpKind k);  // "eq", "ne", ...
std::optional<CmpKind> cmp_from_name(std::string_view name);

}  // namespace dynvm::vm
