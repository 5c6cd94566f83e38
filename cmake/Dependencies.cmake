# Finds dynvm's dependencies, all from Debian 12 packages (scripts/install-deps.sh).
# The runtime (vm/) needs only TBB, dl and the DLPack header; the rest serve the
# compiler, kernel generator, tests and benchmarks.
find_package(Threads REQUIRED)
find_package(TBB REQUIRED)
find_package(cereal REQUIRED)
# The ONNX frontend: libonnx's protobuf classes (targets onnx_proto, onnx) and protobuf.
find_package(ONNX REQUIRED)
find_package(Protobuf REQUIRED)

find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)

if(DYNVM_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(DYNVM_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
