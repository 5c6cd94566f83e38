// End to end: a model compiled ONCE with symbolic dims by the real pipeline
// (compiler/pipeline.h, what vmc runs), serialized to .vmexe bytes and read back, then run by
// the VM on every reference case — references from ONNX Runtime / numpy / PyTorch committed
// beside the models (examples/demo, tests/e2e/models), or values worked out in the test.
// Outputs match within rtol 1e-3, atol 1e-4, integers exactly; shapes exactly. Also the vmc
// binary's command line: one-line errors, exit codes, no file left behind by a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/ir/parser.h"
#include "compiler/passes/expand_recurrent.h"
#include "compiler/pipeline.h"
#include "frontends/onnx/importer.h"
#include "serializer/vmexe.h"
#include "tests/support/expect_user_error.h"
#include "tests/support/run_program.h"
#include "vm/interpreter.h"
#include "vm/npy.h"
#include "vm/program.h"

namespace dynvm::e2e {
namespace {

namespace fs = std::filesystem;

std::string source(const std::string& path) { return std::string(DYNVM_SOURCE_DIR) + "/" + path; }

// What vmc does with its flags: the importer's options (--dim ranges and aliases) and
// the compiler's.
struct BuildOptions : compiler::CompileOptions {
  frontends::onnx_import::ImportOptions import;
};

vm::Executable compile_onnx(const std::string& path, const BuildOptions& options) {
  return compiler::compile(frontends::onnx_import::import_onnx_file(path, options.import), options);
}

// Compiles, writes and reads back the .vmexe bytes, loads.
std::shared_ptr<const vm::Program> compile(const std::string& model, const BuildOptions& options) {
  vm::Executable exe = compile_onnx(source(model), options);
  return vm::Program::load(serializer::read_vmexe(serializer::write_vmexe(exe)));
}

double element(const vm::Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case vm::DType::kFloat32:
      return t.data_as<float>()[i];
    case vm::DType::kInt64:
      return static_cast<double>(t.data_as<int64_t>()[i]);
    case vm::DType::kInt32:
      return t.data_as<int32_t>()[i];
    case vm::DType::kBool:
      return t.data_as<uint8_t>()[i];
    default:
      ADD_FAILURE() << "untested dtype";
      return 0;
  }
}

void expect_matches(const vm::Tensor& got, const vm::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const bool exact = want.dtype() != vm::DType::kFloat32;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = element(got, i), w = element(want, i);
    if (exact) {
      ASSERT_EQ(g, w) << what << " element " << i;
    } else {
      ASSERT_LE(std::fabs(g - w), 1e-4 + 1e-3 * std::fabs(w)) << what << " element " << i;
    }
  }
}

// Runs every case folder (inputs/<name>.npy, outputs/<name>.npy) through one program.
void run_cases(const std::shared_ptr<const vm::Program>& program,
               const std::vector<std::string>& case_dirs) {
  vm::VirtualMachine machine(program);
  const vm::Executable& exe = program->exe();
  for (const std::string& dir : case_dirs) {
    std::vector<vm::Value> inputs;
    for (const vm::TensorSpec& in : exe.inputs) {
      inputs.emplace_back(vm::read_npy(source(dir + "/inputs/" + in.name + ".npy")));
    }
    std::vector<vm::Value> outputs = machine.run(inputs);
    ASSERT_EQ(outputs.size(), exe.outputs.size()) << dir;
    for (size_t k = 0; k < outputs.size(); ++k) {
      const std::string& name = exe.outputs[k].name;
      expect_matches(outputs[k].as_tensor(),
                     vm::read_npy(source(dir + "/outputs/" + name + ".npy")), dir + " " + name);
    }
  }
}

// The bundled demo: an If on the input's energy and a Loop that refines until converged,
// over any sequence length, from one executable.
TEST(EndToEnd, DemoModelMatchesItsReferencesAtEveryLength) {
  BuildOptions options;
  options.import.dims["seq"] = {1, 4096};
  auto program = compile("examples/demo/demo.onnx", options);
  run_cases(program, {"examples/demo/reference/seq_1", "examples/demo/reference/seq_7",
                      "examples/demo/reference/seq_64"});
}

