// Register allocation by greedy coloring of the interference graph (see
// allocate_registers.h).
#include "compiler/lower/allocate_registers.h"

#include <algorithm>
#include <limits>

#include "compiler/lower/liveness.h"
#include "vm/opcodes.h"

namespace dynvm::compiler {
namespace {

constexpr uint32_t kUncolored = std::numeric_limits<uint32_t>::max();

// One row of interference per register, as a bit set.
std::vector<RegSet> interference(const vm::Function& fn, const Liveness& live) {
  const size_t n = live.num_registers();
  std::vector<RegSet> adj(n, RegSet(n));
  auto interfere_with_all = [&](uint32_t r, const RegSet& others) {
    adj[r].unite(others);
    for (uint32_t o : others.members()) adj[o].set(r);
  };
  for (size_t b = 0; b < live.blocks().size(); ++b) {
    live.for_each_live_after(b, [&](size_t pc, const RegSet& after) {
      for (uint32_t w : register_use(fn.code[pc]).writes) interfere_with_all(w, after);
    });
    const RegSet& out = live.live_out(b);
    for (uint32_t r : out.members()) adj[r].unite(out);
  }
  // The parameters arrive together.
  RegSet params(n);
  for (uint32_t p = 0; p < fn.num_params && p < n; ++p) params.set(p);
  for (uint32_t p = 0; p < fn.num_params && p < n; ++p) adj[p].unite(params);
  return adj;
}

}  // namespace

void allocate_registers(vm::Function& fn, RegisterStats* stats) {
  Liveness live(fn);
  const size_t n = live.num_registers();
  if (stats != nullptr) *stats = {n, n};
  if (n > kMaxAllocatedRegisters) return;
  std::vector<RegSet> adj = interference(fn, live);

  std::vector<uint32_t> color(n, kUncolored);
  for (uint32_t p = 0; p < fn.num_params && p < n; ++p) color[p] = p;
  uint32_t slots = fn.num_params;
  auto assign = [&](uint32_t r) {
    if (color[r] != kUncolored) return;
    std::vector<bool> taken(slots + 1, false);
    for (uint32_t o : adj[r].members()) {
      if (o != r && color[o] != kUncolored) taken[color[o]] = true;
    }
    uint32_t c = 0;
    while (taken[c]) ++c;
    color[r] = c;
    slots = std::max(slots, c + 1);
  };
  // Registers in order of first appearance, so that nearby values take low slots.
  for (const vm::Instruction& ins : fn.code) {
    RegisterUse use = register_use(ins);
    for (uint32_t r : use.reads) assign(r);
    for (uint32_t r : use.writes) assign(r);
  }

  const std::vector<vm::OperandKind> register_kinds = {vm::OperandKind::Dst, vm::OperandKind::Reg,
                                                       vm::OperandKind::Regs};
  for (vm::Instruction& ins : fn.code) {
    const vm::OpcodeInfo& info = vm::opcode_info(ins.op);
    for (size_t k = 0; k < ins.args.size(); ++k) {
      vm::OperandKind kind = k < info.num_operands ? info.operands[k] : vm::OperandKind::Regs;
      if (std::find(register_kinds.begin(), register_kinds.end(), kind) != register_kinds.end()) {
        ins.args[k] = color[static_cast<size_t>(ins.args[k])];
      }
    }
  }
  // A move between two values that now share a slot does nothing.
  std::vector<std::vector<vm::Instruction>> replacement(fn.code.size());
  for (size_t pc = 0; pc < fn.code.size(); ++pc) {
    const vm::Instruction& ins = fn.code[pc];
    if (ins.op != vm::Opcode::Move || ins.args[0] != ins.args[1]) replacement[pc] = {ins};
  }
  rewrite_code(fn, replacement);
  fn.num_registers = std::max<uint32_t>(slots, fn.num_params);
  if (stats != nullptr) stats->after = fn.num_registers;
}

}  // namespace dynvm::compiler
