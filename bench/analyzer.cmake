# Analyzer throughput: bench_analyzer generates a trace
# (gen_trace.c) and times load, replay, classification and the report, per
# wall-clock and per CPU second, with peak RSS and the ratio to `cat` of the
# logs. 10 million events by default for the full model, so `make bench`
# stays short (VT_BENCH_ANALYZER_EVENTS=100000000 or --events N for the
# 100 million case: 2.6 GiB of packed logs in /tmp, 4.2 GiB of RSS, 0.5-1
# min); the streaming model also runs on 100 million events of its own
# (VT_BENCH_STREAM_EVENTS). It also prints the floor: the same logs only read
# and decoded.
# gen_trace is also a standalone tool.
add_executable(bench_analyzer ${CMAKE_CURRENT_LIST_DIR}/bench_analyzer.c
  ${CMAKE_CURRENT_LIST_DIR}/gen_trace.c)
target_include_directories(bench_analyzer PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(bench_analyzer PRIVATE vtanalysis)
target_compile_options(bench_analyzer PRIVATE -O2)
vt_analyzer_lto(bench_analyzer) # as the vramtrace command is linked
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
