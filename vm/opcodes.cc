#include "vm/opcodes.h"

namespace dynvm::vm {

std::optional<Opcode> opcode_from_mnemonic(std::string_view mnemonic) {
  for (int i = 0; i < kNumOpcodes; ++i) {
    if (kOpcodeInfo[i].mnemonic == mnemonic) return static_cast<Opcode>(i);
  }
  return std::nullopt;
}

namespace {
constexpr std::string_view kCmpNames[kNumCmpKinds] = {"eq", "ne", "lt", "le", "gt", "ge"};
}

std::string_view cmp_name(CmpKind k) { return kCmpNames[static_cast<size_t>(k)]; }

std::optional<CmpKind> cmp_from_name(std::string_view name) {
  for (int i = 0; i < kNumCmpKinds; ++i) {
    if (kCmpNames[i] == name) return static_cast<CmpKind>(i);
  }
  return std::nullopt;
}

}  // namespace dynvm::vm
