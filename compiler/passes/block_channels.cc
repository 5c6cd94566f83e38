// Depthwise-separable conv chains in the channel-blocked layout (see block_channels.h).
#include "compiler/passes/block_channels.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "compiler/ir/functor.h"
#include "kernels/ops/conv_blocked.h"
#include "kernels/ops/conv_winograd.h"

namespace dynvm::compiler {
namespace {

constexpr int64_t kBlock = ops::kChannelBlock;
// Fewer channels would waste most of every vector on the padded lanes.
constexpr int64_t kMinChannels = 8;
// A dense conv is blocked when its padded output lanes are at most 1/kMaxLaneWaste of its
// channels.
constexpr int64_t kMaxLaneWaste = 8;
// The padded output lanes a conv by Winograd may have: 1/4 of its channels.
constexpr int64_t kMaxWinogradLaneWaste = 4;
// The input channels a group needs to run by Winograd.
constexpr int64_t kMinWinogradGroupChannels = 32;
// Wider convs stay direct: their transformed weights (36 * 4 bytes a channel pair, 38 MB at
// 512 x 512) would be streamed from memory for maps that are small where they are that wide.
constexpr int64_t kMaxWinogradChannelPairs = 512 * 512;
// Winograd's output tile: F(4x4, 3x3).
constexpr int64_t kWinogradTile = 4;

// Elementwise ops that map finite values to finite values: the padded lanes stay finite, so
// the zero weights of the next conv cancel them (0 * inf would not).
const std::unordered_set<std::string>& finite_elementwise() {
  // Erf: GELU's exact form; Elu, Selu and Celu take exp of negative values only.
  static const std::unordered_set<std::string> ops{
      "Relu", "LeakyRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",  "Neg",
      "Abs",  "Add",       "Sub",  "Mul",     "Max",         "Min",       "PRelu", "Identity",
      "Erf",  "Elu",       "Selu", "Celu",    "Gelu",        "Softsign"};
  return ops;
}

bool is_absent(const Expr& e) { return e.kind() == ExprKind::kTuple && e->operands.empty(); }

// An f32 tensor type of this rank whose channel dim (1) is the constant `channels` (any, when
// `channels` is 0), or nullopt.
std::optional<int64_t> nchw_channels(const Type& t) {
  if (!t.defined() || !t.is_tensor() || t->dtype != vm::DType::kFloat32 || t->dims.size() != 4 ||
      !t->dims[1].is_const()) {
    return std::nullopt;
  }
  return t->dims[1].value();
}

// [N, C, H, W] -> [N, ceil(C/16), H, W, 16].
Type blocked_type(const Type& nchw) {
  const std::vector<Dim>& d = nchw->dims;
  return tensor_type(vm::DType::kFloat32,
                     {d[0], Dim(ops::channel_blocks(d[1].value())), d[2], d[3], Dim(kBlock)});
}

vm::Tensor zeros(const vm::Shape& shape) {
  vm::Tensor t = vm::Tensor::empty(shape, vm::DType::kFloat32);
  std::fill(t.data_as<float>(), t.data_as<float>() + t.numel(), 0.0f);
  return t;
}

// Per-channel values (`channels` of them, in order) as `shape`, whose last dim is the lane:
// element c at block c / 16, lane c % 16; zero past the channels.
vm::Tensor pack_channels(const vm::Tensor& v, int64_t channels, const vm::Shape& shape) {
  vm::Tensor out = zeros(shape);
  for (int64_t c = 0; c < channels; ++c) out.data_as<float>()[c] = v.data_as<float>()[c];
  return out;
}

// A Conv this pass can block: its geometry and constant weights.
struct BlockableConv {
  bool depthwise = false;   // else dense
  int64_t groups = 1;       // dense: groups of whole blocks
  bool nchw_input = false;  // a dense conv over too few channels to block (a stem's 3)
  bool pointwise = false;   // dense, 1x1, unit strides, no pads
  int64_t c = 0, m = 0;
  std::vector<int64_t> kernel, strides, pads, dilations;
  vm::Tensor w, b;  // b undefined without a bias
};

bool winograd_fits(const BlockableConv& conv);

// `winograd`: whether convs that fit Winograd run by it (the padded lanes they may take).
std::optional<BlockableConv> blockable_conv(const Expr& call,
                                            const std::unordered_map<uint64_t, ValueFacts>& facts,
                                            bool winograd) {
  if (call.kind() != ExprKind::kCall || call->name != "Conv") return std::nullopt;
  const auto& ops = call->operands;
  if (ops.size() < 2 || ops.size() > 3) return std::nullopt;
  std::optional<int64_t> c = nchw_channels(ops[0].type()), m = nchw_channels(call.type());
  if (!c || !m || *m < kMinChannels) return std::nullopt;
  BlockableConv r;
  r.c = *c;
  r.m = *m;
  r.w = constant_operand(facts, ops[1]);
  if (!r.w.defined() || r.w.dtype() != vm::DType::kFloat32 || r.w.shape().size() != 4 ||
      r.w.shape()[0] != r.m) {
    return std::nullopt;
  }
  if (ops.size() == 3 && !is_absent(ops[2])) {
    r.b = constant_operand(facts, ops[2]);
    if (!r.b.defined() || r.b.dtype() != vm::DType::kFloat32 || r.b.numel() != r.m) {
      return std::nullopt;
    }
  }
  const std::string where = "Conv";
  const std::string auto_pad = attr_string(call->attrs, "auto_pad", "NOTSET", where);
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return std::nullopt;
  r.kernel = {r.w.shape()[2], r.w.shape()[3]};
  r.strides = attr_ints(call->attrs, "strides", {1, 1}, where);
  r.dilations = attr_ints(call->attrs, "dilations", {1, 1}, where);
  r.pads = auto_pad == "VALID" ? std::vector<int64_t>(4, 0)
                               : attr_ints(call->attrs, "pads", {0, 0, 0, 0}, where);
  if (r.strides.size() != 2 || r.dilations.size() != 2 || r.pads.size() != 4) return std::nullopt;
  const int64_t group = attr_int(call->attrs, "group", 1, where);
  r.depthwise = group == r.c && r.m == r.c && r.w.shape()[1] == 1 && r.c >= kMinChannels;
  if (r.depthwise) return r;
  // Groups of whole blocks of input and output channels (a RegNet's or ResNeXt's wide
  // groups): each output block reads its group's input blocks.
  const bool whole_block_groups = group > 1 && r.c % group == 0 && r.m % group == 0 &&
                                  (r.c / group) % kBlock == 0 && (r.m / group) % kBlock == 0;
  if ((group != 1 && !whole_block_groups) || r.w.shape()[1] * group != r.c) return std::nullopt;
  r.groups = group;
  r.pointwise = r.kernel == std::vector<int64_t>{1, 1} && r.strides == std::vector<int64_t>{1, 1} &&
                r.pads == std::vector<int64_t>(4, 0);
  // A dense conv whose output lanes are mostly padding (40 channels compute 48) runs slower
  // than in NCHW (kernels/ops/conv_blocked.h): blocked only within kMaxLaneWaste. Pointwise
  // convs are the cheap links of a depthwise chain and stay in it; a conv by Winograd,
  // 2-3x faster blocked, may waste up to 1/kMaxWinogradLaneWaste (27 channels of 32).
  r.nchw_input = r.c < kMinChannels;
  const int64_t lanes = ops::channel_blocks(r.m) * kBlock;
  const int64_t waste = winograd && winograd_fits(r) ? kMaxWinogradLaneWaste : kMaxLaneWaste;
  if (!r.pointwise && (lanes - r.m) * waste > r.m) return std::nullopt;
  return r;
}

// [C, 1, kH, kW] -> [CB, kH, kW, 16].
vm::Tensor pack_depthwise(const BlockableConv& conv) {
  const int64_t taps = conv.kernel[0] * conv.kernel[1];
  vm::Tensor out = zeros({ops::channel_blocks(conv.c), conv.kernel[0], conv.kernel[1], kBlock});
  const float* w = conv.w.data_as<float>();
  float* o = out.data_as<float>();
  for (int64_t c = 0; c < conv.c; ++c) {
    for (int64_t k = 0; k < taps; ++k) {
      o[((c / kBlock) * taps + k) * kBlock + c % kBlock] = w[c * taps + k];
    }
  }
  return out;
}

// [M, C/groups, kH, kW] -> [MB, C/groups, kH, kW, 16 (out)].
vm::Tensor pack_dense(const BlockableConv& conv) {
  const int64_t per_group = conv.c / conv.groups;
  const int64_t per_out = per_group * conv.kernel[0] * conv.kernel[1];
  vm::Tensor out =
      zeros({ops::channel_blocks(conv.m), per_group, conv.kernel[0], conv.kernel[1], kBlock});
  const float* w = conv.w.data_as<float>();
  float* o = out.data_as<float>();
  for (int64_t m = 0; m < conv.m; ++m) {
    for (int64_t i = 0; i < per_out; ++i) {
      o[((m / kBlock) * per_out + i) * kBlock + m % kBlock] = w[m * per_out + i];
    }
  }
  return out;
}

// Whether a dense conv runs as Winograd's F(4x4, 3x3): 3x3, stride and dilation 1, its input
// blocked with whole blocks (the product's sum runs over whole blocks; groups are whole
// blocks already) and groups of kMinWinogradGroupChannels or more: a RegNet's groups of 16
// have products too short for the transforms around them (its 384-channel convs at 5x5, in
// 8x8 of tiles: 323 us against 128 directly), up to kMaxWinogradChannelPairs.
bool winograd_fits(const BlockableConv& conv) {
  const std::vector<int64_t> ones{1, 1};
  return !conv.depthwise && !conv.nchw_input &&
         (conv.groups == 1 || conv.c / conv.groups >= kMinWinogradGroupChannels) &&
         conv.c / conv.groups * conv.m <= kMaxWinogradChannelPairs &&
         conv.kernel == std::vector<int64_t>{3, 3} && conv.strides == ones &&
         conv.dilations == ones && conv.c % kBlock == 0;
}

// [M, C/groups, 3, 3] -> U [6, 6, MB, C/groups, 16] (kernels/ops/conv_winograd.h).
vm::Tensor pack_winograd(const BlockableConv& conv) {
  const int64_t alpha = kWinogradTile + 2, per_group = conv.c / conv.groups;
  vm::Tensor out = vm::Tensor::empty({alpha, alpha, ops::channel_blocks(conv.m), per_group, kBlock},
                                     vm::DType::kFloat32);
  const std::vector<float> u =
      ops::winograd_weights(conv.w.data_as<float>(), conv.m, per_group, kWinogradTile);
  std::copy(u.begin(), u.end(), out.data_as<float>());
  return out;
}

// What the rewrite needs to know of the whole module first: whether it has a depthwise or a
// dense KxK conv to block (the reason to change layouts at all: a pointwise conv alone is as
// fast in NCHW), and which ops read each variable.
class ScanModule : public ExprVisitor {
 public:
  ScanModule(const std::unordered_map<uint64_t, ValueFacts>& facts, bool winograd)
      : facts_(facts), winograd_(winograd) {}
  bool found = false;
  bool has_depthwise = false;
  std::unordered_map<uint64_t, std::vector<Expr>> readers;  // variable id -> the calls