// Nested If on two run-time flags; values worked out here.
TEST(EndToEnd, NestedIfTakesTheBranchItsFlagsSelect) {
  auto program = compile("tests/frontends/fixtures/nested_if.onnx", {});
  vm::VirtualMachine machine(program);
  std::vector<float> x{-1.5f, 0.5f, 2.0f};
  for (bool a : {true, false}) {
    for (bool b : {true, false}) {
      std::vector<vm::Value> in{
          vm::Tensor::from_vector(x, {3}, vm::DType::kFloat32),
          vm::Tensor::from_vector(std::vector<uint8_t>{a}, {}, vm::DType::kBool),
          vm::Tensor::from_vector(std::vector<uint8_t>{b}, {}, vm::DType::kBool)};
      const vm::Tensor y = machine.run(in).at(0).as_tensor();
      for (size_t i = 0; i < x.size(); ++i) {
        float want = a ? (b ? std::max(x[i], 0.0f) : -x[i]) : std::exp(x[i]);
        EXPECT_NEAR(y.data_as<float>()[i], want, 1e-6 * std::fabs(want)) << a << b << i;
      }
    }
  }
}

// Opset-9 Unsqueeze / Squeeze / Slice / Clip / Softmax, at several batch sizes.
TEST(EndToEnd, LegacyOpsetModelRunsAtEveryBatch) {
  BuildOptions options;
  options.import.dims["batch"] = {1, 256};
  auto program = compile("tests/frontends/fixtures/legacy_ops.onnx", options);
  vm::VirtualMachine machine(program);
  for (int64_t batch : {1, 2, 17}) {
    std::vector<float> x(static_cast<size_t>(batch * 8));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 11) * 0.37f - 1.7f;
    std::vector<vm::Value> in{vm::Tensor::from_vector(x, {batch, 8}, vm::DType::kFloat32)};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{batch, 6}));
    for (int64_t r = 0; r < batch; ++r) {
      double e[6], sum = 0;
      for (int c = 0; c < 6; ++c) {
        double v =
            std::clamp(static_cast<double>(x[static_cast<size_t>(r * 8 + c + 1)]), -1.0, 1.0);
        e[c] = std::exp(v);
        sum += e[c];
      }
      for (int c = 0; c < 6; ++c) {
        EXPECT_NEAR(y.data_as<float>()[r * 6 + c], e[c] / sum, 1e-6) << batch << " " << r;
      }
    }
  }
}

// Fully static compilation (--static) of the same model gives the same answers.
TEST(EndToEnd, StaticCompilationAgreesWithTheSymbolicOne) {
  BuildOptions options;
  options.static_inputs["x"] = {7, 16};
  auto program = compile("examples/demo/demo.onnx", options);
  EXPECT_EQ(program->exe().inputs[0].dims[0].value, 7);
  EXPECT_FALSE(program->exe().inputs[0].dims[0].is_symbolic());
  run_cases(program, {"examples/demo/reference/seq_7"});
  BuildOptions wrong;
  wrong.static_inputs["x"] = {7, 15};
  EXPECT_USER_ERROR(compile("examples/demo/demo.onnx", wrong), "--static x: dim 1 is 16, given 15");
}

// LSTM nodes (forward with initial state, reverse without, bidirectional with) expanded into
// Loops; references from ONNX Runtime (scripts/models/make_lstm_models.py).
// A recurrent model of tests/e2e/models, compiled once for seq 1..1024 and batch 1..64,
// against its three cases.
void expect_recurrent_model_matches(const std::string& name) {
  BuildOptions options;
  options.import.dims["seq"] = {1, 1024};
  options.import.dims["batch"] = {1, 64};
  std::string dir = "tests/e2e/models/" + name;
  auto program = compile(dir + "/model.onnx", options);
  run_cases(program, {dir + "/cases/0", dir + "/cases/1", dir + "/cases/2"});
}

TEST(EndToEnd, LstmInEveryDirectionMatchesOnnxRuntime) {
  for (const char* name : {"lstm_forward", "lstm_reverse", "lstm_bidirectional"}) {
    expect_recurrent_model_matches(name);
  }
}

// GRU (linear_before_reset 0 and 1) and RNN nodes, forward, reverse and bidirectional, with
// and without B and initial_h, expanded into Loops like LSTM; at seq 1, 4 and 11, references
// from ONNX Runtime (scripts/models/make_gru_rnn_models.py).
TEST(EndToEnd, GruAndRnnMatchOnnxRuntime) {
  for (const char* name : {"gru_forward", "gru_reverse_lbr", "gru_bidirectional", "rnn_forward",
                           "rnn_reverse", "rnn_bidirectional"}) {
    expect_recurrent_model_matches(name);
  }
}

// LSTM with peepholes and sequence_lens 5, 2, 3 of 5 steps: a batch element past its length
// keeps its states and its Y is 0; reference: the ONNX equations in numpy
// (scripts/models/make_lstm_seq_lens_model.py).
TEST(EndToEnd, LstmPeepholesAndSequenceLensMatchNumpy) {
  const std::string dir = "tests/e2e/models/lstm_peepholes_seq_lens";
  run_cases(compile(dir + "/model.onnx", BuildOptions{}), {dir + "/cases/0"});
}

