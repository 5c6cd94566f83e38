// Register liveness over bytecode (see liveness.h): a textbook backward data-flow
// analysis over basic blocks, iterated to a fixed point (Loops make the graph cyclic).
#include "compiler/lower/liveness.h"

#include <algorithm>
#include <bit>

#include "vm/error.h"
#include "vm/opcodes.h"

namespace dynvm::compiler {

bool RegSet::unite(const RegSet& other) {
  bool grew = false;
  for (size_t k = 0; k < words_.size(); ++k) {
    uint64_t merged = words_[k] | other.words_[k];
    grew |= merged != words_[k];
    words_[k] = merged;
  }
  return grew;
}

std::vector<uint32_t> RegSet::members() const {
  std::vector<uint32_t> out;
  for (size_t k = 0; k < words_.size(); ++k) {
    for (uint64_t w = words_[k]; w != 0; w &= w - 1) {
      out.push_back(static_cast<uint32_t>(k * 64 + static_cast<size_t>(std::countr_zero(w))));
    }
  }
  return out;
}

RegisterUse register_use(const vm::Instruction& ins) {
  const vm::OpcodeInfo& info = vm::opcode_info(ins.op);
  RegisterUse use;
  auto add = [](std::vector<uint32_t>& to, int64_t r) {
    uint32_t reg = static_cast<uint32_t>(r);
    if (std::find(to.begin(), to.end(), reg) == to.end()) to.push_back(reg);
  };
  for (size_t k = 0; k < ins.args.size(); ++k) {
    vm::OperandKind kind = k < info.num_operands ? info.operands[k] : vm::OperandKind::Regs;
    if (kind == vm::OperandKind::Dst) add(use.writes, ins.args[k]);
    if (kind == vm::OperandKind::Reg || kind == vm::OperandKind::Regs) add(use.reads, ins.args[k]);
  }
  return use;
}

namespace {

// The instructions control can go to after `pc`.
std::vector<size_t> next_pcs(const vm::Function& fn, size_t pc) {
  const vm::Instruction& ins = fn.code[pc];
  switch (ins.op) {
    case vm::Opcode::If:
      return {static_cast<size_t>(ins.args[1]), static_cast<size_t>(ins.args[2])};
    case vm::Opcode::Goto:
      return {static_cast<size_t>(ins.args[0])};
    case vm::Opcode::Ret:
    case vm::Opcode::Fatal:
      return {};
    default:
      return {pc + 1};
  }
}

}  // namespace

std::vector<BasicBlock> basic_blocks(const vm::Function& fn) {
  const size_t n = fn.code.size();
  std::vector<bool> leader(n + 1, false);
  leader[0] = true;
  for (size_t pc = 0; pc < n; ++pc) {
    if (!vm::opcode_info(fn.code[pc].op).terminator) continue;
    leader[pc + 1] = true;
    for (size_t t : next_pcs(fn, pc)) leader[std::min(t, n)] = true;
  }
  std::vector<BasicBlock> blocks;
  std::vector<size_t> block_at(n + 1, 0);
  for (size_t pc = 0; pc < n; ++pc) {
    if (leader[pc]) blocks.push_back({pc, pc, {}, {}});
    block_at[pc] = blocks.size() - 1;
    blocks.back().end = pc + 1;
  }
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (size_t t : next_pcs(fn, blocks[b].end - 1)) {
      if (t >= n) continue;  // falls off the end: the verifier refuses that
      size_t s = block_at[t];
      if (std::find(blocks[b].successors.begin(), blocks[b].successors.end(), s) !=
          blocks[b].successors.end())
        continue;
      blocks[b].successors.push_back(s);
      blocks[s].predecessors.push_back(b);
    }
  }
  return blocks;
}

Liveness::Liveness(const vm::Function& fn) : fn_(fn), num_registers_(fn.num_registers) {
  for (const vm::Instruction& ins : fn.code) {
    RegisterUse use = register_use(ins);
    for (uint32_t r : use.reads) num_registers_ = std::max<size_t>(num_registers_, r + 1);
    for (uint32_t r : use.writes) num_registers_ = std::max<size_t>(num_registers_, r + 1);
  }
  blocks_ = basic_blocks(fn);
  block_of_.assign(fn.code.size(), 0);
  for (size_t b = 0; b < blocks_.size(); ++b) {
    for (size_t pc = blocks_[b].begin; pc < blocks_[b].end; ++pc) block_of_[pc] = b;
  }
  // Per block: registers read before any write in it (uses) and registers it writes (defs).
  std::vector<RegSet> uses(blocks_.size(), RegSet(num_registers_));
  std::vector<RegSet> defs(blocks_.size(), RegSet(num_registers_));
  for (size_t b = 0; b < blocks_.size(); ++b) {
    for (size_t pc = blocks_[b].begin; pc < blocks_[b].end; ++pc) {
      RegisterUse use = register_use(fn.code[pc]);
      for (uint32_t r : use.reads)
        if (!defs[b].test(r)) uses[b].set(r);
      for (uint32_t r : use.writes) defs[b].set(r);
    }
  }
  live_in_.assign(blocks_.size(), RegSet(num_registers_));
  live_out_.assign(blocks_.size(), RegSet(num_registers_));
  // in = uses | (out - defs); out = union of the successors' in. Backward order converges
  // fastest; iterate until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t b = blocks_.size(); b-- > 0;) {
      for (size_t s : blocks_[b].successors) live_out_[b].unite(live_in_[s]);
      RegSet in = live_out_[b];
      for (uint32_t r : defs[b].members()) in.reset(r);
      in.unite(uses[b]);
      if (!(in == live_in_[b])) {
        live_in_[b] = std::move(in);
        changed = true;
      }
    }
  }
}

void Liveness::for_each_live_after(size_t block,
                                   const std::function<void(size_t, const RegSet&)>& f) const {
  const BasicBlock& bb = blocks_[block];
  RegSet live = live_out_[block];
  for (size_t pc = bb.end; pc-- > bb.begin;) {
    f(pc, live);
    RegisterUse use = register_use(fn_.code[pc]);
    for (uint32_t r : use.writes) live.reset(r);
    for (uint32_t r : use.reads) live.set(r);
  }
}

void rewrite_code(vm::Function& fn, const std::vector<std::vector<vm::Instruction>>& replacement) {
  const size_t n = fn.code.size();
  DYNVM_INTERNAL_CHECK(replacement.size() == n, "a rewrite of ", replacement.size(),
                       " instructions for ", n);
  std::vector<int64_t> new_pc(n + 1, 0);
  size_t size = 0;
  for (size_t pc = 0; pc < n; ++pc) {
    new_pc[pc] = static_cast<int64_t>(size);
    size += replacement[pc].size();
  }
  new_pc[n] = static_cast<int64_t>(size);
  std::vector<vm::Instruction> code;
  code.reserve(size);
  for (const std::vector<vm::Instruction>& instructions : replacement) {
    for (vm::Instruction ins : instructions) {
      const vm::OpcodeInfo& info = vm::opcode_info(ins.op);
      for (size_t k = 0; k < info.num_operands && k < ins.args.size(); ++k) {
        if (info.operands[k] != vm::OperandKind::Target) continue;
        DYNVM_INTERNAL_CHECK(ins.args[k] >= 0 && static_cast<size_t>(ins.args[k]) <= n,
                             "a jump out of the function");
        ins.args[k] = new_pc[static_cast<size_t>(ins.args[k])];
      }
      code.push_back(std::move(ins));
    }
  }
  fn.code = std::move(code);
}

}  // namespace dynvm::compiler
