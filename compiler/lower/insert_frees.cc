// Free at last use (see insert_frees.h).
#include "compiler/lower/insert_frees.h"

#include <algorithm>

#include "compiler/lower/liveness.h"
#include "vm/opcodes.h"

namespace dynvm::compiler {

void insert_frees(vm::Function& fn, FreeStats* stats) {
  Liveness live(fn);
  const size_t n = fn.code.size();
  std::vector<std::vector<vm::Instruction>> before(n), after(n);  // Frees around each pc
  size_t count = 0;
  for (size_t b = 0; b < live.blocks().size(); ++b) {
    const BasicBlock& bb = live.blocks()[b];
    // Registers live when the one predecessor left but dead here: freed on entry. (With
    // several predecessors each may hold different registers; they stay until return.)
    if (bb.predecessors.size() == 1) {
      RegSet dying = live.live_out(bb.predecessors[0]);
      for (uint32_t r : dying.members()) {
        if (live.live_in(b).test(r)) continue;
        before[bb.begin].push_back({vm::Opcode::Free, {r}});
        ++count;
      }
    }
    live.for_each_live_after(b, [&](size_t pc, const RegSet& live_after) {
      const vm::Instruction& ins = fn.code[pc];
      if (vm::opcode_info(ins.op).terminator) return;
      RegisterUse use = register_use(ins);
      for (uint32_t r : use.reads) {
        if (live_after.test(r)) continue;
        if (std::find(use.writes.begin(), use.writes.end(), r) != use.writes.end()) continue;
        after[pc].push_back({vm::Opcode::Free, {r}});
        ++count;
      }
    });
  }
  std::vector<std::vector<vm::Instruction>> replacement(n);
  for (size_t pc = 0; pc < n; ++pc) {
    replacement[pc] = std::move(before[pc]);
    replacement[pc].push_back(fn.code[pc]);
    replacement[pc].insert(replacement[pc].end(), after[pc].begin(), after[pc].end());
  }
  rewrite_code(fn, replacement);
  if (stats != nullptr) stats->frees = count;
}

}  // namespace dynvm::compiler