  // Whether `conv` is blocked wherever it is, converting its input if need be: a depthwise
  // conv, a pointwise one in a module with depthwise convs (the links of their chains), one
  // that runs by Winograd (2-3x faster than directly, against a conversion in and out of
  // 5-15% of a direct conv), and a strided dense KxK conv over 32 or more channels (NCHW
  // vectorizes along a strided output row: alone between NCHW ops, converted in and out,
  // such a conv ran 0.55-0.99 of its NCHW time at 32-144 channels, 0.62 for 144 -> 144 3x3
  // over a 39-wide map; at 16 channels 0.77-1.12, so those stay). Other convs only continue
  // a chain into a reader that gains (BlockChannels::block_conv).
  bool starts_chains(const BlockableConv& conv) const {
    const bool strided = conv.strides != std::vector<int64_t>{1, 1};
    return conv.depthwise || (conv.pointwise && !conv.nchw_input && has_depthwise) ||
           (winograd_ && winograd_fits(conv)) ||
           (strided && conv.c >= 2 * kBlock && conv.kernel != std::vector<int64_t>{1, 1});
  }

  // Whether `call` can follow a blocked operand into the layout and gain there (a guess
  // made before the rewrite: an elementwise op may still find an operand it cannot take).
  // Convs that start chains, pools and means do; another conv or an elementwise op only when
  // such a follower reads its result in turn: a chain of them that ends in a conversion out
  // gains nothing for it.
  bool can_follow(const Expr& call) const {
    static const std::unordered_set<std::string> pools{"MaxPool", "AveragePool",
                                                       "GlobalAveragePool", "ReduceMean"};
    if (pools.count(call->name) != 0) return true;
    if (call->name == "Conv") {
      std::optional<BlockableConv> conv = blockable_conv(call, facts_, winograd_);
      if (!conv) return false;
      if (starts_chains(*conv)) return true;
    } else if (finite_elementwise().count(call->name) == 0 && call->name != "Div") {
      return false;
    }
    auto var = bound_.find(call.get());
    return var != bound_.end() && read_by_follower(var->second);
  }

