# Exports: a generated trace of a million events (gen_trace.c;
# VT_BENCH_EXPORT_EVENTS overrides) exported to HTML, Perfetto, folded and
# CSV: sizes and times, and the HTML page's load time in headless Chromium
# when one is installed.
add_executable(bench_export ${CMAKE_CURRENT_LIST_DIR}/bench_export.c
  ${CMAKE_CURRENT_LIST_DIR}/gen_trace.c)
target_include_directories(bench_export PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(bench_export PRIVATE vtanalysis)
target_compile_options(bench_export PRIVATE -O2)
if(COMMAND vt_add_bench)
  vt_add_bench(bench_export)
else()
  set_target_properties(bench_export PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
endif()
