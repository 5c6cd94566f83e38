#include "vm/program.h"

#include <algorithm>
#include <map>

#include "vm/cpu_features.h"
#include "vm/error.h"
#include "vm/verifier.h"

namespace dynvm::vm {

Program::~Program() = default;

std::shared_ptr<const Program> Program::load(Executable exe) {
  verify(exe);
  std::shared_ptr<Program> p(new Program(std::move(exe)));
  const Executable& e = p->exe_;
  for (size_t i = 0; i < e.libraries.size(); ++i) {
    const KernelLibrary& lib = e.libraries[i];
    std::string name = str_cat("dynvm-kernels-", i);
    if (lib.format != LibraryFormat::kSharedObject) {
      // CUDA kernel libraries arrive with CUDA code generation; until then say so.
      user_error("kernel library ", i, " is ",
                 lib.format == LibraryFormat::kPtx ? "CUDA PTX" : "a CUDA binary", " (target ",
                 lib.target, "), which this runtime cannot run yet");
    }
    check_target_isa(lib.target, std::to_string(i));
    p->libraries_.push_back(LoadedLibrary::load(lib.bytes, name));
  }
  p->kernels_.resize(e.kernels.size());
  for (size_t k = 0; k < e.kernels.size(); ++k) {
    const Kernel& kernel = e.kernels[k];
    ResolvedKernel& r = p->kernels_[k];
    for (const KernelVariant& v : kernel.variants) {
      r.variants.push_back(p->libraries_[kernel.library]->kernel(v.symbol));
      for (const DimPredicate& c : v.conditions) {
        auto add_key = [&r](std::pair<uint32_t, uint32_t> key) {
          if (std::find(r.key_dims.begin(), r.key_dims.end(), key) == r.key_dims.end()) {
            r.key_dims.push_back(key);
          }
        };
        add_key({c.arg, c.axis});
        if (c.kind == DimPredicateKind::kDimEq) {
          add_key({static_cast<uint32_t>(c.a), static_cast<uint32_t>(c.b)});
        }
      }
    }
  }
  return p;
}

int64_t Program::input_index(std::string_view name) const {
  for (size_t i = 0; i < exe_.inputs.size(); ++i) {
    if (exe_.inputs[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

void Program::check_inputs(std::span<const Value> inputs) const {
  const auto& specs = exe_.inputs;
  if (inputs.size() != specs.size()) {
    std::string names;
    for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.name;
    user_error("the model takes ", specs.size(), " input", specs.size() == 1 ? "" : "s", " (",
               names, ") but ", inputs.size(), " ", inputs.size() == 1 ? "was" : "were", " given");
  }
  struct Binding {
    int64_t value;
    std::string where;
  };
  std::map<std::string, Binding> symbols;
  // One tensor against the spec's dims; `what` names it. Symbols are bound across inputs,
  // except in a sequence, whose elements may differ in shape.
  auto check_tensor = [&](const TensorSpec& spec, const Value& v, const std::string& what,
                          bool bind) {
    const Tensor* t = v.if_tensor();
    if (t == nullptr) user_error(what, " must be a tensor, got ", v.summary());
    if (t->dtype() != spec.dtype) {
      user_error(what, " must be ", dtype_name(spec.dtype), ", got ", dtype_name(t->dtype()));
    }
    if (t->device().type != DeviceType::kCPU) user_error(what, " must be a host tensor");
    if (spec.any_rank) return;
    if (t->ndim() != static_cast<int64_t>(spec.dims.size())) {
      user_error(what, " must have rank ", spec.dims.size(), " (", tensor_spec_str(spec),
                 "), got rank ", t->ndim(), " ", shape_str(t->shape()));
    }
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      const DimSpec& ds = spec.dims[d];
      int64_t v = t->dim(static_cast<int64_t>(d));
      if (!ds.is_symbolic()) {
        if (v != ds.value) {
          user_error(what, " dim ", d, " must be ", ds.value, ", got ", v, " (shape ",
                     shape_str(t->shape()), ")");
        }
        continue;
      }
      if (v < ds.min || v > ds.max) {
        user_error(
            what, " dim ", d, " (", ds.symbol, ") = ", v, " is outside the declared range ", ds.min,
            "..",
            ds.max == std::numeric_limits<int64_t>::max() ? std::string() : std::to_string(ds.max));
      }
      if (!bind) continue;
      std::string where = str_cat(what, " dim ", d);
      auto [it, inserted] = symbols.emplace(ds.symbol, Binding{v, where});
      if (!inserted && it->second.value != v) {
        user_error("dim '", ds.symbol, "' is ", it->second.value, " in ", it->second.where, " but ",
                   v, " in ", where);
      }
    }
  };
  auto tuple_of = [](const TensorSpec& spec, const Value& v, const std::string& what) {
    if (v.kind() != ValueKind::kTuple) {
      user_error(what, " must be ", value_form_name(spec.form), " (a tuple), got ", v.summary());
    }
    return &v.as_tuple();
  };
  auto check_sequence = [&](const TensorSpec& spec, const Value& v, const std::string& what) {
    const Tuple* elements = tuple_of(spec, v, what);
    for (size_t k = 0; k < elements->size(); ++k)
      check_tensor(spec, (*elements)[k], str_cat(what, " element ", k), false);
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& spec = specs[i];
    const std::string what = str_cat("input '", spec.name, "'");
    switch (spec.form) {
      case ValueForm::kTensor:
        check_tensor(spec, inputs[i], what, true);
        break;
      case ValueForm::kSequence:
        check_sequence(spec, inputs[i], what);
        break;
      case ValueForm::kOptional:
      case ValueForm::kOptionalSequence: {
        const Tuple* held = tuple_of(spec, inputs[i], what);
        if (held->size() > 1) user_error(what, " is an optional: a tuple of 0 or 1 value");
        if (held->empty()) break;
        if (spec.form == ValueForm::kOptional) {
          check_tensor(spec, (*held)[0], what, true);
        } else {
          check_sequence(spec, (*held)[0], what);
        }
        break;
      }
    }
  }
}

}  // namespace dynvm::vm
