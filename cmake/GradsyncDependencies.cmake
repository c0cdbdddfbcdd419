# GradsyncDependencies: the Debian packages gradsync builds against. Each missing one stops the
# configure step with the package to install (scripts/setup installs them all).

function(gradsync_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "gradsync: ${what} not found; install the Debian package '${package}' "
                        "(or run scripts/setup, which installs every dependency)")
  endif()
endfunction()

find_package(PkgConfig)
gradsync_require(PKG_CONFIG_FOUND "pkg-config" pkg-config)

pkg_check_modules(SIMGRID IMPORTED_TARGET GLOBAL simgrid>=3.32)
gradsync_require(SIMGRID_FOUND "SimGrid >= 3.32 (pkg-config module 'simgrid')" libsimgrid-dev)

find_package(Boost 1.74 QUIET COMPONENTS graph)
gradsync_require(Boost_FOUND "Boost.Graph >= 1.74" libboost-graph-dev)

find_package(fmt QUIET)
gradsync_require(fmt_FOUND "fmt" libfmt-dev)
find_package(yaml-cpp QUIET)
gradsync_require(yaml-cpp_FOUND "yaml-cpp" libyaml-cpp-dev)
find_package(nlohmann_json 3.10 QUIET)
gradsync_require(nlohmann_json_FOUND "nlohmann-json >= 3.10" nlohmann-json3-dev)
find_package(CLI11 QUIET)
gradsync_require(CLI11_FOUND "CLI11" libcli11-dev)
find_package(MPI QUIET COMPONENTS CXX)
gradsync_require(MPI_CXX_FOUND "MPI (C++ bindings)" "libopenmpi-dev openmpi-bin")
# OpenBLAS (the CPU backend's GEMMs): its CBLAS header and library, as pkg-config knows them.
pkg_check_modules(OPENBLAS QUIET IMPORTED_TARGET GLOBAL openblas)
gradsync_require(OPENBLAS_FOUND "OpenBLAS (pkg-config module 'openblas')" libopenblas-dev)
add_library(gradsync_openblas INTERFACE IMPORTED GLOBAL)
target_link_libraries(gradsync_openblas INTERFACE PkgConfig::OPENBLAS)
find_package(Threads REQUIRED)

if(GRADSYNC_BUILD_TESTS)
  find_package(GTest QUIET)
  gradsync_require(GTest_FOUND "GoogleTest" libgtest-dev)
endif()
if(GRADSYNC_BUILD_BENCH)
  find_package(benchmark QUIET)
  gradsync_require(benchmark_FOUND "Google Benchmark" libbenchmark-dev)
endif()
