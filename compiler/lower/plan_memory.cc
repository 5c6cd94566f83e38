// Memory planning over bytecode (see plan_memory.h).
#include "compiler/lower/plan_memory.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "compiler/lower/liveness.h"
#include "compiler/lower/shape_code.h"
#include "kernels/arith/analyzer.h"
#include "kernels/arith/evaluate.h"
#include "vm/allocator.h"
#include "vm/error.h"
#include "vm/opcodes.h"

namespace dynvm::compiler {
namespace {

using vm::Opcode;

// AddI .. MaxI: integer arithmetic on two registers.
bool integer_binary(Opcode op) {
  switch (op) {
    case Opcode::AddI:
    case Opcode::SubI:
    case Opcode::MulI:
    case Opcode::DivI:
    case Opcode::ModI:
    case Opcode::MinI:
    case Opcode::MaxI:
      return true;
    default:
      return false;
  }
}

// How often each register is written in the whole function.
std::vector<size_t> write_counts(const vm::Function& fn, size_t num_registers) {
  std::vector<size_t> count(num_registers, 0);
  for (const vm::Instruction& ins : fn.code) {
    for (uint32_t r : register_use(ins).writes) ++count[r];
  }
  return count;
}

// Integer registers as expressions of the input dims: what the size of an allocation is
// for every input, so that sizes can be compared at compile time. Only registers written
// once have an expression (a register written in a loop and after it has no single value).
class IntValues {
 public:
  IntValues(const vm::Function& fn, const std::vector<vm::TensorSpec>& inputs,
            const std::vector<size_t>& writes)
      : values_(writes.size()) {
    for (const vm::Instruction& ins : fn.code) {
      const auto& a = ins.args;
      arith::Expr value;
      if (ins.op == Opcode::LoadImm) {
        value = arith::make_int(a[1]);
      } else if (ins.op == Opcode::Dim) {
        value = input_dim(fn, inputs, static_cast<size_t>(a[1]), a[2]);
      } else if (ins.op == Opcode::Move) {
        value = of(a[1]);
      } else if (integer_binary(ins.op)) {
        value = combine(ins.op, of(a[1]), of(a[2]));
      } else {
        continue;
      }
      if (writes[static_cast<size_t>(a[0])] == 1) values_[static_cast<size_t>(a[0])] = value;
    }
  }

  // Undefined when the register's value is not known as an expression.
  const arith::Expr& of(int64_t r) const { return values_[static_cast<size_t>(r)]; }
  // A value of every input dim, within its range, for choosing between plans that hold
  // for all of them (the same one for every dim: sizes keep their proportions).
  static constexpr int64_t kTypicalDim = 256;
  const arith::VarValues& typical() const { return typical_; }
  // The (parameter register, axis) whose dim `var` stands for, if it is one.
  std::optional<std::pair<size_t, int64_t>> dim_of(const arith::Var& var) const {
    for (const auto& [at, v] : dims_) {
      if (v && v->id() == var.id()) return at;
    }
    return std::nullopt;
  }
  const arith::Analyzer& analyzer() const { return analyzer_; }

  // The value as a constant, when it is one.
  std::optional<int64_t> constant(int64_t r) const {
    const arith::Expr& e = of(r);
    if (!e.defined()) return std::nullopt;
    arith::Expr s = analyzer_.simplify(e);
    if (!s.is_int_imm()) return std::nullopt;
    return s.int_value();
  }

 private:
  static arith::Expr combine(Opcode op, const arith::Expr& x, const arith::Expr& y) {
    if (!x.defined() || !y.defined()) return {};
    switch (op) {
      case Opcode::AddI:
        return x + y;
      case Opcode::SubI:
        return x - y;
      case Opcode::MulI:
        return x * y;
      case Opcode::DivI:
        return arith::floordiv(x, y);
      case Opcode::ModI:
        return arith::floormod(x, y);
      case Opcode::MinI:
        return arith::min(x, y);
      default:
        return arith::max(x, y);
    }
  }

