/* Findings a person can act on, from a classified model (the JSON and the
 * text call them "flags"):
 *   whole_dataset_upload       host-to-device copies filled long-lived memory
 *                              that is many times the per-step upload, or a
 *                              large share of the device, and acts as data
 *   prefetch_depth             how many batch buffers are alive at once
 *   replicated_across_devices  the same dataset held on several devices
 *   opaque_pool                an allocator region whose tensors are hidden
 *   growth_per_step            a site whose allocations of step after step
 *                              stay live (growth.h)
 * Each with the devices, bytes per device, copies, site, time, confidence
 * and advice that is true for the framework that made the trace
 * (recognised from its loaded modules). */
#ifndef VT_FINDINGS_H
#define VT_FINDINGS_H

#include "finding.h"
#include "model.h"

/* Needs vt_classify() first. */
void vt_findings_find(const struct vt_model *m, struct vt_findings *out);
void vt_findings_free(struct vt_findings *f);

#endif
