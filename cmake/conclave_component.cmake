# conclave_add_component(NAME
#   SOURCES a.cpp ...        library sources (a header-only component gives none)
#   DEPS    target ...       public link dependencies
#   TESTS   a.test.cpp ...   GoogleTest sources: built into conclave_NAME_test,
#                            discovered by CTest
#   TEST_DEPS target ...     extra link dependencies of the test binary)
#
# Defines conclave_NAME, aliased conclave::NAME, installed and exported in the
# conclave:: package. Headers live next to the sources and are included by their
# path from the repository root: #include "protocols/election/term.hpp".
function(conclave_add_component name)
  cmake_parse_arguments(C "" "" "SOURCES;DEPS;TESTS;TEST_DEPS" ${ARGN})
  set(target conclave_${name})
  if(C_SOURCES)
    add_library(${target} ${C_SOURCES})
    target_link_libraries(${target} PUBLIC ${C_DEPS} PRIVATE conclave_options)
    set(scope PUBLIC)
  else()
    add_library(${target} INTERFACE)
    target_link_libraries(${target} INTERFACE ${C_DEPS})
    set(scope INTERFACE)
  endif()
  add_library(conclave::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} ${scope}
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/conclave>)
  install(TARGETS ${target} EXPORT conclaveTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  if(C_TESTS AND CONCLAVE_BUILD_TESTS)
    conclave_add_test(${name} SOURCES ${C_TESTS} DEPS ${target} ${C_TEST_DEPS})
  endif()
endfunction()

# conclave_add_test(NAME SOURCES ... DEPS ... [PROPERTIES name value ...]): a
# GoogleTest binary conclave_NAME_test; PROPERTIES are set on each of its tests
# (after TIMEOUT 300), e.g. RUN_SERIAL TRUE for tests that time processes.
function(conclave_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;DEPS;PROPERTIES" ${ARGN})
  add_executable(conclave_${name}_test ${T_SOURCES})
  target_link_libraries(conclave_${name}_test PRIVATE ${T_DEPS} conclave_test_support
                        GTest::gtest_main conclave_options)
  gtest_discover_tests(conclave_${name}_test DISCOVERY_TIMEOUT 60
                       PROPERTIES TIMEOUT 300 ${T_PROPERTIES})
endfunction()

# conclave_add_program(NAME SOURCES ... DEPS ...): an executable in build/bin;
# the benchmarks (tests/bench) link the allocator chosen by
# CONCLAVE_BENCH_ALLOCATOR (CMakeLists.txt).
function(conclave_add_program name)
  cmake_parse_arguments(P "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${P_SOURCES})
  set(alloc "")
  if(CMAKE_CURRENT_SOURCE_DIR MATCHES "/tests/bench(/|$)")
    set(alloc ${CONCLAVE_ALLOCATOR_LIB})
  endif()
  target_link_libraries(${name} PRIVATE ${P_DEPS} conclave_options ${alloc})
endfunction()
