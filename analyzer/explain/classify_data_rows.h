/* Data made on the device from an uploaded dataset: a cast, a normalised,
 * padded or cropped copy of it (airbench's loader), a graph's normalised
 * adjacency. Nothing copies them from the host, so the upload rules miss
 * them, and each one has a sibling of its size (the cast, then the copy
 * cropped each epoch) that the size rules read as a gradient or an
 * optimizer slot. What ties them to the data is their shape: a tensor
 * derived from N samples holds N rows, so its bytes and the uploaded
 * array's share the odd part of N, which a weight's bytes (products of
 * layer widths, mostly powers of two and small factors) do not. */
#ifndef VT_CLASSIFY_DATA_ROWS_H
#define VT_CLASSIFY_DATA_ROWS_H

#include "classify_ctx.h"

/* After the rest of device dev's rules: of the long-lived tensors ll[0..n),
 * the uploads right after a confident dataset array through its call path
 * (call_path.h) that a size or an upload's pattern read as weights, and
 * those made on the device after such an upload whose size rule (a twin,
 * a slot, made early) is weaker than sharing the data's rows, become
 * dataset. */
void vt_cls_data_rows(struct ctx *c, int dev, const uint32_t *ll, uint32_t n);

/* Whether long-lived upload i, on the device being classified, is data a
 * full-batch job computes over every step: a tensor made in most steps
 * holds all of its rows (the odd part of its bytes, DATA_ROWS_ODD_MIN at
 * least), and the host sent it before any of the model's weights (a GCN
 * over every node of its graph: x uploaded, then the model; each step's
 * hidden states are the nodes' rows). A frozen table the model's loader
 * sends (a LoRA base's token embedding beside logits of its vocabulary)
 * comes with the model, not before it. */
int vt_cls_rows_every_step(struct ctx *c, uint32_t i);

/* The odd part of the greatest common divisor of a and b (of a when b is
 * 0; 0 when both are): the rows two arrays of N rows share, less the
 * powers of two that any two aligned sizes share. */
uint64_t vt_shared_odd_rows(uint64_t a, uint64_t b);

#endif
