# Analyzer throughput (issue 6): bench_analyzer generates a 10-million-event
# trace (gen_trace.c; VT_BENCH_ANALYZER_EVENTS overrides) and times load,
# replay, classification and the report. gen_trace is also a standalone tool.
add_executable(bench_analyzer ${CMAKE_CURRENT_LIST_DIR}/bench_analyzer.c
  ${CMAKE_CURRENT_LIST_DIR}/gen_trace.c)
target_include_directories(bench_analyzer PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(bench_analyzer PRIVATE vtanalysis)
target_compile_options(bench_analyzer PRIVATE -O2)
add_executable(gen_trace ${CMAKE_CURRENT_LIST_DIR}/gen_trace.c)
target_include_directories(gen_trace PRIVATE ${VT_INCLUDE})
target_compile_definitions(gen_trace PRIVATE VT_GEN_TRACE_MAIN)
if(COMMAND vt_add_bench)
  vt_add_bench(bench_analyzer)
else()
  set_target_properties(bench_analyzer PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  if(TARGET bench)
    add_dependencies(bench bench_analyzer)
  endif()
endif()
