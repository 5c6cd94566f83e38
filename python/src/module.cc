// The `dynvm._core` extension module: compile, load, inspect and run executables from
// Python. The `dynvm` package (python/dynvm/__init__.py) re-exports it and adds the
// keyword-argument front of compile() and the ONNX Runtime-shaped InferenceSession.
// Every C++ error becomes a Python exception carrying the one-line message the
// command-line tools print: dynvm.UserError (also a ValueError) for a bad model, input,
// option or file; dynvm.Error for the rest (an internal error says it is a bug).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "python/src/executable.h"
#include "python/src/results.h"
#include "serializer/vmexe.h"
#include "tools/vmc/compile_model.h"
#include "tools/vmc/vmc_options.h"
#include "vm/error.h"

namespace dynvm::python {
namespace {

PyObject* g_error = nullptr;
PyObject* g_user_error = nullptr;

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

void register_errors(py::module_& m) {
  g_error = PyErr_NewExceptionWithDoc("dynvm.Error",
                                      "Anything dynvm reports: the base of dynvm.UserError.",
                                      PyExc_Exception, nullptr);
  py::tuple bases = py::make_tuple(py::handle(g_error), py::handle(PyExc_ValueError));
  g_user_error = PyErr_NewExceptionWithDoc(
      "dynvm.UserError",
      "A bad model, input, option or file: what the command-line tools report as their "
      "one-line error.",
      bases.ptr(), nullptr);
  m.add_object("Error", py::handle(g_error));
  m.add_object("UserError", py::handle(g_user_error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const UserError& e) {
      PyErr_SetString(g_user_error, one_line(e.what()).c_str());
    } catch (const Error& e) {
      PyErr_SetString(g_error, one_line(e.what()).c_str());
    } catch (const std::filesystem::filesystem_error& e) {
      PyErr_SetString(g_user_error, one_line(e.what()).c_str());
    }
  });
}

// ONNX Runtime's spelling of a signature entry's type: "tensor(float)", "seq(tensor(int64))".
std::string onnx_type(const vm::TensorSpec& spec) {
  std::string elem(vm::dtype_long_name(spec.dtype));
  if (spec.dtype == vm::DType::kFloat32) elem = "float";
  if (spec.dtype == vm::DType::kFloat64) elem = "double";
  const std::string tensor = "tensor(" + elem + ")";
  switch (spec.form) {
    case vm::ValueForm::kTensor:
      return tensor;
    case vm::ValueForm::kSequence:
      return "seq(" + tensor + ")";
    case vm::ValueForm::kOptional:
      return "optional(" + tensor + ")";
    case vm::ValueForm::kOptionalSequence:
      return "optional(seq(" + tensor + "))";
  }
  return tensor;
}

py::list shape_of(const vm::TensorSpec& spec) {
  py::list shape;
  for (const vm::DimSpec& d : spec.dims) {
    if (d.is_symbolic()) {
      shape.append(py::str(d.symbol));
    } else {
      shape.append(d.value);
    }
  }
  return shape;
}

py::dict ranges_of(const vm::TensorSpec& spec) {
  py::dict ranges;
  for (const vm::DimSpec& d : spec.dims) {
    if (!d.is_symbolic()) continue;
    py::object hi = d.max == std::numeric_limits<int64_t>::max() ? py::object(py::none())
                                                                 : py::object(py::int_(d.max));
    ranges[py::str(d.symbol)] = py::make_tuple(d.min, hi);
  }
  return ranges;
}

// A str or os.PathLike as a path.
std::string fspath(py::handle path) {
  return py::str(py::module_::import("os").attr("fspath")(path));
}

py::object pointer_of(const vm::Value& v) {
  if (const vm::Tensor* t = v.if_tensor()) {
    return py::int_(reinterpret_cast<uintptr_t>(t->data()));
  }
  if (v.kind() == vm::ValueKind::kTuple) {
    py::list l;
    for (const vm::Value& e : v.as_tuple()) l.append(pointer_of(e));
    return l;
  }
  return py::none();
}

py::dict data_ptrs(const PreparedFeeds& p) {
  py::dict out;
  const std::vector<vm::TensorSpec>& specs = p.owner->exe().inputs;
  for (size_t i = 0; i < specs.size(); ++i) {
    py::object ptr = pointer_of(p.bound.values[i]);
    const bool optional = specs[i].form == vm::ValueForm::kOptional ||
                          specs[i].form == vm::ValueForm::kOptionalSequence;
    if (optional) {  // a tuple of 0 or 1 field
      py::list l = ptr.cast<py::list>();
      ptr = l.empty() ? py::object(py::none()) : py::object(l[0]);
    }
    out[py::str(specs[i].name)] = ptr;
  }
  return out;
}

// `model` is a path (str or os.PathLike) or the ONNX model's bytes; `args` are vmc's
// options after the model.
std::unique_ptr<Executable> compile(py::object model, const std::vector<std::string>& args,
                                    bool progress) {
  std::string path;
  std::string bytes;
  if (py::isinstance<py::bytes>(model)) {
    bytes = py::bytes(model);
    if (bytes.empty()) user_error("the model's bytes are empty");
    path = "model.onnx";
  } else {
    path = fspath(model);
  }
  std::vector<const char*> argv{"vmc", path.c_str()};
  for (const std::string& a : args) argv.push_back(a.c_str());
  vmc::Options o = vmc::parse_options(static_cast<int>(argv.size()), argv.data());
  o.quiet = !progress;
  py::gil_scoped_release no_gil;
  return std::make_unique<Executable>(vmc::compile_model(std::move(o), bytes));
}

std::unique_ptr<Executable> load(py::object path) {
  const std::string p = fspath(path);
  py::gil_scoped_release no_gil;
  return std::make_unique<Executable>(serializer::load_vmexe(p));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "dynvm's compiler and runtime (the dynvm package wraps this module).";
  m.attr("__version__") = DYNVM_VERSION;
  m.attr("format_version") = py::make_tuple(serializer::kFormatMajor, serializer::kFormatMinor);
  register_errors(m);

  py::class_<vm::TensorSpec>(m, "TensorInfo",
                             "One input or output of an executable: its name, element type "
                             "and shape, whose symbolic dims are names with ranges.")
      .def_property_readonly("name", [](const vm::TensorSpec& s) { return s.name; })
      .def_property_readonly(
          "dtype",
          [](const vm::TensorSpec& s) { return std::string(vm::dtype_long_name(s.dtype)); },
          "The element type as NumPy names it ('float32', 'int64', 'bool', 'bfloat16').")
      .def_property_readonly("shape", &shape_of,
                             "Constant dims as ints, symbolic ones as their names.")
      .def_property_readonly(
          "dim_ranges", &ranges_of,
          "{symbol: (min, max)} for the symbolic dims; max is None when unbounded.")
      .def_property_readonly(
          "form", [](const vm::TensorSpec& s) { return std::string(vm::value_form_name(s.form)); },
          "'tensor', 'sequence' (a list of arrays), 'optional' (None or an array) or "
          "'optional sequence'.")
      .def_property_readonly("type", &onnx_type,
                             "The type as ONNX Runtime's NodeArg.type spells it: "
                             "'tensor(float)'.")
      .def("__repr__", [](const vm::TensorSpec& s) {
        return "<dynvm.TensorInfo " + vm::tensor_spec_str(s) + ">";
      });

  py::class_<vm::LatencyStats>(m, "LatencyStats",
                               "Whole-run latencies of Executable.benchmark, in milliseconds.")
      .def_readonly("runs", &vm::LatencyStats::runs)
      .def_readonly("median_ms", &vm::LatencyStats::median_ms)
      .def_readonly("p90_ms", &vm::LatencyStats::p90_ms)
      .def_readonly("min_ms", &vm::LatencyStats::min_ms)
      .def_readonly("max_ms", &vm::LatencyStats::max_ms)
      .def("__repr__", [](const vm::LatencyStats& l) {
        return str_cat("<dynvm.LatencyStats runs=", l.runs, " median_ms=", l.median_ms,
                       " p90_ms=", l.p90_ms, " min_ms=", l.min_ms, " max_ms=", l.max_ms, ">");
      });

  py::class_<DLPackTensor>(m, "Tensor",
                           "A result NumPy has no dtype for (bfloat16): hand it to a DLPack "
                           "consumer, e.g. torch.from_dlpack(t).")
      .def_property_readonly(
          "shape", [](const DLPackTensor& t) { return py::tuple(py::cast(t.tensor.shape())); })
      .def_property_readonly(
          "dtype",
          [](const DLPackTensor& t) { return std::string(vm::dtype_long_name(t.tensor.dtype())); })
      .def(
          "__dlpack__",
          [](const DLPackTensor& t, py::object stream) { return dlpack_capsule(t.tensor); },
          py::arg("stream") = py::none())
      .def("__dlpack_device__",
           [](const DLPackTensor& t) {
             return py::make_tuple(static_cast<int>(t.tensor.device().type), t.tensor.device().id);
           })
      .def("__repr__", [](const DLPackTensor& t) {
        return str_cat("<dynvm.Tensor ", vm::dtype_long_name(t.tensor.dtype()), " ",
                       vm::shape_str(t.tensor.shape()), ">");
      });

  py::class_<PreparedFeeds>(m, "BoundInputs",
                            "Inputs converted once by Executable.bind(), for any number of "
                            "runs. Holds on to the arrays it borrows.")
      .def_property_readonly(
          "data_ptrs", &data_ptrs,
          "{input name: address} of the memory each input's kernels read (a list for a "
          "sequence, None for an empty optional): equal to the array's own address when it "
          "was borrowed, not copied.")
      .def_property_readonly(
          "copies", [](const PreparedFeeds& p) { return p.bound.copies; },
          "How many inputs (or sequence elements) had to be copied: 0 when every one was "
          "borrowed.");

  py::class_<Executable>(m, "Executable",
                         "A compiled model: dynvm.compile() or dynvm.load() makes one. It runs "
                         "inputs of any size its symbolic dims allow, from any number of "
                         "Python threads at once.")
      .def("bind", &Executable::bind, py::arg("feeds"), py::keep_alive<0, 1>(),
           "bind(feeds) -> BoundInputs\n\n"
           "Converts inputs once, as run() would, for runs that reuse them; also shows "
           "which inputs are read in place (BoundInputs.data_ptrs, .copies).")
      .def("run", &Executable::run, py::arg("feeds"), py::arg("threads") = py::none(),
           "run(feeds, threads=None) -> dict[str, numpy.ndarray]\n\n"
           "Runs the model. `feeds` maps input names to arrays (NumPy arrays, objects with "
           "__dlpack__ such as PyTorch tensors, numbers or lists), or lists them in the "
           "model's input order. Contiguous, aligned arrays are read in place, not copied. "
           "Returns the outputs by name, in the model's order, as NumPy arrays over dynvm's "
           "own buffers. `threads`: how many threads the run may use (default: all).")
      .def("benchmark", &Executable::benchmark, py::arg("feeds"), py::arg("repeat") = 20,
           py::arg("warmup") = 1, py::arg("threads") = py::none(),
           "benchmark(feeds, repeat=20, warmup=1, threads=None) -> LatencyStats\n\n"
           "Times `repeat` runs after `warmup` untimed ones, as vmrun --repeat does: the "
           "inputs are bound once, and each run's time is the whole run. `feeds` as run() "
           "takes them.")
      .def(
          "save", [](const Executable& e, py::object path) { e.save(fspath(path)); },
          py::arg("path"),
          "Writes the executable as a .vmexe file, which dynvm.load() and vmrun read.")
      .def_property_readonly(
          "inputs", [](const Executable& e) { return e.exe().inputs; }, "list[TensorInfo]")
      .def_property_readonly(
          "outputs", [](const Executable& e) { return e.exe().outputs; }, "list[TensorInfo]")
      .def_property_readonly("output_names", &Executable::output_names)
      .def_property_readonly(
          "target", [](const Executable& e) { return e.exe().target; },
          "What the kernels were compiled for.")
      .def_property_readonly("producer", [](const Executable& e) { return e.exe().producer; })
      .def_property_readonly("num_kernels",
                             [](const Executable& e) { return e.exe().kernels.size(); })
      .def("__repr__", [](const Executable& e) {
        std::string s = "<dynvm.Executable inputs=[";
        for (size_t i = 0; i < e.exe().inputs.size(); ++i) {
          s += (i ? "; " : "") + vm::tensor_spec_str(e.exe().inputs[i]);
        }
        s += "] outputs=[";
        for (size_t i = 0; i < e.exe().outputs.size(); ++i) {
          s += (i ? "; " : "") + vm::tensor_spec_str(e.exe().outputs[i]);
        }
        return s + "] " + vmc::executable_summary(e.exe()) + ">";
      });

  m.def("_compile", &compile, py::arg("model"), py::arg("args"), py::arg("progress"),
        "vmc's compilation: `args` are vmc's options (dynvm.compile builds them).");
  m.def("load", &load, py::arg("path"),
        "load(path) -> Executable\n\nReads and verifies a .vmexe file (vmc's output or "
        "Executable.save's).");
}

}  // namespace dynvm::python