// What the expansion does not cover is refused with one UserError line naming the node.
TEST(EndToEnd, UnsupportedRecurrentAttributesAreRefusedNamingTheNode) {
  auto expand = [](const std::string& node) {
    return compiler::expand_recurrent(compiler::parse_module(
        "fn @main(%x: f32[5, 2, 8], %w: f32[1, 48, 8], %r: f32[1, 48, 16], %lens: i32[2]) {\n"
        "  %cell = " +
        node + "\n  return %cell\n}"));
  };
  EXPECT_USER_ERROR(expand("GRU(%x, %w, %r) {clip=2.0, hidden_size=16}"),
                    "%cell = GRU: clip is not supported");
  EXPECT_USER_ERROR(expand("GRU(%x, %w, %r) {activations=[\"Relu\", \"Tanh\"], hidden_size=16}"),
                    "%cell = GRU: only the default activations (Sigmoid, Tanh) are supported");
  EXPECT_USER_ERROR(expand("RNN(%x, %w, %r) {hidden_size=16, layout=2}"),
                    "%cell = RNN: layout must be 0 or 1, not 2");
  EXPECT_USER_ERROR(expand("RNN(%x, %w, %r, (), %lens) {direction=\"reverse\", hidden_size=16}"),
                    "%cell = RNN: sequence_lens is supported with direction forward only");
  EXPECT_USER_ERROR(expand("RNN(%x, %w, %r) {activations=[\"Relu\"], hidden_size=16}"),
                    "%cell = RNN: only the default activations (Tanh) are supported");
  EXPECT_USER_ERROR(expand("LSTM(%x, %w, %r) {hidden_size=12, input_forget=1}"),
                    "%cell = LSTM: input_forget is not supported");
}

// Models exported from PyTorch with data-dependent Loop and If (a greedy decoder that stops
// at an end token; an RNN branching on the sign of its state); references from PyTorch.
TEST(EndToEnd, PyTorchLoopModelsMatchPyTorch) {
  BuildOptions decoder;
  decoder.import.dims["src_len"] = {1, 4096};
  run_cases(compile("tests/e2e/models/greedy_decoder/model.onnx", decoder),
            {"tests/e2e/models/greedy_decoder/cases/0", "tests/e2e/models/greedy_decoder/cases/1",
             "tests/e2e/models/greedy_decoder/cases/2", "tests/e2e/models/greedy_decoder/cases/3"});
  BuildOptions rnn;
  rnn.import.dims["seq"] = {1, 4096};
  run_cases(compile("tests/e2e/models/sign_branch_rnn/model.onnx", rnn),
            {"tests/e2e/models/sign_branch_rnn/cases/0", "tests/e2e/models/sign_branch_rnn/cases/1",
             "tests/e2e/models/sign_branch_rnn/cases/2"});
}

// RoiAlign-10 (output_half_pixel, avg) and RoiAlign-16 (half_pixel, max), adaptive sampling,
// compiled once with N, H, W and num_rois symbolic and no flags, at four sizes (one pixel, no
// roi at all, rois past the image); references from ONNX Runtime, checked against the ONNX
// operator in numpy (scripts/models/make_roi_align_models.py).
TEST(EndToEnd, RoiAlignMatchesOnnxRuntimeAtEverySize) {
  for (const char* name : {"roi_align_opset10", "roi_align_max"}) {
    const std::string dir = std::string("tests/e2e/models/") + name;
    SCOPED_TRACE(name);
    run_cases(compile(dir + "/model.onnx", BuildOptions{}),
              {dir + "/cases/0", dir + "/cases/1", dir + "/cases/2", dir + "/cases/3"});
  }
}