  // A dim of a parameter: its constant, or a variable bounded by the declared range.
  arith::Expr input_dim(const vm::Function& fn, const std::vector<vm::TensorSpec>& inputs,
                        size_t tensor, int64_t axis) {
    if (tensor >= fn.num_params || tensor >= inputs.size() || axis < 0 ||
        static_cast<size_t>(axis) >= inputs[tensor].dims.size())
      return {};
    const vm::DimSpec& d = inputs[tensor].dims[static_cast<size_t>(axis)];
    if (!d.is_symbolic()) return arith::make_int(d.value);
    auto [it, fresh] = dims_.try_emplace({tensor, axis}, std::nullopt);
    if (fresh) {
      it->second = arith::Var(inputs[tensor].name + "." + std::to_string(axis));
      analyzer_.bind(*it->second, std::max<int64_t>(d.min, 0), d.max);
      typical_[it->second->id()] =
          std::min<int64_t>(std::max<int64_t>(kTypicalDim, d.min), d.max);
    }
    return *it->second;
  }

  std::vector<arith::Expr> values_;
  std::map<std::pair<size_t, int64_t>, std::optional<arith::Var>> dims_;  // one per input dim
  arith::VarValues typical_;
  arith::Analyzer analyzer_;
};

// One alloc_storage of the function.
struct Storage {
  size_t pc = 0;
  uint32_t reg = 0;
  int64_t device = 0;
  arith::Expr size;  // undefined: not known as an expression
  size_t block = 0;
  size_t end = 0;                // last instruction of the block that reads one of its tensors
  bool escapes = false;          // one of its tensors is live when the block ends
  bool zero_offset_only = true;  // read only by alloc_tensor at offset 0 in its block
  std::vector<size_t> tensor_pcs;
};

// For every register, the storages (indices) whose memory a value in it may reference:
// the storage itself, tensors allocated in it, views, moves, tuples holding them. Computed
// for the whole function to a fixed point (Loop bodies move values around the back edge).
std::vector<std::vector<uint32_t>> may_reference(const vm::Function& fn,
                                                 const std::vector<Storage>& storages,
                                                 size_t num_registers) {
  std::vector<std::vector<uint32_t>> refs(num_registers);
  for (uint32_t s = 0; s < storages.size(); ++s) refs[storages[s].reg].push_back(s);
  auto merge = [&](uint32_t dst, uint32_t src) {
    bool grew = false;
    for (uint32_t s : refs[src]) {
      auto& d = refs[dst];
      if (std::find(d.begin(), d.end(), s) == d.end()) {
        d.push_back(s);
        grew = true;
      }
    }
    return grew;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const vm::Instruction& ins : fn.code) {
      if (integer_binary(ins.op)) continue;  // integers reference nothing
      switch (ins.op) {
        // Values that hold no reference to a storage: integers, shapes, constants, fresh
        // host tensors, copies to another device.
        case Opcode::LoadImm:
        case Opcode::LoadConst:
        case Opcode::AllocStorage:
        case Opcode::ShapeOf:
        case Opcode::Dim:
        case Opcode::CmpI:
        case Opcode::MakeShape:
        case Opcode::LoadScalar:
        case Opcode::LoadElem:
        case Opcode::SelectI:
        case Opcode::ShapeTensor:
        case Opcode::DeviceCopy:
        case Opcode::TupleLen:
          break;
        case Opcode::AllocTensor:
        case Opcode::ReshapeView:
        case Opcode::RowView:
          changed |= merge(static_cast<uint32_t>(ins.args[0]), static_cast<uint32_t>(ins.args[1]));
          break;
        default: {
          // Moves, tuples, tuple reads, calls, anything new: the result may reference what
          // any operand references.
          RegisterUse use = register_use(ins);
          for (uint32_t w : use.writes) {
            for (uint32_t r : use.reads) changed |= merge(w, r);
          }
        }
      }
    }
  }
  return refs;
}

// Offsets for static-size storages with lifetimes [start, end] in one arena: largest
// first, each in the smallest gap between the ones it overlaps in time that fits it, else
// above them all. Returns the arena's size.
struct ArenaItem {
  size_t start, end;
  int64_t bytes;
  int64_t offset = 0;
};
int64_t pack_arena(std::vector<ArenaItem>& items) {
  std::vector<size_t> order(items.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return items[a].bytes > items[b].bytes; });
  std::vector<size_t> placed;
  int64_t total = 0;
  for (size_t k : order) {
    ArenaItem& item = items[k];
    std::vector<const ArenaItem*> overlapping;
    for (size_t p : placed) {
      if (items[p].start <= item.end && item.start <= items[p].end)
        overlapping.push_back(&items[p]);
    }
    std::sort(overlapping.begin(), overlapping.end(),
              [](const ArenaItem* a, const ArenaItem* b) { return a->offset < b->offset; });
    int64_t cursor = 0, best = -1, best_gap = 0;
    for (const ArenaItem* other : overlapping) {
      int64_t gap = other->offset - cursor;
      if (gap >= item.bytes && (best < 0 || gap < best_gap)) {
        best = cursor;
        best_gap = gap;
      }
      cursor = std::max(cursor, other->offset + other->bytes);
    }
    item.offset = best >= 0 ? best : cursor;
    total = std::max(total, item.offset + item.bytes);
    placed.push_back(k);
  }
  return total;
}

