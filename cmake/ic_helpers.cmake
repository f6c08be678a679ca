# ic_add_library(name DIR dir DEPS deps... [EXCLUDE files...])
# A static library made of every .cc file in `dir` (non-recursive), so adding a file to a
# folder needs no CMake change.
function(ic_add_library name)
  cmake_parse_arguments(ARG "" "DIR" "DEPS;SOURCES;EXCLUDE" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${ARG_DIR}/*.cc)
  foreach(excluded ${ARG_EXCLUDE})
    list(REMOVE_ITEM srcs ${CMAKE_CURRENT_SOURCE_DIR}/${excluded})
  endforeach()
  if(NOT srcs AND NOT ARG_SOURCES)
    set(srcs ${PROJECT_SOURCE_DIR}/cmake/empty.cc)  # a layer not written yet
  endif()
  add_library(${name} STATIC ${srcs} ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/src)
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${IC_WARNINGS}>)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# ic_add_tool(name SOURCES ... DEPS ...): a command-line program in build/bin.
function(ic_add_tool name)
  cmake_parse_arguments(ARG "" "" "DEPS;SOURCES" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${IC_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
endfunction()

# ic_add_test_dir(name DIR dir DEPS ...): one GoogleTest binary from every *_test.cc in dir, with
# the helpers they share (*_test_util.cc).
function(ic_add_test_dir name)
  cmake_parse_arguments(ARG "" "DIR" "DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${ARG_DIR}/*_test.cc ${ARG_DIR}/*_test_util.cc)
  if(NOT srcs)
    return()
  endif()
  add_executable(${name} ${srcs})
  target_compile_options(${name} PRIVATE ${IC_WARNINGS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES ENVIRONMENT "IC_TEST_BIN_DIR=${CMAKE_RUNTIME_OUTPUT_DIRECTORY};GOMP_SPINCOUNT=20000")
endfunction()