// Conv -> BatchNormalization pairs folded into one Conv (compiler/passes/fold_batch_norm),
// one Conv whose output is also read elsewhere left with its BatchNormalization; N, H, W
// symbolic, three sizes down to 1x1, references from the ONNX definitions in float64 numpy
// (scripts/models/make_conv_bn_model.py).
TEST(EndToEnd, BatchNormFoldedIntoConvMatchesTheUnfoldedMath) {
  const std::string dir = "tests/e2e/models/conv_bn";
  std::ostringstream log;
  BuildOptions options;
  options.time_passes = true;
  options.log = &log;
  run_cases(compile(dir + "/model.onnx", options),
            {dir + "/cases/0", dir + "/cases/1", dir + "/cases/2"});
  EXPECT_NE(log.str().find("fold_batch_norm: "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("2 BatchNormalization folded into their Conv"), std::string::npos)
      << log.str();
}

// The dynamic corpus (scripts/models/export_dynamic_corpus.py): fifteen models exported
// from PyTorch the way real exporters write them (shapes computed with tensors, lengths from
// values, run-time bounds, joins), each compiled once with NO flags and run at every case,
// empty results included; references from PyTorch (ONNX Runtime agrees). The models the
// compiler cannot run yet are listed, with the error, in expected_failures.txt; a listed
// model that passes fails the test.
TEST(EndToEnd, DynamicCorpusCompilesWithNoFlagsAndMatchesPyTorch) {
  const fs::path root = source("tests/e2e/models/dynamic");
  std::map<std::string, std::string> expected;  // model -> the start of its error
  std::ifstream list(root / "expected_failures.txt");
  for (std::string line; std::getline(list, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    expected[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  std::vector<std::string> models;
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory()) models.push_back(entry.path().filename().string());
  }
  std::sort(models.begin(), models.end());
  ASSERT_GE(models.size(), 14u);
  for (const std::string& name : models) {
    const std::string dir = "tests/e2e/models/dynamic/" + name;
    std::vector<std::string> cases;
    for (const auto& c : fs::directory_iterator(source(dir + "/cases"))) {
      cases.push_back(dir + "/cases/" + c.path().filename().string());
    }
    std::sort(cases.begin(), cases.end());
    auto it = expected.find(name);
    if (it != expected.end()) {
      try {
        compile(dir + "/model.onnx", BuildOptions{});
        ADD_FAILURE() << name << " compiles but expected_failures.txt lists it: remove it";
      } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find(it->second), std::string::npos)
            << name << ": " << e.what();
      }
      continue;
    }
    SCOPED_TRACE(name);
    run_cases(compile(dir + "/model.onnx", BuildOptions{}), cases);
  }
}

std::string real_model(const std::string& name) {
  const char* dir = std::getenv("DYNVM_MODELS_DIR");
  std::string path = std::string(dir != nullptr ? dir : source(".models")) + "/" + name;
  if (!fs::exists(path)) ADD_FAILURE() << path << " is missing: run make models";
  return path;
}

// PP-OCRv4's recogniser, compiled once with N and W symbolic, at (N, W) = (1, 100),
// (1, 320), (4, 320): at ORT's five most likely classes of every time step our
// probabilities match ORT's (scripts/models/make_real_model_references.py). The --dim
// ranges are an optimization only: compiled with no flags, it matches too.
TEST(EndToEndRealModels, PpOcrMatchesOnnxRuntimeAtEveryWidth) {
  BuildOptions ranged;
  ranged.import.dims["p2o.DynamicDimension.0"] = {1, 8};
  ranged.import.dims["p2o.DynamicDimension.1"] = {8, 2048};
  for (const BuildOptions& options : {ranged, BuildOptions{}}) {
    auto program = vm::Program::load(serializer::read_vmexe(
        serializer::write_vmexe(compile_onnx(real_model("ppocrv4_rec.onnx"), options))));
    vm::VirtualMachine machine(program);
    for (int k = 0; k < 3; ++k) {
      std::string dir = source("tests/e2e/models/ppocrv4_rec/cases/" + std::to_string(k));
      std::ifstream shape(dir + "/shape.txt");
      int64_t n = 0, w = 0;
      shape >> n >> w;
      vm::Tensor x = vm::Tensor::empty({n, 3, 48, w}, vm::DType::kFloat32);
      float* p = x.data_as<float>();
      for (int64_t a = 0; a < n; ++a)
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t h = 0; h < 48; ++h)
            for (int64_t q = 0; q < w; ++q) {
              *p++ = static_cast<float>(((7 * a + 5 * c + 3 * h + q) % 17) / 8.0 - 1.0);
            }
      std::vector<vm::Value> in{x};
      const vm::Tensor y = machine.run(in).at(0).as_tensor();
      const vm::Tensor index = vm::read_npy(dir + "/outputs/top5_index.npy");
      const vm::Tensor prob = vm::read_npy(dir + "/outputs/top5_prob.npy");
      const int64_t steps = index.shape()[1], classes = 6625;
      ASSERT_EQ(y.shape(), (vm::Shape{n, steps, classes})) << "N " << n << " W " << w;
      for (int64_t i = 0; i < index.numel(); ++i) {
        const int64_t row = i / 5;
        const double got = y.data_as<float>()[row * classes + index.data_as<int64_t>()[i]];
        const double want = prob.data_as<float>()[i];
        ASSERT_LE(std::fabs(got - want), 1e-4 + 1e-3 * std::fabs(want))
            << "N " << n << " W " << w << " at " << i;
      }
    }
  }
}

