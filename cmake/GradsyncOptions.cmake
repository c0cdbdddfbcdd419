# GradsyncOptions: compile options every gradsync target shares, as the interface target
# gradsync::options (warnings, warnings-as-errors under CI, sanitizers).
add_library(gradsync_options INTERFACE)
add_library(gradsync::options ALIAS gradsync_options)

target_compile_options(gradsync_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual>)
if(GRADSYNC_WERROR)
  target_compile_options(gradsync_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()

if(GRADSYNC_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GRADSYNC_FUZZ needs clang (libFuzzer); configure with the fuzz preset "
                        "or -DCMAKE_CXX_COMPILER=clang++ (Debian: apt install clang)")
  endif()
  # Every library the harnesses link is instrumented for coverage; the harnesses link libFuzzer.
  list(APPEND GRADSYNC_SANITIZE fuzzer-no-link)
endif()

if(GRADSYNC_SANITIZE)
  list(JOIN GRADSYNC_SANITIZE "," gradsync_sanitizers)
  message(STATUS "gradsync: building with -fsanitize=${gradsync_sanitizers}")
  target_compile_options(gradsync_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${gradsync_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  if(GRADSYNC_NO_SANITIZE)
    # After -fsanitize=, which would otherwise turn them back on (the compiler reads left to right).
    list(JOIN GRADSYNC_NO_SANITIZE "," gradsync_no_sanitizers)
    message(STATUS "gradsync: without -fsanitize=${gradsync_no_sanitizers}")
    target_compile_options(gradsync_options INTERFACE
      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize=${gradsync_no_sanitizers}>)
  endif()
  target_link_options(gradsync_options INTERFACE -fsanitize=${gradsync_sanitizers})
  # gradsync_unoptimized: what the sanitized build compiles at -O0 (after the build type's -O1):
  # the test programs and the command line, whose own code runs little next to the libraries'
  # (simulation, models, reports, which stay at -O1) but whose many small functions (GoogleTest's
  # TEST bodies, CLI11's options) cost a third more to compile optimized under the sanitizers.
  add_library(gradsync_unoptimized INTERFACE)
  target_compile_options(gradsync_unoptimized INTERFACE $<$<AND:$<CONFIG:Debug>,$<COMPILE_LANGUAGE:CXX>>:-O0>)
  target_compile_definitions(gradsync_options INTERFACE GRADSYNC_SANITIZED=1)
endif()