int64_t round_up(int64_t bytes, int64_t to) { return (bytes + to - 1) / to * to; }

class MemoryPlanner {
 public:
  MemoryPlanner(vm::Function& fn, const std::vector<vm::TensorSpec>& inputs)
      : fn_(fn),
        live_(fn),
        writes_(write_counts(fn, live_.num_registers())),
        ints_(fn, inputs, writes_),
        replacement_(fn.code.size()) {
    for (size_t pc = 0; pc < fn.code.size(); ++pc) replacement_[pc] = {fn.code[pc]};
  }

  void run(MemoryPlanStats* stats) {
    find_storages();
    if (storages_.empty()) return;
    refs_ = may_reference(fn_, storages_, live_.num_registers());
    find_lifetimes();
    std::vector<bool> in_arena(storages_.size(), false);
    for (size_t b = 0; b < live_.blocks().size(); ++b) {
      plan_arenas(b, &in_arena, stats);
      plan_symbolic_arena(b, &in_arena, stats);
    }
    for (size_t b = 0; b < live_.blocks().size(); ++b) plan_reuse(b, in_arena, stats);
    fn_.num_registers = next_reg_;
    rewrite_code(fn_, replacement_);
    remove_dead_integer_code(stats);
  }

 private:
  void find_storages() {
    next_reg_ = static_cast<uint32_t>(live_.num_registers());
    std::vector<int64_t> storage_of_reg(live_.num_registers(), -1);
    for (size_t pc = 0; pc < fn_.code.size(); ++pc) {
      const vm::Instruction& ins = fn_.code[pc];
      if (ins.op != Opcode::AllocStorage) continue;
      Storage s;
      s.pc = pc;
      s.reg = static_cast<uint32_t>(ins.args[0]);
      s.device = ins.args[2];
      s.block = live_.block_of(pc);
      if (writes_[s.reg] == 1) s.size = ints_.of(ins.args[1]);
      storage_of_reg[s.reg] = static_cast<int64_t>(storages_.size());
      storages_.push_back(s);
    }
    // Who reads each storage register: alloc_tensor at offset 0 in its block, or else.
    for (size_t pc = 0; pc < fn_.code.size(); ++pc) {
      const vm::Instruction& ins = fn_.code[pc];
      for (uint32_t r : register_use(ins).reads) {
        if (storage_of_reg[r] < 0) continue;
        Storage& s = storages_[static_cast<size_t>(storage_of_reg[r])];
        bool plain = ins.op == Opcode::AllocTensor && ins.args[1] == r &&
                     ints_.constant(ins.args[2]) == 0 && live_.block_of(pc) == s.block && pc > s.pc;
        if (plain) {
          s.tensor_pcs.push_back(pc);
        } else {
          s.zero_offset_only = false;
        }
      }
    }
  }

  // Each storage's last use in its block (the last instruction reading a register that
  // may reference it), and whether it outlives the block (such a register is live when
  // the block ends).
  void find_lifetimes() {
    for (Storage& st : storages_) st.end = st.pc;
    for (const vm::Instruction& ins : fn_.code) {
      if (ins.op != Opcode::Ret) continue;  // results leave the function, so their block
      for (uint32_t s : refs_[static_cast<uint32_t>(ins.args[0])]) storages_[s].escapes = true;
    }
    for (size_t b = 0; b < live_.blocks().size(); ++b) {
      for (uint32_t r : live_.live_out(b).members()) {
        for (uint32_t s : refs_[r]) {
          if (storages_[s].block == b) storages_[s].escapes = true;
        }
      }
    }
    for (size_t pc = 0; pc < fn_.code.size(); ++pc) {
      for (uint32_t r : register_use(fn_.code[pc]).reads) {
        for (uint32_t s : refs_[r]) {
          Storage& st = storages_[s];
          if (st.block == live_.block_of(pc) && st.pc < pc) st.end = std::max(st.end, pc);
        }
      }
    }
  }

