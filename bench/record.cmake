# Recording cost (bench_record: pairs at a known stack depth, the
# unw_backtrace floor, heaptrack on malloc in the same run, threads and the
# locks the shim takes), log size on the simulated trainer (bench_logsize)
# and symbolization of 10 000 unique stacks (bench_symbolize).
set(VT_BENCH_DIR ${CMAKE_CURRENT_LIST_DIR})
if(TARGET vtsim_cuda)
  add_library(bench_lockcount SHARED ${VT_BENCH_DIR}/bench_lockcount.c)
  target_link_libraries(bench_lockcount PRIVATE ${CMAKE_DL_LIBS})
  set_target_properties(bench_lockcount PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/lib)

  # a libcuda.so.1 that does nothing, in a directory of its own (null_driver.c)
  add_library(bench_null_driver SHARED ${VT_BENCH_DIR}/null_driver.c)
  set_target_properties(bench_null_driver PROPERTIES OUTPUT_NAME cuda SOVERSION 1
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/null_driver)

  add_executable(bench_record ${VT_BENCH_DIR}/bench_record.c)
  target_compile_options(bench_record PRIVATE -O2 -fno-optimize-sibling-calls)
  target_compile_definitions(bench_record PRIVATE
    VT_BENCH_SHIM="$<TARGET_FILE:vramtrace>"
    VT_BENCH_LOCKCOUNT="$<TARGET_FILE:bench_lockcount>"
    VT_BENCH_SIMDRIVER_DIR="${VT_SIMDRIVER_DIR}"
    VT_BENCH_NULLDRIVER_DIR="${CMAKE_CURRENT_BINARY_DIR}/null_driver")
  target_link_libraries(bench_record PRIVATE vtanalysis PkgConfig::LIBUNWIND ${CMAKE_DL_LIBS} Threads::Threads)
  add_dependencies(bench_record vramtrace vtsim_cuda bench_lockcount bench_null_driver)
  vt_add_bench(bench_record)

  if(TARGET vt-trainer)
    add_executable(bench_logsize ${VT_BENCH_DIR}/bench_logsize.c)
    target_compile_definitions(bench_logsize PRIVATE
      VT_BENCH_SHIM="$<TARGET_FILE:vramtrace>"
      VT_BENCH_TRAINER="$<TARGET_FILE:vt-trainer>"
      VT_BENCH_SIMDRIVER_DIR="${VT_SIMDRIVER_DIR}")
    target_link_libraries(bench_logsize PRIVATE vtanalysis)
    add_dependencies(bench_logsize vramtrace vtsim_cuda vt-trainer)
    vt_add_bench(bench_logsize)
  endif()
endif()

if(TARGET vtsim_cuda)
  add_executable(bench_symbolize ${VT_BENCH_DIR}/bench_symbolize.c)
  target_compile_options(bench_symbolize PRIVATE -O2 -fno-optimize-sibling-calls)
  target_compile_definitions(bench_symbolize PRIVATE
    VT_BENCH_SHIM="$<TARGET_FILE:vramtrace>"
    VT_BENCH_SIMDRIVER_DIR="${VT_SIMDRIVER_DIR}")
  target_link_libraries(bench_symbolize PRIVATE vtanalysis ${CMAKE_DL_LIBS})
  add_dependencies(bench_symbolize vramtrace vtsim_cuda)
  vt_add_bench(bench_symbolize)
endif()

# What `vramtrace top` following a job costs the job (bench_top: a job of
# millions of events a second on the null driver, alone and watched).
if(TARGET vtsim_cuda)
  add_executable(bench_top ${VT_BENCH_DIR}/bench_top.c)
  target_compile_definitions(bench_top PRIVATE
    VT_BENCH_SHIM="$<TARGET_FILE:vramtrace>"
    VT_BENCH_NULLDRIVER_DIR="${CMAKE_CURRENT_BINARY_DIR}/null_driver")
  target_link_libraries(bench_top PRIVATE vtanalysis ${CMAKE_DL_LIBS})
  add_dependencies(bench_top vramtrace bench_null_driver)
  vt_add_bench(bench_top)
endif()
