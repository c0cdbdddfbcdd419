# GradsyncOptions: compile options every gradsync target shares, as the interface target
# gradsync::options (warnings, warnings-as-errors under CI, sanitizers).
add_library(gradsync_options INTERFACE)
add_library(gradsync::options ALIAS gradsync_options)

target_compile_options(gradsync_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Woverloaded-virtual>)
if(GRADSYNC_WERROR)
  target_compile_options(gradsync_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()

if(GRADSYNC_SANITIZE)
  list(JOIN GRADSYNC_SANITIZE "," gradsync_sanitizers)
  message(STATUS "gradsync: building with -fsanitize=${gradsync_sanitizers}")
  target_compile_options(gradsync_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${gradsync_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all>)
  target_link_options(gradsync_options INTERFACE -fsanitize=${gradsync_sanitizers})
  target_compile_definitions(gradsync_options INTERFACE GRADSYNC_SANITIZED=1)
endif()
