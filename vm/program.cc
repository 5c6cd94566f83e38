#include "vm/program.h"

#include <algorithm>

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
  // Which value is checked: an input, or one element of a sequence input. Named only for an
  // error (this runs on every call: a string per input cost a served 2-us model a third).
  struct Where {
    size_t input = 0;
    int64_t element = -1;
  };
  auto name = [&](const Where& w) {
    std::string s = str_cat("input '", specs[w.input].name, "'");
    return w.element < 0 ? s : str_cat(s, " element ", w.element);
  };
  struct Binding {
    const std::string* symbol;
    int64_t value;
    Where where;
    size_t dim;
  };
  std::vector<Binding> symbols;  // a handful: searched in order
  // One tensor against the spec's dims. Symbols are bound across inputs, except in a
  // sequence, whose elements may differ in shape.
  auto check_tensor = [&](const TensorSpec& spec, const Value& v, const Where& w, bool bind) {
    const Tensor* t = v.if_tensor();
    if (t == nullptr) user_error(name(w), " must be a tensor, got ", v.summary());
    if (t->dtype() != spec.dtype) {
      user_error(name(w), " must be ", dtype_name(spec.dtype), ", got ", dtype_name(t->dtype()));
    }
    if (t->device().type != DeviceType::kCPU) user_error(name(w), " must be a host tensor");
    if (spec.any_rank) return;
    if (t->ndim() != static_cast<int64_t>(spec.dims.size())) {
      user_error(name(w), " must have rank ", spec.dims.size(), " (", tensor_spec_str(spec),
                 "), got rank ", t->ndim(), " ", shape_str(t->shape()));
    }
    for (size_t d = 0; d < spec.dims.size(); ++d) {
      const DimSpec& ds = spec.dims[d];
      int64_t v = t->dim(static_cast<int64_t>(d));
      if (!ds.is_symbolic()) {
        if (v != ds.value) {
          user_error(name(w), " dim ", d, " must be ", ds.value, ", got ", v, " (shape ",
                     shape_str(t->shape()), ")");
        }
        continue;
      }
      if (v < ds.min || v > ds.max) {
        user_error(
            name(w), " dim ", d, " (", ds.symbol, ") = ", v, " is outside the declared range ",
            ds.min, "..",
            ds.max == std::numeric_limits<int64_t>::max() ? std::string() : std::to_string(ds.max));
      }
      if (!bind) continue;
      auto it = std::find_if(symbols.begin(), symbols.end(),
                             [&](const Binding& b) { return *b.symbol == ds.symbol; });
      if (it == symbols.end()) {
        symbols.push_back(Binding{&ds.symbol, v, w, d});
      } else if (it->value != v) {
        user_error("dim '", ds.symbol, "' is ", it->value, " in ", name(it->where), " dim ",
                   it->dim, " but ", v, " in ", name(w), " dim ", d);
      }
    }
  };
  auto tuple_of = [&](const TensorSpec& spec, const Value& v, const Where& w) {
    if (v.kind() != ValueKind::kTuple) {
      user_error(name(w), " must be ", value_form_name(spec.form), " (a tuple), got ",
                 v.summary());
    }
    return &v.as_tuple();
  };
  auto check_sequence = [&](const TensorSpec& spec, const Value& v, const Where& w) {
    const Tuple* elements = tuple_of(spec, v, w);
    for (size_t k = 0; k < elements->size(); ++k) {
      check_tensor(spec, (*elements)[k], Where{w.input, static_cast<int64_t>(k)}, false);
    }
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    const TensorSpec& spec = specs[i];
    const Where w{i};
    switch (spec.form) {
      case ValueForm::kTensor:
        check_tensor(spec, inputs[i], w, true);
        break;
      case ValueForm::kSequence:
        check_sequence(spec, inputs[i], w);
        break;
      case ValueForm::kOptional:
      case ValueForm::kOptionalSequence: {
        const Tuple* held = tuple_of(spec, inputs[i], w);
        if (held->size() > 1) user_error(name(w), " is an optional: a tuple of 0 or 1 value");
        if (held->empty()) break;
        if (spec.form == ValueForm::kOptional) {
          check_tensor(spec, (*held)[0], w, true);
        } else {
          check_sequence(spec, (*held)[0], w);
        }
        break;
      }
    }
  }
}

}  // namespace dynvm::vm
