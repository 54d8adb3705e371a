# Python frames bench (issue 8): `cmake --build build --target bench_pyframes_run`
set(_vt_pf ${CMAKE_SOURCE_DIR}/interpose/pyframes.c ${CMAKE_SOURCE_DIR}/interpose/pyframes_intern.c
  ${CMAKE_SOURCE_DIR}/interpose/pyframes_layout.c ${CMAKE_SOURCE_DIR}/interpose/pyframes_linetable.c
  ${CMAKE_SOURCE_DIR}/tests/python/fake_log.c)
add_library(vt_bench_pyframes MODULE ${CMAKE_CURRENT_LIST_DIR}/bench_pyframes.c ${_vt_pf})
add_executable(bench_pyframes ${CMAKE_CURRENT_LIST_DIR}/bench_pyframes.c ${_vt_pf})
foreach(t vt_bench_pyframes bench_pyframes)
  target_include_directories(${t} PRIVATE ${VT_INCLUDE} ${CMAKE_SOURCE_DIR}/interpose)
  target_link_libraries(${t} PRIVATE ${CMAKE_DL_LIBS} Threads::Threads)
  target_compile_options(${t} PRIVATE -O2)
endforeach()
target_compile_definitions(bench_pyframes PRIVATE VT_BENCH_MAIN)
add_custom_target(bench_pyframes_run
  COMMAND bench_pyframes ${CMAKE_CURRENT_LIST_DIR}/bench_pyframes.py
    $<TARGET_FILE:vt_bench_pyframes> ${VT_PYTHONS}
  DEPENDS bench_pyframes vt_bench_pyframes USES_TERMINAL)

# The same in a real traced job (needs the launcher and the simulated driver):
# `cmake --build build --target bench_pyframes_job`
if(TARGET vramtrace-cli AND TARGET vtsim_cuda AND VT_PYTHONS)
  list(GET VT_PYTHONS 0 _vt_bench_py)
  add_custom_target(bench_pyframes_job
    COMMAND ${CMAKE_COMMAND} -E env ${_vt_bench_py} ${CMAKE_CURRENT_LIST_DIR}/bench_pyframes_job.py
      $<TARGET_FILE:vramtrace-cli> ${VT_SIMDRIVER_DIR} ${VT_PYTHONS}
    DEPENDS vramtrace-cli vramtrace vtsim_cuda USES_TERMINAL)
endif()