  // The storages of block b an arena can hold (dying in it, read only as tensors at offset
  // 0, of a known size) whose sizes are constants (`static_sizes`) or not, not in an arena
  // yet, grouped by device.
  std::vector<std::pair<int64_t, std::vector<uint32_t>>> arena_candidates(
      size_t b, const std::vector<bool>& in_arena, bool static_sizes) const {
    std::vector<std::pair<int64_t, std::vector<uint32_t>>> by_device;
    for (uint32_t s = 0; s < storages_.size(); ++s) {
      const Storage& st = storages_[s];
      if (st.block != b || in_arena[s] || st.escapes || !st.zero_offset_only ||
          !st.size.defined() || ints_.analyzer().simplify(st.size).is_int_imm() != static_sizes) {
        continue;
      }
      auto it = std::find_if(by_device.begin(), by_device.end(),
                             [&](const auto& d) { return d.first == st.device; });
      if (it == by_device.end()) {
        by_device.push_back({st.device, {}});
        it = by_device.end() - 1;
      }
      it->second.push_back(s);
    }
    return by_device;
  }

  // 1. The static-size storages of block b that die in it, packed into one arena.
  void plan_arenas(size_t b, std::vector<bool>* in_arena, MemoryPlanStats* stats) {
    const auto by_device = arena_candidates(b, *in_arena, true);
    for (const auto& [device, members] : by_device) {
      if (members.size() < 2) continue;
      std::vector<ArenaItem> items;
      for (uint32_t s : members) {
        const Storage& st = storages_[s];
        int64_t bytes = ints_.analyzer().simplify(st.size).int_value();
        items.push_back(
            {st.pc, st.end,
             round_up(std::max<int64_t>(bytes, 1), static_cast<int64_t>(vm::kTensorAlignment))});
      }
      int64_t total = pack_arena(items);
      uint32_t size_reg = next_reg_++, arena = next_reg_++;
      const size_t first = storages_[members.front()].pc;
      std::vector<vm::Instruction>& head = replacement_[first];
      head.insert(head.begin(), {{Opcode::LoadImm, {size_reg, total}},
                                 {Opcode::AllocStorage, {arena, size_reg, device}}});
      for (size_t k = 0; k < members.size(); ++k) {
        Storage& st = storages_[members[k]];
        uint32_t offset = next_reg_++;
        // The storage's own alloc_storage becomes its offset in the arena (the first one
        // keeps the arena's allocation in front of it).
        std::vector<vm::Instruction>& at = replacement_[st.pc];
        at.back() = {Opcode::LoadImm, {offset, items[k].offset}};
        for (size_t pc : st.tensor_pcs) {
          vm::Instruction& t = replacement_[pc].back();
          t.args[1] = arena;
          t.args[2] = offset;
        }
        (*in_arena)[members[k]] = true;
        if (stats) stats->static_bytes += items[k].bytes;
      }
      if (stats) {
        ++stats->arenas;
        stats->in_arenas += members.size();
        stats->arena_bytes += total;
      }
    }
  }

