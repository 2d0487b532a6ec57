# Mooncake's own code, compiled from the user's Mooncake source beside the
# models of it (docs/upstream.md). Included by the top-level CMakeLists.txt
# after the shmbench target exists.
#
#   -DSHMB_MOONCAKE_SOURCE=PATH   a Mooncake checkout (compiled in place), or a
#                                 git directory (bare or not) with
#   -DSHMB_MOONCAKE_COMMIT=REV    the commit whose files are extracted into the
#                                 build tree (git archive / git show); with a
#                                 checkout too, to build another commit.
#   -DSHMB_MOONCAKE_TENT=OFF      OffsetAllocator only, not TENT (which needs
#                                 libnuma-dev and about two minutes of build).
#
# Nothing upstream is copied into this repository: the files are read where
# the user keeps them. Without SHMB_MOONCAKE_SOURCE the library is built from
# src/models/upstream_none.c and src/models/upstream_tent_none.c, which answer "not built".
set(SHMB_MOONCAKE_SOURCE "" CACHE PATH "A Mooncake checkout or git directory to compile upstream code from (docs/upstream.md)")
set(SHMB_MOONCAKE_COMMIT "" CACHE STRING "The Mooncake commit to extract from SHMB_MOONCAKE_SOURCE (required for a bare git directory)")
option(SHMB_MOONCAKE_TENT "With SHMB_MOONCAKE_SOURCE: also build TENT's engine and SHM transport" ON)

# Read by cmake/shmbench-config.cmake.in: an installed library with upstream
# code needs glog's package too.
set(SHMB_UPSTREAM_BUILT OFF)
if(NOT SHMB_MOONCAKE_SOURCE)
  target_sources(shmbench PRIVATE src/models/upstream_none.c src/models/upstream_tent_none.c)
  return()
endif()
set(SHMB_UPSTREAM_BUILT ON)

# What is compiled from upstream, relative to the Mooncake root. Upstream
# builds with C++20 (mutex.h's SpinLock uses std::atomic_flag::test).
set(SHMB_UPSTREAM_OFFSET_FILES
  mooncake-store/include/offset_allocator/offset_allocator.h
  mooncake-store/include/mutex.h
  mooncake-store/src/offset_allocator.cpp)
set(_tent mooncake-transfer-engine/tent)
# TENT: whole folders (upstream globs its runtime), and the transfer engine's
# common headers its sources include.
set(SHMB_UPSTREAM_TENT_DIRS ${_tent}/include ${_tent}/src/runtime ${_tent}/src/common ${_tent}/src/metrics
                            ${_tent}/src/transport/shm ${_tent}/src/transport/tcp)
set(SHMB_UPSTREAM_TENT_FILES ${_tent}/src/platform/cpu_probe.cpp
  mooncake-transfer-engine/include/common.h mooncake-transfer-engine/include/error.h
  mooncake-transfer-engine/include/char_util.h)

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
    execute_process(COMMAND ${GIT_EXECUTABLE} -C "${_mc_src}" diff --quiet HEAD --
                            ${SHMB_UPSTREAM_OFFSET_FILES} ${SHMB_UPSTREAM_TENT_DIRS} ${SHMB_UPSTREAM_TENT_FILES}
                    RESULT_VARIABLE _dirty)
    if(_dirty)
      string(APPEND _mc_commit "+local changes")
    endif()
  endif()
