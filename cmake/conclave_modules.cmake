# conclave_add_module_folders(): adds every direct subfolder that has a
# CMakeLists.txt, in alphabetical order. The glob is over those files
# (CONFIGURE_DEPENDS), so adding a module re-runs the configure step by itself.
# Folders named in SKIP are left out.
function(conclave_add_module_folders)
  cmake_parse_arguments(M "" "" "SKIP" ${ARGN})
  file(GLOB _lists CONFIGURE_DEPENDS RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} */CMakeLists.txt)
  list(SORT _lists)
  foreach(_l IN LISTS _lists)
    get_filename_component(_m ${_l} DIRECTORY)
    if(NOT _m IN_LIST M_SKIP)
      add_subdirectory(${_m})
    endif()
  endforeach()
endfunction()
