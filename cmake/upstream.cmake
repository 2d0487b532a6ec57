# Mooncake's own code, compiled from the user's Mooncake source beside the
# models of it (docs/upstream.md). Included by the top-level CMakeLists.txt
# after the shmbench target exists.
#
#   -DSHMB_MOONCAKE_SOURCE=PATH   a Mooncake checkout (compiled in place), or a
#                                 git directory (bare or not) with
#   -DSHMB_MOONCAKE_COMMIT=REV    the commit whose files are extracted into the
#                                 build tree (git show REV:FILE); with a
#                                 checkout too, to build another commit.
#
# Nothing upstream is copied into this repository: the files are read where
# the user keeps them. Without SHMB_MOONCAKE_SOURCE the library is built from
# src/upstream_none.c, which answers "not built" to every call.
set(SHMB_MOONCAKE_SOURCE "" CACHE PATH "A Mooncake checkout or git directory to compile upstream code from (docs/upstream.md)")
set(SHMB_MOONCAKE_COMMIT "" CACHE STRING "The Mooncake commit to extract from SHMB_MOONCAKE_SOURCE (required for a bare git directory)")

if(NOT SHMB_MOONCAKE_SOURCE)
  target_sources(shmbench PRIVATE src/upstream_none.c)
  return()
endif()

# What is compiled from upstream, relative to the Mooncake root. Upstream
# builds with C++20 (mutex.h's SpinLock uses std::atomic_flag::test).
set(SHMB_UPSTREAM_OFFSET_FILES
  mooncake-store/include/offset_allocator/offset_allocator.h
  mooncake-store/include/mutex.h
  mooncake-store/src/offset_allocator.cpp)

get_filename_component(_mc_src "${SHMB_MOONCAKE_SOURCE}" ABSOLUTE)
find_package(Git REQUIRED)
if(EXISTS "${_mc_src}/mooncake-store/src/offset_allocator.cpp" AND NOT SHMB_MOONCAKE_COMMIT)
  # A checkout, compiled in place: the commit is its HEAD, marked when the
  # compiled files differ from it.
  set(_mc_root "${_mc_src}")
  execute_process(COMMAND ${GIT_EXECUTABLE} -C "${_mc_src}" rev-parse HEAD
                  OUTPUT_VARIABLE _mc_commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc)
    set(_mc_commit "unknown (not a git checkout)")
  else()
    execute_process(COMMAND ${GIT_EXECUTABLE} -C "${_mc_src}" diff --quiet HEAD -- ${SHMB_UPSTREAM_OFFSET_FILES}
                    RESULT_VARIABLE _dirty)
    if(_dirty)
      string(APPEND _mc_commit "+local changes")
    endif()
  endif()
else()
  # A git directory (or a checkout and a commit): the files of that commit,
  # extracted into the build tree.
  if(NOT SHMB_MOONCAKE_COMMIT)
    message(FATAL_ERROR "SHMB_MOONCAKE_SOURCE=${_mc_src} is not a Mooncake checkout "
                        "(no mooncake-store/src/offset_allocator.cpp); for a git directory give "
                        "-DSHMB_MOONCAKE_COMMIT=REV too")
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} --git-dir=${_mc_src} rev-parse --verify --quiet "${SHMB_MOONCAKE_COMMIT}^{commit}"
                  OUTPUT_VARIABLE _mc_commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(_rc)
    # A checkout's git directory is its .git.
    execute_process(COMMAND ${GIT_EXECUTABLE} -C "${_mc_src}" rev-parse --verify --quiet "${SHMB_MOONCAKE_COMMIT}^{commit}"
                    OUTPUT_VARIABLE _mc_commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
    set(_mc_git ${GIT_EXECUTABLE} -C "${_mc_src}")
  else()
    set(_mc_git ${GIT_EXECUTABLE} --git-dir=${_mc_src})
  endif()
  if(_rc)
    message(FATAL_ERROR "SHMB_MOONCAKE_COMMIT=${SHMB_MOONCAKE_COMMIT} is not a commit of ${_mc_src}")
  endif()
  set(_mc_root "${CMAKE_CURRENT_BINARY_DIR}/mooncake-${_mc_commit}")
  foreach(f ${SHMB_UPSTREAM_OFFSET_FILES})
    get_filename_component(_dir "${_mc_root}/${f}" DIRECTORY)
    file(MAKE_DIRECTORY "${_dir}")
    execute_process(COMMAND ${_mc_git} show "${_mc_commit}:${f}"
                    OUTPUT_FILE "${_mc_root}/${f}.new" RESULT_VARIABLE _rc ERROR_VARIABLE _err)
    if(_rc)
      message(FATAL_ERROR "${f} is not in Mooncake ${_mc_commit}: ${_err}")
    endif()
    # Rewritten only when it changed, so a reconfigure rebuilds nothing.
    configure_file("${_mc_root}/${f}.new" "${_mc_root}/${f}" COPYONLY)
    file(REMOVE "${_mc_root}/${f}.new")
  endforeach()
endif()
foreach(f ${SHMB_UPSTREAM_OFFSET_FILES})
  if(NOT EXISTS "${_mc_root}/${f}")
    message(FATAL_ERROR "${_mc_root}/${f} not found: SHMB_MOONCAKE_SOURCE must be a Mooncake source")
  endif()
endforeach()
set(SHMB_UPSTREAM_COMMIT "${_mc_commit}")
message(STATUS "shmbench: upstream Mooncake ${SHMB_UPSTREAM_COMMIT} from ${_mc_root}")

# Upstream's files and ours that include its headers: C++20, as upstream
# builds them, with upstream/stubs/ ahead of upstream's include folder so that
# its serializer and utils headers are our stand-ins. Upstream's own files get
# no warnings of ours (they are not ours to fix); its headers are SYSTEM.
add_library(shmb_upstream OBJECT
  ${_mc_root}/mooncake-store/src/offset_allocator.cpp
  src/upstream_offset.cc)
set_target_properties(shmb_upstream PROPERTIES CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
                      POSITION_INDEPENDENT_CODE ON)
target_include_directories(shmb_upstream BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/upstream/stubs)
target_include_directories(shmb_upstream SYSTEM PRIVATE ${_mc_root}/mooncake-store/include ${SHMB_BOOST_INCLUDE_DIR})
target_include_directories(shmb_upstream PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include)
target_link_libraries(shmb_upstream PRIVATE glog::glog)
set_source_files_properties(src/upstream_offset.cc PROPERTIES
  COMPILE_OPTIONS "${SHMB_WARNINGS}"
  COMPILE_DEFINITIONS "SHMB_UPSTREAM_COMMIT=\"${SHMB_UPSTREAM_COMMIT}\"")
target_sources(shmbench PRIVATE $<TARGET_OBJECTS:shmb_upstream>)
# Upstream logs through glog (its failure paths).
target_link_libraries(shmbench PUBLIC glog::glog)