  // Whether an op that can follow it into the layout reads variable `id`.
  bool read_by_follower(uint64_t id) const {
    auto memo = follows_.find(id);
    if (memo != follows_.end()) return memo->second;
    follows_[id] = false;  // a cycle (none in a let chain) reads as no
    auto it = readers.find(id);
    const bool r =
        it != readers.end() && std::any_of(it->second.begin(), it->second.end(),
                                           [this](const Expr& call) { return can_follow(call); });
    follows_[id] = r;
    return r;
  }

 protected:
  void visit_call(const Expr& e) override {
    if (!found || !has_depthwise) {
      std::optional<BlockableConv> conv = blockable_conv(e, facts_, winograd_);
      found = found || (conv && !conv->pointwise);
      has_depthwise = has_depthwise || (conv && conv->depthwise);
    }
    for (const Expr& o : e->operands) {
      if (o.kind() == ExprKind::kVar) readers[o->var_id].push_back(e);
    }
    visit_operands(e);
  }

  void visit_binding(const Expr& var, const Expr& value) override {
    bound_[value.get()] = var->var_id;
    visit(value);
  }

 private:
  const std::unordered_map<uint64_t, ValueFacts>& facts_;
  bool winograd_;
  std::unordered_map<const ExprNode*, uint64_t> bound_;  // a let's value -> its variable
  mutable std::unordered_map<uint64_t, bool> follows_;   // read_by_follower, memoized
};

class BlockChannels : public ExprMutator {
 public:
  BlockChannels(const TypedModule& typed, const ScanModule& scan, BlockChannelsStats& stats,
                bool winograd)
      : facts_(typed.facts), scan_(scan), stats_(stats), winograd_(winograd) {}

