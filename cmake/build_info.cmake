# Run at every build (cmake -P): writes OUT from IN with the git commit of
# SOURCE_DIR ("" outside a git checkout; "-dirty" appended when tracked files
# differ from it) and the compiler, build type and flags given with -D.
# configure_file rewrites OUT only when its text changes, so an unchanged
# commit recompiles nothing.
set(SHMB_GIT_COMMIT "")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" rev-parse HEAD
                  OUTPUT_VARIABLE commit RESULT_VARIABLE failed
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT failed)
    set(SHMB_GIT_COMMIT "${commit}")
    execute_process(COMMAND "${GIT_EXECUTABLE}" -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(changes)
      string(APPEND SHMB_GIT_COMMIT "-dirty")
    endif()
  endif()
endif()
string(REPLACE "\\" "\\\\" SHMB_BUILD_FLAGS "${FLAGS}")
string(REPLACE "\"" "\\\"" SHMB_BUILD_FLAGS "${SHMB_BUILD_FLAGS}")
string(STRIP "${SHMB_BUILD_FLAGS}" SHMB_BUILD_FLAGS)
string(REGEX REPLACE "  +" " " SHMB_BUILD_FLAGS "${SHMB_BUILD_FLAGS}")
set(SHMB_BUILD_COMPILER "${COMPILER}")
set(SHMB_BUILD_TYPE "${BUILD_TYPE}")
configure_file("${IN}" "${OUT}" @ONLY)