  // 1b. The storages of block b with symbolic sizes (expressions of the input dims) that
  // die in it, in one arena as well: where the first is allocated, the arena's size and
  // every offset are computed from the input dims. The layout is the static packer's at
  // typical dims (IntValues::typical), kept as an order: each storage sits above those it
  // overlaps in time and lay below it there, at the largest of their ends, which holds
  // whatever the sizes. Without it each went to the pool on its own, whose size classes
  // kept 44-58 MiB of blocks for a DenseNet at 224x224 that the static build runs in a
  // 12 MiB arena, out of the cache.
  void plan_symbolic_arena(size_t b, std::vector<bool>* in_arena, MemoryPlanStats* stats) {
    const arith::Analyzer& an = ints_.analyzer();
    const auto by_device = arena_candidates(b, *in_arena, false);
    for (const auto& [device, members] : by_device) {
      if (members.size() < 2) continue;
      const arith::Expr align = arith::make_int(static_cast<int64_t>(vm::kTensorAlignment));
      const size_t n = members.size();
      std::vector<arith::Expr> bytes;
      std::vector<ArenaItem> typical;
      bool evaluated = true;
      for (uint32_t s : members) {
        const Storage& st = storages_[s];
        bytes.push_back(an.simplify(
            arith::floordiv(arith::max(st.size, arith::make_int(1)) + (align - 1), align) * align));
        int64_t at_typical = 0;
        try {
          at_typical = arith::evaluate(bytes.back(), ints_.typical());
        } catch (const UserError&) {
          evaluated = false;  // e.g. an overflow at the typical dims: allocation order then
        }
        typical.push_back({st.pc, st.end, at_typical});
      }
      if (evaluated) pack_arena(typical);
      std::vector<size_t> order(n);  // from the bottom of the arena up
      for (size_t k = 0; k < n; ++k) order[k] = k;
      if (evaluated) {
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
          return typical[x].offset < typical[y].offset;
        });
      }
      // Ends of storages (offset + bytes, and their sizes at the typical dims) and the
      // largest of some: the one largest at the typical dims, and those it is not provably
      // at least (a simplify of the nested maxima took 14 s for a DenseNet's 82 storages).
      struct End {
        arith::Expr at;
        int64_t typical;
      };
      auto end_of = [](const arith::Expr& offset, const arith::Expr& size) {
        return offset.is_int_imm() && offset.int_value() == 0 ? size : offset + size;
      };
      auto highest = [&](std::vector<End> ends) {
        if (ends.empty()) return arith::make_int(0);
        std::stable_sort(ends.begin(), ends.end(),
                         [](const End& x, const End& y) { return x.typical > y.typical; });
        arith::Expr top = ends.front().at;
        for (size_t e = 1; e < ends.size(); ++e) {
          if (!an.can_prove(arith::ge(ends.front().at, ends[e].at))) {
            top = arith::max(top, ends[e].at);
          }
        }
        return top;
      };
      std::vector<arith::Expr> offsets(n);
      std::vector<End> tops;
      for (size_t i = 0; i < n; ++i) {
        const size_t k = order[i];
        std::vector<End> below_k;
        for (size_t below = 0; below < i; ++below) {
          const size_t j = order[below];
          if (typical[j].start <= typical[k].end && typical[k].start <= typical[j].end) {
            below_k.push_back({end_of(offsets[j], bytes[j]), typical[j].offset + typical[j].bytes});
          }
        }
        offsets[k] = highest(std::move(below_k));
        tops.push_back({end_of(offsets[k], bytes[k]), typical[k].offset + typical[k].bytes});
      }
      const arith::Expr total = highest(std::move(tops));
      std::vector<vm::Instruction> head;
      ShapeCode code(&head, &next_reg_);
      code.set_resolver([&](const arith::Var& var) -> std::optional<uint32_t> {
        auto at = ints_.dim_of(var);
        if (!at) return std::nullopt;
        const uint32_t r = next_reg_++;
        head.push_back({Opcode::Dim, {r, static_cast<int64_t>(at->first), at->second}});
        return r;
      });
      const uint32_t size_reg = code.emit(total), arena = next_reg_++;
      head.push_back({Opcode::AllocStorage, {arena, size_reg, device}});
      std::vector<uint32_t> offset_regs;
      for (const arith::Expr& offset : offsets) offset_regs.push_back(code.emit(offset));
      for (size_t k = 0; k < members.size(); ++k) {
        const Storage& st = storages_[members[k]];
        replacement_[st.pc].pop_back();  // its alloc_storage
        for (size_t pc : st.tensor_pcs) {
          vm::Instruction& t = replacement_[pc].back();
          t.args[1] = arena;
          t.args[2] = offset_regs[k];
        }
        (*in_arena)[members[k]] = true;
      }
      std::vector<vm::Instruction>& first = replacement_[storages_[members.front()].pc];
      first.insert(first.begin(), head.begin(), head.end());
      if (stats) {
        ++stats->symbolic_arenas;
        stats->in_symbolic_arenas += members.size();
      }
    }
  }

  // Memory in hand while planning a block: allocated by `storage` (or handed on to it),
  // held in `reg`, `bytes` large (the first allocation's size).
  struct Held {
    uint32_t storage;
    uint32_t reg;
    arith::Expr bytes;
  };

  // 2. In block b, in order: each allocation with a known size takes a dead storage of
  // the block whose size provably suffices (an equal one first).
  void plan_reuse(size_t b, const std::vector<bool>& in_arena, MemoryPlanStats* stats) {
    std::vector<Held> holding, free;
    for (uint32_t s = 0; s < storages_.size(); ++s) {
      const Storage& st = storages_[s];
      if (st.block != b || in_arena[s] || !st.size.defined()) continue;
      // Memory whose holder is dead (its last use came before this allocation) is free.
      for (size_t k = 0; k < holding.size();) {
        if (storages_[holding[k].storage].end < st.pc) {
          free.push_back(holding[k]);
          holding.erase(holding.begin() + static_cast<std::ptrdiff_t>(k));
        } else {
          ++k;
        }
      }
      arith::Expr bytes = st.size;
      std::optional<size_t> taken = take(free, st);
      if (taken) {
        replacement_[st.pc].back() = {Opcode::Move, {st.reg, free[*taken].reg}};
        bytes = free[*taken].bytes;
        free.erase(free.begin() + static_cast<std::ptrdiff_t>(*taken));
        if (stats) ++stats->reused;
      }
      if (!st.escapes) holding.push_back({s, st.reg, bytes});
    }
  }

  // The free memory an allocation of `st` can take: on the same device, provably large
  // enough for every input in range; an exactly equal size first.
  std::optional<size_t> take(const std::vector<Held>& free, const Storage& st) const {
    const arith::Analyzer& an = ints_.analyzer();
    std::optional<size_t> larger;
    for (size_t k = 0; k < free.size(); ++k) {
      if (storages_[free[k].storage].device != st.device) continue;
      if (an.provably_equal(free[k].bytes, st.size)) return k;
      if (!larger && an.can_prove(arith::ge(free[k].bytes, st.size))) larger = k;
    }
    return larger;
  }

  // 3. Integer instructions whose result nobody reads (the sizes of allocations that
  // became moves), removed until none is left.
  void remove_dead_integer_code(MemoryPlanStats* stats) {
    for (bool removed = true; removed;) {
      removed = false;
      std::vector<size_t> reads(fn_.num_registers, 0);
      for (const vm::Instruction& ins : fn_.code) {
        for (uint32_t r : register_use(ins).reads) ++reads[r];
      }
      std::vector<std::vector<vm::Instruction>> replacement(fn_.code.size());
      for (size_t pc = 0; pc < fn_.code.size(); ++pc) {
        const vm::Instruction& ins = fn_.code[pc];
        if (pure_integer(ins.op) && reads[static_cast<size_t>(ins.args[0])] == 0) {
          removed = true;
          if (stats) ++stats->removed;
          continue;
        }
        replacement[pc] = {ins};
      }
      if (removed) rewrite_code(fn_, replacement);
    }
  }

  // DivI and ModI can fail (by zero) and Dim checks a rank: they stay.
  static bool pure_integer(Opcode op) {
    if (op == Opcode::DivI || op == Opcode::ModI) return false;
    return integer_binary(op) || op == Opcode::LoadImm || op == Opcode::CmpI ||
           op == Opcode::SelectI || op == Opcode::MakeShape;
  }

  vm::Function& fn_;
  Liveness live_;
  std::vector<size_t> writes_;
  IntValues ints_;
  std::vector<std::vector<vm::Instruction>> replacement_;
  std::vector<Storage> storages_;
  std::vector<std::vector<uint32_t>> refs_;
  uint32_t next_reg_ = 0;
};

}  // namespace

void plan_memory(vm::Function& fn, const std::vector<vm::TensorSpec>& inputs,
                 MemoryPlanStats* stats) {
  if (stats != nullptr) {
    *stats = {};
    for (const vm::Instruction& ins : fn.code) stats->storages += ins.op == Opcode::AllocStorage;
  }
  MemoryPlanner(fn, inputs).run(stats);
}

}  // namespace dynvm::compiler