 protected:
  // Each chain (a function body, an If branch, a Loop body) gets a serial, so that a
  // conversion made in one is reused only where it is in scope: in that chain and the ones
  // nested in it.
  Expr visit_let(const Expr& e) override {
    active_chains_.push_back(next_chain_++);
    Expr r = ExprMutator::visit_let(e);
    active_chains_.pop_back();
    return r;
  }

  void rewrite_binding_into(const Expr& var, const Expr& original,
                            std::vector<Binding>& out) override {
    Expr value = mutate(original);
    std::optional<int64_t> channels = nchw_channels(value.type());
    Expr blocked;
    if (value.kind() == ExprKind::kCall && channels) blocked = rewrite(var, value, out);
    if (!blocked.defined()) {
      out.push_back({var, value});
      return;
    }
    blocked_[var->var_id] = blocked;
    out.push_back({var, make_call("dynvm.FromBlocked", {blocked},
                                  {{"channels", AttrValue{*channels}}}, value.type())});
  }

 private:
  // The blocked variable computing `value` (appended to `out`), or undefined.
  Expr rewrite(const Expr& var, const Expr& value, std::vector<Binding>& out) {
    if (std::optional<BlockableConv> conv = blockable_conv(value, facts_, winograd_)) {
      return block_conv(var, value, *conv, out);
    }
    if (finite_elementwise().count(value->name) != 0 || divides_by_nonzero_constant(value)) {
      return block_elementwise(var, value, out);
    }
    if (value->name == "GlobalAveragePool" || value->name == "ReduceMean") {
      return block_spatial_mean(var, value, out);
    }
    if (value->name == "MaxPool" || value->name == "AveragePool") {
      return block_pool(var, value, out);
    }
    return {};
  }

