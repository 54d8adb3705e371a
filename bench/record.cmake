# Recording cost (bench_record: pairs at a known stack depth, the
# unw_backtrace floor, heaptrack on malloc in the same run, threads and the
# locks the shim takes), log size on the simulated trainer (bench_logsize)
# and symbolization of 10 000 unique stacks (bench_symbolize).
if(TARGET vtsim_cuda)
  add_library(bench_lockcount SHARED bench_lockcount.c)
  target_link_libraries(bench_lockcount PRIVATE ${CMAKE_DL_LIBS})
  set_target_properties(bench_lockcount PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/lib)

  add_executable(bench_record bench_record.c)
  target_compile_options(bench_record PRIVATE -O2 -fno-optimize-sibling-calls -fno-omit-frame-pointer)
  target_compile_definitions(bench_record PRIVATE
    VT_BENCH_SHIM="$<TARGET_FILE:vramtrace>"
    VT_BENCH_LOCKCOUNT="$<TARGET_FILE:bench_lockcount>"
    VT_BENCH_SIMDRIVER_DIR="${VT_SIMDRIVER_DIR}")
  target_link_libraries(bench_record PRIVATE vtanalysis PkgConfig::LIBUNWIND ${CMAKE_DL_LIBS} Threads::Threads)
  add_dependencies(bench_record vramtrace vtsim_cuda bench_lockcount)
  vt_add_bench(bench_record)
endif()
