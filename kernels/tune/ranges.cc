#include "kernels/tune/ranges.h"

#include <algorithm>
#include <limits>
#include <set>

namespace dynvm::tune {
namespace {

// The least weighted cost over `sizes` among `measured`, and which one has it.
std::pair<double, size_t> best_on(const Workload& w,
                                  const std::vector<const Measurement*>& measured,
                                  const std::vector<size_t>& sizes) {
  double best = std::numeric_limits<double>::infinity();
  size_t which = 0;
  for (size_t m = 0; m < measured.size(); ++m) {
    double cost = 0;
    for (size_t s : sizes) cost += w.sizes[s].weight * measured[m]->ns[s];
    if (cost < best) {
      best = cost;
      which = m;
    }
  }
  return {best, which};
}

}  // namespace

std::vector<RangeChoice> split_by_range(const Workload& w, const std::vector<Measurement>& measured,
                                        double min_gain) {
  std::vector<const Measurement*> full;
  for (const Measurement& m : measured) {
    if (m.ok() && m.ns.size() == w.sizes.size()) full.push_back(&m);
  }
  if (full.size() < 2 || w.sizes.size() < 2) return {};
  double total_weight = 0;
  for (const SizeSample& s : w.sizes) total_weight += s.weight;
  if (total_weight <= 0) return {};
  std::vector<size_t> all(w.sizes.size());
  for (size_t s = 0; s < all.size(); ++s) all[s] = s;
  const double single = best_on(w, full, all).first;

  double best_split = single * (1 - min_gain);
  std::vector<RangeChoice> out;
  for (size_t arg = 0; arg < w.arg_types.size(); ++arg) {
    for (size_t axis = 0; axis < w.arg_types[arg].shape.size(); ++axis) {
      if (w.arg_types[arg].shape[axis].kind() != arith::ExprKind::kVar) continue;
      std::set<int64_t> values;
      for (const SizeSample& s : w.sizes) values.insert(s.args.at(arg).at(axis));
      for (auto v = values.begin(); v != values.end() && std::next(v) != values.end(); ++v) {
        std::vector<size_t> lower, upper;
        for (size_t s = 0; s < w.sizes.size(); ++s) {
          (w.sizes[s].args[arg][axis] <= *v ? lower : upper).push_back(s);
        }
        auto [lo_cost, lo_m] = best_on(w, full, lower);
        auto [hi_cost, hi_m] = best_on(w, full, upper);
        if (lo_cost + hi_cost >= best_split || lo_m == hi_m) continue;
        best_split = lo_cost + hi_cost;
        const auto a = static_cast<uint32_t>(arg), x = static_cast<uint32_t>(axis);
        out = {{{a, x, 0, *v}, full[lo_m]->knobs, lower, lo_cost / total_weight},
               {{a, x, *v + 1, std::numeric_limits<int64_t>::max()},
                full[hi_m]->knobs,
                upper,
                hi_cost / total_weight}};
      }
    }
  }
  return out;
}

}  // namespace dynvm::tune
