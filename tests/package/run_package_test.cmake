# Installs BUILD_DIR into WORK_DIR/prefix, then configures, builds and runs the
# project in CONSUMER_DIR against it (cmake -P; see CMakeLists.txt here).
foreach(v BUILD_DIR CONSUMER_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_package_test.cmake: ${v} is not set")
  endif()
endforeach()

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run("install into ${prefix}"
    ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
set(extra)
if(CXX_COMPILER)
  list(APPEND extra -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(CXX_LAUNCHER)
  list(APPEND extra -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()
if(SANITIZE)
  # The installed libraries were built with the sanitizers: so must the program.
  list(APPEND extra "-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined"
       "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined")
endif()
run("configure the outside project"
    ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release ${extra})
run("build the outside project"
    ${CMAKE_COMMAND} --build ${WORK_DIR}/build -j 2)
run("run the outside program"
    ${WORK_DIR}/build/consumer ${WORK_DIR}/data)
file(REMOVE_RECURSE ${WORK_DIR})
