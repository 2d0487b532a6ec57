# Flow-IPC's own code, compiled from the user's source beside the models of it
# (docs/upstream.md). Included by the top-level CMakeLists.txt after the
# shmbench target exists.
#
#   -DSHMB_FLOWIPC_SOURCE=DIR   DIR/flow, DIR/ipc_core, DIR/ipc_shm and
#                               DIR/ipc_shm_arena_lend: each a checkout
#                               (compiled in place) or a git directory whose
#                               HEAD's src/ is extracted into the build tree.
#   -DSHMB_FLOWIPC_BOOST_DIR=D  where Boost 1.81's headers are unpacked
#                               (scripts/flowipc_boost.sh; default
#                               ~/.cache/shmbench/boost-1.81).
#
# Upstream builds against Boost 1.81 (the suite against Debian's 1.74), so
# its subset is a shared library of its own, every symbol hidden but the C
# API (src/models/upstream_flowipc.map), bound to itself (-Bsymbolic): no
# Boost template of one version can stand in for the other's. Without
# SHMB_FLOWIPC_SOURCE the library is built from
# src/models/upstream_flowipc_none.c, which answers "not built".
set(SHMB_FLOWIPC_SOURCE "" CACHE PATH "A folder of Flow-IPC's flow, ipc_core, ipc_shm, ipc_shm_arena_lend (docs/upstream.md)")
if(DEFINED ENV{HOME})
  set(_fb_default "$ENV{HOME}/.cache/shmbench/boost-1.81")
else()
  set(_fb_default "${CMAKE_CURRENT_BINARY_DIR}/boost-1.81")
endif()
set(SHMB_FLOWIPC_BOOST_DIR "${_fb_default}" CACHE PATH "Where Boost 1.81's headers are unpacked for Flow-IPC's code")

if(NOT SHMB_FLOWIPC_SOURCE)
  target_sources(shmbench PRIVATE src/models/upstream_flowipc_none.c)
  return()
endif()

# What is compiled from upstream, by repository (relative to its root).
set(_fipc_files_flow src/flow/error/error.cpp src/flow/util/uniq_id_holder.cpp)
set(_fipc_files_ipc_core src/ipc/util/shared_name.cpp src/ipc/util/util.cpp src/ipc/util/detail/util.cpp
                         src/ipc/util/native_handle.cpp src/ipc/util/use_counted_object.cpp)
set(_fipc_files_ipc_shm src/ipc/shm/classic/pool_arena.cpp src/ipc/shm/classic/error.cpp)
set(_fipc_files_ipc_shm_arena_lend src/ipc/shm/arena_lend/shm_pool.cpp
                                   src/ipc/shm/arena_lend/borrower_shm_pool_repository.cpp)

