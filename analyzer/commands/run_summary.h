/* The short answer `vramtrace run` gives when the job ends (run_summary.c):
 * each device's peak, the findings' names, an out-of-memory if there was
 * one, and the command to type next. */
#ifndef VT_RUN_SUMMARY_H
#define VT_RUN_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

/* Traces with more events than this get no analysis at the end of the run
 * (the full model of a long trace takes seconds to minutes): the answer
 * then names `report --stream`. */
#define VT_RUN_SUMMARY_MAX_EVENTS 4000000u

/* One line on to, "vramtrace: peak GPU 0 1.77 GiB (44% of 4.00 GiB); flags:
 * whole_dataset_upload; next: vramtrace report DIR", for the trace in dir
 * holding events events. Nothing when there are none, or the trace cannot
 * be read (the run's own line says why). */
void vt_run_summary(const char *dir, uint64_t events, FILE *to);

#endif