  // A Div by a constant without zeros (a decomposed HardSwish's `/ 6`) keeps values finite.
  bool divides_by_nonzero_constant(const Expr& value) const {
    if (value->name != "Div" || value->operands.size() != 2) return false;
    const vm::Tensor d = constant_operand(facts_, value->operands[1]);
    if (!d.defined() || d.dtype() != vm::DType::kFloat32) return false;
    const float* v = d.data_as<float>();
    return std::all_of(v, v + d.numel(), [](float x) { return x != 0.0f; });
  }

  Expr bind(const Expr& var, Expr call, std::vector<Binding>& out) {
    Expr b = make_var(var->name + "_blocked", call.type());
    out.push_back({b, std::move(call)});
    return b;
  }

  // x's blocked value: its own, or a dynvm.ToBlocked of it (x an NCHW tensor of `channels`).
  Expr blocked_operand(const Expr& x, int64_t channels, std::vector<Binding>& out) {
    if (x.kind() == ExprKind::kVar) {
      auto it = blocked_.find(x->var_id);
      if (it != blocked_.end()) return it->second;
    }
    if (nchw_channels(x.type()) != channels) return {};
    if (x.kind() == ExprKind::kVar) {
      auto it = converted_.find(x->var_id);
      if (it != converted_.end() && std::find(active_chains_.begin(), active_chains_.end(),
                                              it->second.second) != active_chains_.end()) {
        return it->second.first;
      }
    }
    ++stats_.to_blocked;
    Expr b = bind(x, make_call("dynvm.ToBlocked", {x}, {}, blocked_type(x.type())), out);
    if (x.kind() == ExprKind::kVar) converted_[x->var_id] = {b, active_chains_.back()};
    return b;
  }

  bool is_blocked(const Expr& x) const {
    return x.kind() == ExprKind::kVar && blocked_.count(x->var_id) != 0;
  }