get_filename_component(_fipc_src "${SHMB_FLOWIPC_SOURCE}" ABSOLUTE)
find_package(Git REQUIRED)
set(_fipc_sources "")
set(_fipc_includes "")
set(_fipc_commits "")
foreach(repo flow ipc_core ipc_shm ipc_shm_arena_lend)
  set(_at "${_fipc_src}/${repo}")
  if(EXISTS "${_at}/src" AND EXISTS "${_at}/CMakeLists.txt")
    # A checkout, compiled in place: its HEAD, marked when src/ differs from it.
    set(_root "${_at}")
    execute_process(COMMAND ${GIT_EXECUTABLE} -C "${_at}" rev-parse HEAD OUTPUT_VARIABLE _c
                    OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
    if(_rc)
      set(_c "unknown (not a git checkout)")
    else()
      execute_process(COMMAND ${GIT_EXECUTABLE} -C "${_at}" diff --quiet HEAD -- src RESULT_VARIABLE _dirty)
      if(_dirty)
        string(APPEND _c "+local changes")
      endif()
    endif()
  else()
    # A git directory: HEAD's src/, extracted once per commit.
    execute_process(COMMAND ${GIT_EXECUTABLE} --git-dir=${_at} rev-parse --verify --quiet "HEAD^{commit}"
                    OUTPUT_VARIABLE _c OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
    if(_rc)
      message(FATAL_ERROR "SHMB_FLOWIPC_SOURCE: ${_at} is neither a ${repo} checkout (src/, CMakeLists.txt) "
                          "nor a git directory of it")
    endif()
    set(_root "${CMAKE_CURRENT_BINARY_DIR}/flowipc-${repo}-${_c}")
    if(NOT EXISTS "${_root}/src/.extracted")
      file(REMOVE_RECURSE "${_root}")
      file(MAKE_DIRECTORY "${_root}/src")
      execute_process(COMMAND ${GIT_EXECUTABLE} --git-dir=${_at} archive --format=tar "${_c}:src"
                      COMMAND tar -x -C "${_root}/src" RESULTS_VARIABLE _rcs ERROR_VARIABLE _err)
      if(NOT _rcs STREQUAL "0;0")
        message(FATAL_ERROR "${repo}'s src/ could not be extracted from ${_at} at ${_c}: ${_err}")
      endif()
      file(TOUCH "${_root}/src/.extracted")
    endif()
  endif()
  foreach(f ${_fipc_files_${repo}})
    if(NOT EXISTS "${_root}/${f}")
      message(FATAL_ERROR "${_root}/${f} not found: SHMB_FLOWIPC_SOURCE/${repo} must be Flow-IPC's ${repo}")
    endif()
    list(APPEND _fipc_sources "${_root}/${f}")
  endforeach()
  list(APPEND _fipc_includes "${_root}/src")
  list(APPEND _fipc_commits "${repo} ${_c}")
  message(STATUS "shmbench: upstream Flow-IPC ${repo} ${_c} from ${_root}")
endforeach()
list(JOIN _fipc_commits ", " SHMB_FLOWIPC_COMMITS)

execute_process(COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/scripts/flowipc_boost.sh "${SHMB_FLOWIPC_BOOST_DIR}"
                RESULT_VARIABLE _rc)
if(_rc)
  message(FATAL_ERROR "Flow-IPC's code needs Boost 1.81's headers in ${SHMB_FLOWIPC_BOOST_DIR} "
                      "(scripts/flowipc_boost.sh failed; see its message above)")
endif()

add_library(shmb_flowipc_upstream SHARED ${_fipc_sources}
  upstream/stubs/flowipc/log_standin.cc src/models/upstream_flowipc.cc src/models/upstream_flowipc_jemalloc.cc)
set_target_properties(shmb_flowipc_upstream PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
                      CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
                      OUTPUT_NAME shmb_flowipc_upstream LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/models/upstream_flowipc.map)
# Boost 1.81 ahead of everything (the system's 1.74 is only ever searched last).
target_include_directories(shmb_flowipc_upstream SYSTEM BEFORE PRIVATE ${SHMB_FLOWIPC_BOOST_DIR}/usr/include)
target_include_directories(shmb_flowipc_upstream SYSTEM PRIVATE ${_fipc_includes})
target_include_directories(shmb_flowipc_upstream PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/include
                           ${CMAKE_CURRENT_SOURCE_DIR}/src/models ${CMAKE_CURRENT_SOURCE_DIR}/upstream/stubs/flowipc)
target_link_options(shmb_flowipc_upstream PRIVATE -Wl,--no-undefined -Wl,-Bsymbolic
                    -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/src/models/upstream_flowipc.map)
target_link_libraries(shmb_flowipc_upstream PRIVATE Threads::Threads rt)
set_source_files_properties(src/models/upstream_flowipc.cc src/models/upstream_flowipc_jemalloc.cc
                            upstream/stubs/flowipc/log_standin.cc PROPERTIES
  COMPILE_OPTIONS "${SHMB_WARNINGS}")
set_source_files_properties(src/models/upstream_flowipc.cc PROPERTIES
  COMPILE_DEFINITIONS "SHMB_FLOWIPC_COMMITS=\"${SHMB_FLOWIPC_COMMITS}\"")
target_link_libraries(shmbench PUBLIC shmb_flowipc_upstream)
install(TARGETS shmb_flowipc_upstream EXPORT shmbench-targets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