// PP-OCRv4's text detector (DBNet: a conv backbone, nearest Resize and one-tap
// ConvTranspose upsampling, a sigmoid map), a model no test corpus was built around,
// compiled once with NO flags and run at (N, H, W) = (1, 96, 160), (2, 64, 96),
// (1, 160, 320): at every 7th row and column its probability map matches ORT's
// (scripts/models/make_real_model_references.py), text-like regions included.
TEST(EndToEndRealModels, PpOcrDetectorMatchesOnnxRuntimeWithNoFlags) {
  auto program = vm::Program::load(serializer::read_vmexe(
      serializer::write_vmexe(compile_onnx(real_model("ppocrv4_det.onnx"), BuildOptions{}))));
  vm::VirtualMachine machine(program);
  for (int k = 0; k < 3; ++k) {
    std::string dir = source("tests/e2e/models/ppocrv4_det/cases/" + std::to_string(k));
    std::ifstream shape(dir + "/shape.txt");
    int64_t n = 0, h = 0, w = 0;
    shape >> n >> h >> w;
    vm::Tensor x = vm::Tensor::empty({n, 3, h, w}, vm::DType::kFloat32);
    float* p = x.data_as<float>();
    for (int64_t a = 0; a < n; ++a)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t r = 0; r < h; ++r)
          for (int64_t q = 0; q < w; ++q) {
            const bool dark = r % 32 >= 10 && r % 32 < 20 && (7 * q + r + 3 * a) % 11 < 5;
            *p++ = dark ? -0.8f : 0.9f;
          }
    std::vector<vm::Value> in{x};
    const vm::Tensor y = machine.run(in).at(0).as_tensor();
    ASSERT_EQ(y.shape(), (vm::Shape{n, 1, h, w}));
    const vm::Tensor want = vm::read_npy(dir + "/outputs/y_every7.npy");
    const int64_t rows = want.shape()[2], cols = want.shape()[3];
    int above = 0;
    for (int64_t a = 0; a < n; ++a)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t q = 0; q < cols; ++q) {
          const double ref = want.data_as<float>()[(a * rows + r) * cols + q];
          const double got = y.data_as<float>()[(a * h + 7 * r) * w + 7 * q];
          above += ref > 0.3;
          ASSERT_LE(std::fabs(got - ref), 1e-4 + 1e-3 * std::fabs(ref))
              << "N " << n << " H " << h << " W " << w << " at (" << a << ", " << 7 * r << ", "
              << 7 * q << ")";
        }
    EXPECT_GT(above, 0) << "the references have no text-like region";
  }
}

// Silero VAD v5 from ONE executable for both rates: compiled with the chunk length
// versioned (`--dim input_1=256,512`), so the model's `if dim == 1` guards are decided in
// each version, and the unnamed batch dims of `input` and `state` declared the same.
std::shared_ptr<const vm::Program> silero_program(std::string* log_text) {
  BuildOptions options;
  options.import.dims["input_0"] = {1, 16};
  options.dim_versions["input_1"] = {256, 512};
  options.import.same_dims["state_1"] = "input_0";
  std::ostringstream log;
  options.log = &log;
  auto program = vm::Program::load(serializer::read_vmexe(
      serializer::write_vmexe(compile_onnx(real_model("silero_vad_v5.onnx"), options))));
  *log_text = log.str();
  return program;
}

// Streaming, batch 1 and 4: each chunk gets the state OUR previous chunk produced, and
// output and state match ONNX Runtime's stream (cases 0-5: 256 samples at 8 kHz, 6-11: 512
// at 16 kHz).
void stream_silero(vm::VirtualMachine& machine, int first_case) {
  vm::Tensor state;
  for (int k = first_case; k < first_case + 6; ++k) {
    std::string dir = source("tests/e2e/models/silero_vad/cases/" + std::to_string(k));
    if ((k - first_case) % 3 == 0) state = vm::read_npy(dir + "/inputs/state.npy");  // new stream
    std::vector<vm::Value> in{vm::read_npy(dir + "/inputs/input.npy"), state,
                              vm::read_npy(dir + "/inputs/sr.npy")};
    std::vector<vm::Value> out = machine.run(in);
    expect_matches(out.at(0).as_tensor(), vm::read_npy(dir + "/outputs/output.npy"),
                   "chunk " + std::to_string(k) + " output");
    expect_matches(out.at(1).as_tensor(), vm::read_npy(dir + "/outputs/stateN.npy"),
                   "chunk " + std::to_string(k) + " stateN");
    state = out.at(1).as_tensor();
  }
}