  Expr block_conv(const Expr& var, const Expr& value, const BlockableConv& conv,
                  std::vector<Binding>& out) {
    // A dense conv gains 5-15% blocked, about what a conversion of its input or output
    // costs: it continues a blocked chain (or starts one from a stem's few NCHW channels)
    // into an op that can follow it. (A U-Net's convs between group norms, each converted
    // in and out, ran 7-15% slower; a super-resolution net's last blocked conv before an
    // NCHW one, 3% slower with its conversion.) The convs of depthwise-separable chains
    // start and end chains themselves (ScanModule::starts_chains).
    if (!scan_.starts_chains(conv)) {
      const bool starts = conv.nchw_input || is_blocked(value->operands[0]);
      if (!starts || !scan_.read_by_follower(var->var_id)) return {};
    }
    Expr x =
        conv.nchw_input ? value->operands[0] : blocked_operand(value->operands[0], conv.c, out);
    if (!x.defined()) return {};
    ++stats_.convs;
    const bool winograd = winograd_ && winograd_fits(conv);
    vm::Tensor w;
    if (winograd) {
      ++stats_.winograd;
      w = pack_winograd(conv);
    } else {
      w = conv.depthwise ? pack_depthwise(conv) : pack_dense(conv);
    }
    std::vector<Expr> args{x, make_constant(w)};
    if (conv.b.defined()) {
      args.push_back(
          make_constant(pack_channels(conv.b, conv.m, {ops::channel_blocks(conv.m), kBlock})));
    }
    Attrs attrs{{"kernel_shape", AttrValue{conv.kernel}},
                {"strides", AttrValue{conv.strides}},
                {"pads", AttrValue{conv.pads}},
                {"dilations", AttrValue{conv.dilations}},
                {"depthwise", AttrValue{int64_t{conv.depthwise ? 1 : 0}}},
                {"channels", AttrValue{conv.m}}};
    if (conv.groups > 1) attrs["group"] = AttrValue{conv.groups};
    if (winograd) attrs["winograd"] = AttrValue{kWinogradTile};
    return bind(var, make_call("dynvm.ConvBlocked", args, attrs, blocked_type(value.type())), out);
  }

  // An elementwise op over at least one blocked value; its other operands blocked too, per-
  // channel constants packed, scalars as they are. Otherwise undefined.
  Expr block_elementwise(const Expr& var, const Expr& value, std::vector<Binding>& out) {
    const int64_t channels = value.type()->dims[1].value();
    bool any_blocked = false;
    for (const Expr& o : value->operands) any_blocked = any_blocked || is_blocked(o);
    if (!any_blocked) return {};
    // Decide every operand before emitting anything.
    enum class Kind : uint8_t { kKeep, kBlocked, kChannelConstant, kConvert };
    std::vector<Kind> kinds;
    for (const Expr& o : value->operands) {
      if (is_absent(o) || is_blocked(o)) {
        kinds.push_back(is_absent(o) ? Kind::kKeep : Kind::kBlocked);
        continue;
      }
      const Type& t = o.type();
      if (!t.defined() || !t.is_tensor() || t->dtype != vm::DType::kFloat32) return {};
      const vm::Tensor k = constant_operand(facts_, o);
      if (k.defined() && k.numel() == 1) {
        kinds.push_back(Kind::kKeep);
      } else if (k.defined() && is_per_channel(k.shape(), channels)) {
        kinds.push_back(Kind::kChannelConstant);
      } else if (nchw_channels(t) == channels) {
        kinds.push_back(Kind::kConvert);
      } else {
        return {};
      }
    }
    std::vector<Expr> operands;
    for (size_t i = 0; i < kinds.size(); ++i) {
      const Expr& o = value->operands[i];
      switch (kinds[i]) {
        case Kind::kKeep:
          operands.push_back(o);
          break;
        case Kind::kBlocked:
        case Kind::kConvert:
          operands.push_back(blocked_operand(o, channels, out));
          break;
        case Kind::kChannelConstant:
          operands.push_back(
              make_constant(pack_channels(constant_operand(facts_, o), channels,
                                          {1, ops::channel_blocks(channels), 1, 1, kBlock})));
          break;
      }
    }
    ++stats_.others;
    return bind(var, make_call(value->name, operands, value->attrs, blocked_type(value.type())),
                out);
  }

  // [C], [C, 1, 1] or [1, C, 1, 1]: one value per channel along NCHW's channel axis.
  static bool is_per_channel(const vm::Shape& s, int64_t channels) {
    if (s.size() < 3 || s.size() > 4 || s[s.size() - 3] != channels) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      if (i != s.size() - 3 && s[i] != 1) return false;
    }
    return true;
  }

