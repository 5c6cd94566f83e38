// Register liveness over a bytecode function: the registers each instruction reads and
// writes (from the opcode table), the basic blocks and their edges, and which registers
// are live (read later on some path before being written again) at every point. The
// post-lowering steps use it: memory planning (plan_memory.h) to know when a storage is
// dead, insert_frees (insert_frees.h) to free each register after its last use.
//
//   Liveness live(fn);
//   for (size_t b = 0; b < live.blocks().size(); ++b) {
//     live.for_each_live_after(b, [&](size_t pc, const RegSet& after) { ... });
//   }
//
// An InvokeKernel's output registers count as reads: the kernel writes into tensors
// allocated before it, so they must hold their tensor when it runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "vm/executable.h"

namespace dynvm::compiler {

// A set of registers, one bit each.
class RegSet {
 public:
  explicit RegSet(size_t num_registers = 0) : words_((num_registers + 63) / 64, 0) {}
  bool test(uint32_t r) const { return (words_[r / 64] >> (r % 64)) & 1; }
  void set(uint32_t r) { words_[r / 64] |= uint64_t{1} << (r % 64); }
  void reset(uint32_t r) { words_[r / 64] &= ~(uint64_t{1} << (r % 64)); }
  // Adds every register of `other`; true when this set grew.
  bool unite(const RegSet& other);
  // Registers of this set, ascending.
  std::vector<uint32_t> members() const;
  bool operator==(const RegSet&) const = default;

 private:
  std::vector<uint64_t> words_;
};

// The registers an instruction reads and writes, each once, in operand order.
struct RegisterUse {
  std::vector<uint32_t> reads;
  std::vector<uint32_t> writes;
};
RegisterUse register_use(const vm::Instruction& ins);

// Instructions [begin, end) with control entering only at begin and leaving only at end - 1.
struct BasicBlock {
  size_t begin = 0;
  size_t end = 0;
  std::vector<size_t> successors;    // block indices
  std::vector<size_t> predecessors;  // block indices
};
std::vector<BasicBlock> basic_blocks(const vm::Function& fn);

class Liveness {
 public:
  explicit Liveness(const vm::Function& fn);

  const std::vector<BasicBlock>& blocks() const { return blocks_; }
  size_t block_of(size_t pc) const { return block_of_[pc]; }
  const RegSet& live_in(size_t block) const { return live_in_[block]; }
  const RegSet& live_out(size_t block) const { return live_out_[block]; }
  // Calls f(pc, registers live right after pc) for each instruction of `block`, last to
  // first. One set is updated in place: a set per instruction would take instructions x
  // registers bits (a long straight-line function has hundreds of thousands of both).
  void for_each_live_after(size_t block, const std::function<void(size_t, const RegSet&)>& f) const;
  size_t num_registers() const { return num_registers_; }

 private:
  const vm::Function& fn_;
  size_t num_registers_;
  std::vector<BasicBlock> blocks_;
  std::vector<size_t> block_of_;
  std::vector<RegSet> live_in_, live_out_;
};

// Replaces each instruction pc by `replacement[pc]` (one entry per instruction; empty
// removes it), keeping every jump on its instruction: jump targets in the replacements
// name old instruction indices and are renumbered, a jump to pc landing on the first
// instruction of replacement[pc] (or what follows, if that is empty).
void rewrite_code(vm::Function& fn, const std::vector<std::vector<vm::Instruction>>& replacement);

}  // namespace dynvm::compiler