TEST(EndToEndRealModels, SileroVadStreamsBothRatesFromOneExecutable) {
  std::string log;
  auto program = silero_program(&log);
  // The 8 kHz path fed 512 samples cannot be typed: in that version it is a run-time error.
  EXPECT_NE(log.find("branch cannot run for the declared dims"), std::string::npos) << log;
  vm::VirtualMachine machine(program);
  stream_silero(machine, 0);  // 8 kHz, 256 samples
  stream_silero(machine, 6);  // 16 kHz, 512 samples
  stream_silero(machine, 0);  // and back: the versions share one machine

  // The 8 kHz path at 512 samples: a one-line run-time error, as in ONNX Runtime.
  std::string dir = source("tests/e2e/models/silero_vad/cases/6");
  vm::Tensor state = vm::read_npy(dir + "/inputs/state.npy");
  std::vector<vm::Value> wrong_rate{
      vm::read_npy(dir + "/inputs/input.npy"), state,
      vm::Tensor::from_vector(std::vector<int64_t>{8000}, {}, vm::DType::kInt64)};
  EXPECT_USER_ERROR(machine.run(wrong_rate),
                    "this branch cannot run for the dims the model was compiled for");
  // A chunk length the executable has no version for: a one-line run-time error.
  const int64_t batch = state.shape().at(1);
  vm::Tensor chunk = vm::Tensor::empty({batch, 300}, vm::DType::kFloat32);
  for (int64_t i = 0; i < chunk.numel(); ++i) chunk.data_as<float>()[i] = 0.0f;
  std::vector<vm::Value> wrong_length{
      chunk, state, vm::Tensor::from_vector(std::vector<int64_t>{16000}, {}, vm::DType::kInt64)};
  try {
    machine.run(wrong_length);
    ADD_FAILURE() << "a 300-sample chunk ran";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("input 'input': dim input_1 (axis 1) must be one of 256, 512"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

// With no flags: the chunk length and both batch dims symbolic. The 16 kHz branch's
// `if last dim == 1` guard is decided at run time, each branch typed with the code after it
// (infer_types' split continuation), and the state's batch dim is checked against the
// input's where they meet.
TEST(EndToEndRealModels, SileroVadStreamsWithNoFlags) {
  vm::VirtualMachine machine(vm::Program::load(serializer::read_vmexe(
      serializer::write_vmexe(compile_onnx(real_model("silero_vad_v5.onnx"), BuildOptions{})))));
  stream_silero(machine, 0);  // 8 kHz, 256 samples
  stream_silero(machine, 6);  // 16 kHz, 512 samples
}

// Indices only the run time knows are checked before they are used: one error naming the
// node, as in ONNX Runtime (the importer binds dynvm.IndicesOutOfRange / CheckIndices).
TEST(EndToEndOnnx, IndicesOutOfRangeFailNamingTheNode) {
  vm::VirtualMachine machine(vm::Program::load(
      compile_onnx(source("tests/frontends/fixtures/gather_indices.onnx"), BuildOptions{})));
  auto f32s = [](int64_t rows, int64_t cols) {
    vm::Tensor t = vm::Tensor::empty({rows, cols}, vm::DType::kFloat32);
    for (int64_t e = 0; e < t.numel(); ++e) t.data_as<float>()[e] = static_cast<float>(e);
    return t;
  };
  auto i64s = [](std::vector<int64_t> v, vm::Shape shape) {
    return vm::Tensor::from_vector(v, std::move(shape), vm::DType::kInt64);
  };
  std::vector<vm::Value> ok{f32s(3, 2), i64s({1, -2}, {2}), i64s({2, 1, 0, -1}, {2, 2}),
                            i64s({-1}, {})};
  std::vector<vm::Value> out = machine.run(ok);
  // y = x[:, [1, 0]], z = [x[2, 1], x[0, 1]], w = x[-1] for x = [[0, 1], [2, 3], [4, 5]].
  const float want_y[] = {1, 0, 3, 2, 5, 4};
  for (int64_t e = 0; e < 6; ++e) EXPECT_EQ(out.at(0).as_tensor().data_as<float>()[e], want_y[e]);
  EXPECT_EQ(out.at(1).as_tensor().data_as<float>()[0], 5.0f);
  EXPECT_EQ(out.at(1).as_tensor().data_as<float>()[1], 1.0f);
  ASSERT_EQ(out.at(2).as_tensor().shape(), (vm::Shape{2}));
  EXPECT_EQ(out.at(2).as_tensor().data_as<float>()[0], 4.0f);
  EXPECT_EQ(out.at(2).as_tensor().data_as<float>()[1], 5.0f);
  ok[3] = i64s({1}, {});
  EXPECT_EQ(machine.run(ok).at(2).as_tensor().data_as<float>()[1], 3.0f);
  std::vector<vm::Value> bad_column{ok[0], i64s({2}, {1}), ok[2], ok[3]};
  EXPECT_USER_ERROR(machine.run(bad_column),
                    "node 'pick_columns' (Gather, opset 13): an index is out of range for axis 1");
  std::vector<vm::Value> bad_point{ok[0], ok[1], i64s({3, 0}, {1, 2}), ok[3]};
  EXPECT_USER_ERROR(machine.run(bad_point),
                    "node 'pick_points' (GatherND, opset 13): an index is out of range");
  for (int64_t row : {3, -4}) {
    std::vector<vm::Value> bad_row{ok[0], ok[1], ok[2], i64s({row}, {})};
    EXPECT_USER_ERROR(machine.run(bad_row),
                      "node 'pick_row' (Gather, opset 13): an index is out of range for axis 0");
  }
}

// ---- vmc's command line ----

class Vmc : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("vmc_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  testing::ProgramResult vmc(const std::vector<std::string>& args) {
    return testing::run_program(VMC_PATH, args, dir_.string());
  }
  fs::path dir_;
};

bool one_line(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0 && s.find('\n') == s.size() - 1;
}

TEST_F(Vmc, CompilesAModelThatVmrunRuns) {
  std::string out = (dir_ / "demo.vmexe").string();
  auto r = vmc({source("examples/demo/demo.onnx"), "-o", out, "--dim", "seq=1..512", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(fs::exists(out));
  auto run = testing::run_program(
      VMRUN_PATH, {out, "--input", "x=" + source("examples/demo/reference/seq_7/inputs/x.npy")},
      dir_.string());
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("y: f32 [7, 16]"), std::string::npos) << run.out;
}

// --dim NAME=V1,V2: one executable with a version of the model per value.
TEST_F(Vmc, VersionedDimCompilesOneExecutableForEachValue) {
  std::string out = (dir_ / "demo.vmexe").string();
  auto r = vmc({source("examples/demo/demo.onnx"), "-o", out, "--dim", "seq=7,64", "-q",
                "--dump-ir", "after:version_entry"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("// IR after version_entry"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dynvm.Refine(%x) {dim=\"seq\", value=64}"), std::string::npos) << r.err;
  for (const char* seq : {"seq_7", "seq_64"}) {
    auto run = testing::run_program(
        VMRUN_PATH,
        {out, "--input",
         "x=" + source(std::string("examples/demo/reference/") + seq + "/inputs/x.npy")},
        dir_.string());
    EXPECT_EQ(run.status, 0) << run.err;
    EXPECT_NE(run.out.find(std::string("y: f32 [") + (seq + 4) + ", 16]"), std::string::npos)
        << run.out;
  }
}

TEST_F(Vmc, HelpAndVersion) {
  auto help = vmc({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: vmc MODEL.onnx"), std::string::npos);
  EXPECT_NE(vmc({"--version"}).out.find("vmc (dynvm)"), std::string::npos);
}

TEST_F(Vmc, BadCommandLinesExitTwoWithOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{{},
                                                                {"--frobnicate"},
                                                                {"a.onnx", "b.onnx"},
                                                                {"m.onnx", "--dim", "seq"},
                                                                {"m.onnx", "--dim", "seq=9..2"},
                                                                {"m.onnx", "--dim", "seq=4,x"},
                                                                {"m.onnx", "--dim", "seq=4,4"},
                                                                {"m.onnx", "--dim", "seq=4,"},
                                                                {"m.onnx", "--static", "x=1xq"},
                                                                {"m.onnx", "--dump-ir", "before:x"},
                                                                {"m.onnx", "-o"}}) {
    auto r = vmc(args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_TRUE(one_line(r.err, "vmc: ")) << r.err;
  }
}

TEST_F(Vmc, BadModelsExitOneAndLeaveNoFile) {
  std::string out = (dir_ / "x.vmexe").string();
  fs::path junk = dir_ / "junk.onnx";
  std::ofstream(junk) << "not a model";
  for (const std::string& model : {(dir_ / "missing.onnx").string(), junk.string(),
                                   source("tests/frontends/fixtures/unsupported.onnx")}) {
    auto r = vmc({model, "-o", out});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(one_line(r.err, "vmc: ")) << r.err;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(out + ".tmp"));
  }
  auto r = vmc({source("examples/demo/demo.onnx"), "-o", out, "--dim", "nope=1..2"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--dim nope: the model has no symbolic dim of that name"), std::string::npos)
      << r.err;
}

TEST_F(Vmc, DumpIrAndTimePasses) {
  auto r =
      vmc({source("tests/frontends/fixtures/legacy_ops.onnx"), "-o", (dir_ / "l.vmexe").string(),
           "--dump-ir", "after:infer_types", "--time-passes", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("// IR after infer_types"), std::string::npos);
  EXPECT_NE(r.err.find("%y: f32[batch, 6] = Softmax("), std::string::npos) << r.err;
  // Every step, from the import to kernel generation, reports itself.
  for (const char* step :
       {"import", "static", "version_entry", "expand_recurrent", "infer_types", "simplify",
        "fold_constants", "fold_batch_norm", "pack_weights", "dce", "fuse_attention", "fuse_ops",
        "place_devices", "emit_bytecode", "plan_memory", "insert_frees", "allocate_registers",
        "generate_kernels"}) {
    EXPECT_NE(r.err.find(std::string("[time] ") + step + ": "), std::string::npos) << step;
  }
  // A step that had nothing to do says so (no --dim N=V1,V2: nothing to version).
  size_t at = r.err.find("[time] version_entry: ");
  ASSERT_NE(at, std::string::npos) << r.err;
  std::string line = r.err.substr(at, r.err.find('\n', at) - at);
  EXPECT_NE(line.find(" ms (unchanged"), std::string::npos) << line;
}

// --dump-tir NAME: the lowered TIR of the kernels whose name holds NAME, and of no other.
TEST_F(Vmc, DumpTirPrintsTheMatchingKernels) {
  const std::string model = source("examples/demo/demo.onnx");
  auto all = vmc({model, "-o", (dir_ / "d.vmexe").string(), "--dump-tir", "", "-q"});
  ASSERT_EQ(all.status, 0) << all.err;
  std::vector<std::string> names;
  for (size_t at = all.err.find("// TIR of "); at != std::string::npos;
       at = all.err.find("// TIR of ", at + 1)) {
    const size_t from = at + std::string("// TIR of ").size();
    names.push_back(all.err.substr(from, all.err.find('\n', from) - from));
    EXPECT_EQ(all.err.compare(all.err.find('\n', from) + 1, 4, "def "), 0) << all.err;
  }
  ASSERT_GE(names.size(), 2u) << all.err;
  auto one = vmc({model, "-o", (dir_ / "d.vmexe").string(), "--dump-tir", names[1], "-q"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.err.find("// TIR of " + names[1] + "\n"), std::string::npos) << one.err;
  for (const std::string& other : names) {
    if (other.find(names[1]) != std::string::npos) continue;
    EXPECT_EQ(one.err.find("// TIR of " + other + "\n"), std::string::npos) << other;
  }
  EXPECT_EQ(vmc({model, "--dump-tir"}).status, 2);
}

TEST_F(Vmc, DumpsEveryStepAndVerifiesEachOnRequest) {
  auto r = vmc({source("examples/demo/demo.onnx"), "-o", (dir_ / "d.vmexe").string(), "--dim",
                "seq=1..512", "--dump-ir", "after:all", "--verify-each", "-q"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* step :
       {"import", "static", "version_entry", "expand_recurrent", "infer_types", "simplify",
        "fold_constants", "fold_batch_norm", "pack_weights", "dce", "fuse_attention", "fuse_ops"}) {
    EXPECT_NE(r.err.find(std::string("// IR after ") + step + "\n"), std::string::npos) << step;
  }
  EXPECT_NE(r.err.find("// placement after place_devices\nkernel device cpu\n"), std::string::npos);
  for (const char* step :
       {"emit_bytecode", "plan_memory", "insert_frees", "allocate_registers", "generate_kernels"}) {
    EXPECT_NE(r.err.find(std::string("// bytecode after ") + step + "\n"), std::string::npos)
        << step;
  }
  // One step alone: only its dump.
  auto one = vmc({source("examples/demo/demo.onnx"), "-o", (dir_ / "d.vmexe").string(), "--dim",
                  "seq=1..512", "--dump-ir", "after:insert_frees", "-q"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.err.find("// bytecode after insert_frees\n"), std::string::npos) << one.err;
  EXPECT_NE(one.err.find("free"), std::string::npos) << one.err;
  EXPECT_EQ(one.err.find("// IR after"), std::string::npos) << one.err;
}

}  // namespace
}  // namespace dynvm::e2e