  // The mean over H and W keeping them (a squeeze-and-excitation's pool), blocked.
  Expr block_spatial_mean(const Expr& var, const Expr& value, std::vector<Binding>& out) {
    const Expr& x = value->operands[0];
    if (!is_blocked(x)) return {};
    if (value->name == "ReduceMean") {
      if (attr_int(value->attrs, "keepdims", 1, "ReduceMean") != 1) return {};
      std::vector<int64_t> axes;
      if (value->operands.size() > 1 && !is_absent(value->operands[1])) {
        const vm::Tensor a = constant_operand(facts_, value->operands[1]);
        if (!a.defined() || a.dtype() != vm::DType::kInt64) return {};
        axes.assign(a.data_as<int64_t>(), a.data_as<int64_t>() + a.numel());
      } else {
        axes = attr_ints(value->attrs, "axes", {}, "ReduceMean");
      }
      for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
      std::sort(axes.begin(), axes.end());
      if (axes != std::vector<int64_t>{2, 3}) return {};
    }
    ++stats_.others;
    Expr axes =
        make_constant(vm::Tensor::from_vector(std::vector<int64_t>{2, 3}, {2}, vm::DType::kInt64));
    return bind(var,
                make_call("ReduceMean", {blocked_.at(x->var_id), axes},
                          {{"keepdims", AttrValue{int64_t{1}}}}, blocked_type(value.type())),
                out);
  }

  // A 2-D MaxPool (without indices) or AveragePool of a blocked value, without ceil_mode.
  Expr block_pool(const Expr& var, const Expr& value, std::vector<Binding>& out) {
    const Expr& x = value->operands[0];
    if (!is_blocked(x)) return {};
    const std::string& where = value->name;
    const std::string auto_pad = attr_string(value->attrs, "auto_pad", "NOTSET", where);
    if ((auto_pad != "NOTSET" && auto_pad != "VALID") ||
        attr_int(value->attrs, "ceil_mode", 0, where) != 0 ||
        attr_ints(value->attrs, "kernel_shape", {}, where).size() != 2) {
      return {};
    }
    Attrs attrs = value->attrs;
    attrs.erase("auto_pad");
    attrs.erase("storage_order");
    if (auto_pad == "VALID") attrs["pads"] = AttrValue{std::vector<int64_t>(4, 0)};
    ++stats_.others;
    const std::string op =
        value->name == "MaxPool" ? "dynvm.MaxPoolBlocked" : "dynvm.AveragePoolBlocked";
    return bind(var, make_call(op, {blocked_.at(x->var_id)}, attrs, blocked_type(value.type())),
                out);
  }

  const std::unordered_map<uint64_t, ValueFacts>& facts_;
  const ScanModule& scan_;
  BlockChannelsStats& stats_;
  bool winograd_;
  std::unordered_map<uint64_t, Expr> blocked_;  // NCHW let variable -> its blocked variable
  // An NCHW variable -> its dynvm.ToBlocked and the chain that binds it.
  std::unordered_map<uint64_t, std::pair<Expr, uint64_t>> converted_;
  std::vector<uint64_t> active_chains_;
  uint64_t next_chain_ = 0;
};

}  // namespace

PassResult block_channels(const TypedModule& in, BlockChannelsStats* stats, bool winograd) {
  BlockChannelsStats local;
  BlockChannelsStats& s = stats != nullptr ? *stats : local;
  ScanModule scan(in.facts, winograd);
  scan.visit_module(in.module);
  if (!scan.found) return PassResult(in, false, "no conv to block");
  TypedModule out = in;
  BlockChannels blocker(in, scan, s, winograd);
  out.module = blocker.mutate_module(in.module);
  return PassResult(
      std::move(out), s.convs + s.others > 0,
      str_cat(s.convs, " convs (", s.winograd, " by Winograd) and ", s.others,
              " other ops in blocked channels, ", s.to_blocked, " conversions into it"));
}

}  // namespace dynvm::compiler
