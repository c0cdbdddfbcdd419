# GradsyncCuda: the optional GPU backend (CUDA + NCCL, found at /usr/local/cuda).
#   GRADSYNC_WITH_CUDA=AUTO  use it when nvcc and nccl.h are there, else leave it out (one message)
#   GRADSYNC_WITH_CUDA=ON    require it
#   GRADSYNC_WITH_CUDA=OFF   leave it out
# Sets GRADSYNC_HAVE_CUDA and, when ON, the imported targets CUDA::cudart, CUDA::cublas and
# gradsync_nccl.
set(GRADSYNC_HAVE_CUDA OFF)
set(GRADSYNC_CUDA_ROOT "/usr/local/cuda" CACHE PATH "Where CUDA and NCCL are installed")

if(NOT GRADSYNC_WITH_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "gradsync: GRADSYNC_WITH_CUDA=\"${GRADSYNC_WITH_CUDA}\" must be AUTO, ON or OFF")
endif()

if(GRADSYNC_WITH_CUDA STREQUAL "OFF")
  message(STATUS "gradsync: GPU backend left out (GRADSYNC_WITH_CUDA=OFF); real mode runs on CPUs over MPI")
  return()
endif()

set(gradsync_cuda_missing "")
if(NOT EXISTS "${GRADSYNC_CUDA_ROOT}/bin/nvcc")
  list(APPEND gradsync_cuda_missing "${GRADSYNC_CUDA_ROOT}/bin/nvcc")
endif()
find_path(GRADSYNC_NCCL_INCLUDE_DIR nccl.h HINTS "${GRADSYNC_CUDA_ROOT}/include" NO_CACHE)
find_library(GRADSYNC_NCCL_LIBRARY nccl HINTS "${GRADSYNC_CUDA_ROOT}/lib64" "${GRADSYNC_CUDA_ROOT}/lib" NO_CACHE)
if(NOT GRADSYNC_NCCL_INCLUDE_DIR OR NOT GRADSYNC_NCCL_LIBRARY)
  list(APPEND gradsync_cuda_missing "NCCL (nccl.h and libnccl)")
endif()

if(gradsync_cuda_missing)
  list(JOIN gradsync_cuda_missing ", " gradsync_cuda_missing_text)
  if(GRADSYNC_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "gradsync: GRADSYNC_WITH_CUDA=ON but ${gradsync_cuda_missing_text} not found "
                        "under ${GRADSYNC_CUDA_ROOT}; install CUDA 13 and NCCL there or set GRADSYNC_WITH_CUDA=OFF")
  endif()
  message(STATUS "gradsync: GPU backend left out: ${gradsync_cuda_missing_text} not found under "
                 "${GRADSYNC_CUDA_ROOT}; real mode runs on CPUs over MPI")
  return()
endif()

# Ampere (A100) and Hopper (H100/H200); must be set before enable_language(CUDA).
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "80;90")
endif()
set(CMAKE_CUDA_COMPILER "${GRADSYNC_CUDA_ROOT}/bin/nvcc")
enable_language(CUDA)
# CMake 3.25 knows nvcc dialects only up to C++17; nvcc 12+ accepts -std=c++20, so teach it.
if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)

add_library(gradsync_nccl UNKNOWN IMPORTED)
set_target_properties(gradsync_nccl PROPERTIES IMPORTED_LOCATION "${GRADSYNC_NCCL_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${GRADSYNC_NCCL_INCLUDE_DIR}")
set(GRADSYNC_HAVE_CUDA ON)
message(STATUS "gradsync: GPU backend on: CUDA ${CUDAToolkit_VERSION}, NCCL ${GRADSYNC_NCCL_LIBRARY}, "
               "architectures ${CMAKE_CUDA_ARCHITECTURES}")
