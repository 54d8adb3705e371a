/* Tensors made to take another's place: `torch.cat([weight, new_rows])`
 * growing an embedding as new ids come, a resized embedding (transformers'
 * `_get_resized_embeddings`), a buffer reallocated larger. The new tensor
 * is made on the device during training, no copy shows (the concatenation
 * is a kernel), nothing per step mirrors it and no upload fills it, so the
 * size and twin rules leave it unknown; the tensor it replaced, freed right
 * after it was made, says whose it is. */
#ifndef VT_CLASSIFY_SUCCESSORS_H
#define VT_CLASSIFY_SUCCESSORS_H

#include "classify_ctx.h"

/* After the rest of device dev's long-lived rules: each tensor they left
 * unknown that replaced a weight or optimizer slot (or a tensor that
 * replaced one) takes its category. */
void vt_cls_successors(struct ctx *c, int dev);

#endif
