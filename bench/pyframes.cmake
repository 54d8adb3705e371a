# Python frames: bench_pyframes prints its rows into the bench
# table. It runs Python scripts, so it is built only when a supported CPython
# was found (tests/python sets VT_PYTHONS).
if(VT_PYTHONS)
  set(_vt_pf ${CMAKE_SOURCE_DIR}/interpose/pyframes.c ${CMAKE_SOURCE_DIR}/interpose/pyframes_intern.c
    ${CMAKE_SOURCE_DIR}/interpose/pyframes_layout.c ${CMAKE_SOURCE_DIR}/interpose/pyframes_linetable.c
    ${CMAKE_SOURCE_DIR}/interpose/real_dl.c
    ${CMAKE_SOURCE_DIR}/tests/python/fake_log.c)
  add_library(vt_bench_pyframes MODULE ${CMAKE_CURRENT_LIST_DIR}/bench_pyframes.c ${_vt_pf})
  add_executable(bench_pyframes ${CMAKE_CURRENT_LIST_DIR}/bench_pyframes.c ${_vt_pf})
  foreach(t vt_bench_pyframes bench_pyframes)
    target_include_directories(${t} PRIVATE ${VT_INCLUDE} ${CMAKE_SOURCE_DIR}/interpose ${CMAKE_SOURCE_DIR}/logwriter)
    target_link_libraries(${t} PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
    target_compile_options(${t} PRIVATE -O2)
  endforeach()
  # this machine's python3 first, then every 3.12+ (perf trampolines)
  set(_vt_bench_pys)
  foreach(py ${VT_PYTHONS})
    execute_process(COMMAND ${py} -c "import sys; print(int(sys.version_info >= (3, 12)))"
      OUTPUT_VARIABLE new OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT _vt_bench_pys OR new)
      list(APPEND _vt_bench_pys "\"${py}\"")
    endif()
  endforeach()
  string(REPLACE ";" "," _vt_bench_pys "${_vt_bench_pys}")
  target_compile_definitions(bench_pyframes PRIVATE VT_BENCH_MAIN
    VT_BENCH_PYTHONS=${_vt_bench_pys}
    VT_BENCH_PY_SCRIPT="${CMAKE_CURRENT_LIST_DIR}/bench_pyframes.py"
    VT_BENCH_PY_MODULE="$<TARGET_FILE:vt_bench_pyframes>")
  add_dependencies(bench_pyframes vt_bench_pyframes)
  target_compile_definitions(bench_pyframes PRIVATE
    VT_BENCH_JOB_SCRIPT="${CMAKE_CURRENT_LIST_DIR}/bench_pyframes_job.py"
    VT_BENCH_VRAMTRACE="$<TARGET_FILE:vramtrace-cli>"
    VT_BENCH_SIMDRIVER_DIR="${VT_SIMDRIVER_DIR}")
  add_dependencies(bench_pyframes vramtrace-cli vramtrace vtsim_cuda)
  if(COMMAND vt_add_bench)
    vt_add_bench(bench_pyframes)
  endif()
endif()