else()
  # A git directory (or a checkout and a commit): the files of that commit,
  # extracted into the build tree once per commit.
  if(NOT SHMB_MOONCAKE_COMMIT)
    message(FATAL_ERROR "SHMB_MOONCAKE_SOURCE=${_mc_src} is not a Mooncake checkout "
                        "(no mooncake-store/src/offset_allocator.cpp); for a git directory give "
                        "-DSHMB_MOONCAKE_COMMIT=REV too")
  endif()
  set(_mc_git ${GIT_EXECUTABLE} --git-dir=${_mc_src})
  execute_process(COMMAND ${_mc_git} rev-parse --verify --quiet "${SHMB_MOONCAKE_COMMIT}^{commit}"
                  OUTPUT_VARIABLE _mc_commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(_rc)
    # A checkout's git directory is its .git.
    set(_mc_git ${GIT_EXECUTABLE} -C "${_mc_src}")
    execute_process(COMMAND ${_mc_git} rev-parse --verify --quiet "${SHMB_MOONCAKE_COMMIT}^{commit}"
                    OUTPUT_VARIABLE _mc_commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  endif()
  if(_rc)
    message(FATAL_ERROR "SHMB_MOONCAKE_COMMIT=${SHMB_MOONCAKE_COMMIT} is not a commit of ${_mc_src}")
  endif()
  set(_mc_root "${CMAKE_CURRENT_BINARY_DIR}/mooncake-${_mc_commit}")
  set(_files ${SHMB_UPSTREAM_OFFSET_FILES})
  set(_dirs "")
  if(SHMB_MOONCAKE_TENT)
    list(APPEND _files ${SHMB_UPSTREAM_TENT_FILES})
    list(APPEND _dirs ${SHMB_UPSTREAM_TENT_DIRS})
  endif()
  foreach(f ${_files})
    if(EXISTS "${_mc_root}/${f}")
      continue() # a commit's files never change
    endif()
    get_filename_component(_dir "${_mc_root}/${f}" DIRECTORY)
    file(MAKE_DIRECTORY "${_dir}")
    execute_process(COMMAND ${_mc_git} show "${_mc_commit}:${f}"
                    OUTPUT_FILE "${_mc_root}/${f}.part" RESULT_VARIABLE _rc ERROR_VARIABLE _err)
    if(_rc)
      message(FATAL_ERROR "${f} is not in Mooncake ${_mc_commit}: ${_err}")
    endif()
    file(RENAME "${_mc_root}/${f}.part" "${_mc_root}/${f}")
  endforeach()
  foreach(d ${_dirs})
    if(EXISTS "${_mc_root}/${d}/.extracted")
      continue()
    endif()
    file(MAKE_DIRECTORY "${_mc_root}/${d}")
    # The folder's tree alone: archiving the commit's root would read every
    # blob of the repository.
    execute_process(COMMAND ${_mc_git} archive --format=tar "${_mc_commit}:${d}"
                    COMMAND tar -x -C "${_mc_root}/${d}"
                    RESULTS_VARIABLE _rcs ERROR_VARIABLE _err)
    if(NOT _rcs STREQUAL "0;0")
      message(FATAL_ERROR "${d} could not be extracted from Mooncake ${_mc_commit}: ${_err}")
    endif()
    file(TOUCH "${_mc_root}/${d}/.extracted")
  endforeach()
endif()
foreach(f ${SHMB_UPSTREAM_OFFSET_FILES})
  if(NOT EXISTS "${_mc_root}/${f}")
    message(FATAL_ERROR "${_mc_root}/${f} not found: SHMB_MOONCAKE_SOURCE must be a Mooncake source")
  endif()
endforeach()
set(SHMB_UPSTREAM_COMMIT "${_mc_commit}")
message(STATUS "shmbench: upstream Mooncake ${SHMB_UPSTREAM_COMMIT} from ${_mc_root} (TENT: ${SHMB_MOONCAKE_TENT})")

# OffsetAllocator: upstream's file and ours that includes its header, C++20 as
# upstream builds them, with upstream/stubs/store/ ahead of upstream's include
# folder so that its serializer and utils headers are our stand-ins. Upstream's
# files get no warnings of ours (they are not ours to fix); its headers are
# SYSTEM.
add_library(shmb_upstream OBJECT
  ${_mc_root}/mooncake-store/src/offset_allocator.cpp
  src/models/upstream_offset.cc)
set_target_properties(shmb_upstream PROPERTIES CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
                      POSITION_INDEPENDENT_CODE ON)
target_include_directories(shmb_upstream BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/upstream/stubs/store)
target_include_directories(shmb_upstream SYSTEM PRIVATE ${_mc_root}/mooncake-store/include ${SHMB_BOOST_INCLUDE_DIR})
target_include_directories(shmb_upstream PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(shmb_upstream PRIVATE glog::glog)
set_source_files_properties(src/models/upstream_offset.cc PROPERTIES
  COMPILE_OPTIONS "${SHMB_WARNINGS}"
  COMPILE_DEFINITIONS "SHMB_UPSTREAM_COMMIT=\"${SHMB_UPSTREAM_COMMIT}\"")
target_sources(shmbench PRIVATE $<TARGET_OBJECTS:shmb_upstream>)
# Upstream logs through glog (its failure paths).
target_link_libraries(shmbench PUBLIC glog::glog)

if(NOT SHMB_MOONCAKE_TENT)
  target_sources(shmbench PRIVATE src/models/upstream_tent_none.c)
  return()
endif()

# TENT: its runtime, common code, metrics (compiled out, TENT_METRICS_ENABLED
# defaults to 0), SHM and TCP transports (the ones its loader builds without
# USE_* flags) and CPU platform, as upstream's CMake gathers them, less the
# two files our stand-ins replace: src/rpc/rpc.cpp (the RPC agent over
# yalantinglibs, replaced by upstream/stubs/tent/rpc_loopback.cc) and
# src/platform/cpu_allocator.cpp (the copy, replaced by
# upstream/stubs/tent/cpu_copy.cc). upstream/stubs/tent/include/ stands in
# for yalantinglibs', async_simple's and libibverbs' headers.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 16)
  # transfer_engine_impl.cpp captures a structured binding in a lambda
  # (C++20), which clang accepts from 16 on.
  message(FATAL_ERROR "TENT's transfer_engine_impl.cpp needs gcc or clang 16 or later (this is clang "
                      "${CMAKE_CXX_COMPILER_VERSION}); configure with -DSHMB_MOONCAKE_TENT=OFF for OffsetAllocator alone")
endif()
find_path(SHMB_NUMA_INCLUDE_DIR numa.h)
find_library(SHMB_NUMA_LIB numa)
if(NOT SHMB_NUMA_INCLUDE_DIR OR NOT SHMB_NUMA_LIB)
  message(FATAL_ERROR "TENT needs libnuma (Debian: libnuma-dev; scripts/install_deps.sh installs it when "
                      "SHMB_MOONCAKE_SOURCE is set), or configure with -DSHMB_MOONCAKE_TENT=OFF")
endif()
set(_t ${_mc_root}/${_tent})
file(GLOB _tent_sources ${_t}/src/runtime/*.cpp ${_t}/src/common/*.cpp ${_t}/src/metrics/*.cpp)
list(APPEND _tent_sources ${_t}/src/transport/shm/shm_transport.cpp ${_t}/src/transport/tcp/tcp_transport.cpp
                          ${_t}/src/platform/cpu_probe.cpp)
add_library(shmb_upstream_tent OBJECT ${_tent_sources}
  upstream/stubs/tent/rpc_loopback.cc upstream/stubs/tent/cpu_copy.cc src/models/upstream_tent.cc)
set_target_properties(shmb_upstream_tent PROPERTIES CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
                      POSITION_INDEPENDENT_CODE ON)
target_include_directories(shmb_upstream_tent BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/upstream/stubs/tent/include)
target_include_directories(shmb_upstream_tent SYSTEM PRIVATE ${_t}/include ${_t}/src/runtime
                           ${_mc_root}/mooncake-transfer-engine/include ${SHMB_NUMA_INCLUDE_DIR} ${SHMB_BOOST_INCLUDE_DIR})
target_include_directories(shmb_upstream_tent PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include ${CMAKE_CURRENT_SOURCE_DIR}/src)
target_link_libraries(shmb_upstream_tent PRIVATE glog::glog)
# segment_manager.cpp uses struct stat without <sys/stat.h>: upstream gets it
# through yalantinglibs' headers, which the stand-ins do not include.
set_source_files_properties(${_t}/src/runtime/segment_manager.cpp PROPERTIES COMPILE_OPTIONS "-include;sys/stat.h")
set_source_files_properties(src/models/upstream_tent.cc upstream/stubs/tent/rpc_loopback.cc upstream/stubs/tent/cpu_copy.cc
                            PROPERTIES COMPILE_OPTIONS "${SHMB_WARNINGS}")
target_sources(shmbench PRIVATE $<TARGET_OBJECTS:shmb_upstream_tent>)
target_link_libraries(shmbench PUBLIC ${SHMB_NUMA_LIB})
