/* Frame evidence: what the names on a stack say about the bytes it
 * allocated or filled (docs/design/classification.md, "What the stacks
 * say"). The rules are a table, frame_rules.def, that a contributor
 * extends with a row and a test.
 *
 *   struct vt_frame_evidence *fe = vt_frame_evidence_new(model);
 *   struct vt_frame_hint h = vt_frame_hint(fe, proc, stack_id);
 *   if (h.category != VT_CAT_COUNT) ... h.rule names the frame that said so
 *   vt_frame_evidence_free(fe);
 *
 * A model without symbols (one fed by hand, a trace without stacks) gives
 * no hints. Answers are cached per stack: the classifier asks only for the
 * allocations its behavioural rules leave ambiguous. */
#ifndef VT_FRAME_EVIDENCE_H
#define VT_FRAME_EVIDENCE_H

#include <stdint.h>

#include "model.h"

enum vt_frame_strength {
	VT_FRAME_NONE = 0,
	VT_FRAME_MECHANISM = 1, /* how the bytes got there (a conversion any caller uses) */
	VT_FRAME_CONTEXT = 2,   /* what the caller wanted them for */
};

struct vt_frame_hint {
	uint8_t category; /* enum vt_category; VT_CAT_COUNT: the stack says nothing */
	uint8_t strength; /* enum vt_frame_strength */
	const char *rule; /* the matching row's text (static), NULL without one */
};

struct vt_frame_evidence;

struct vt_frame_evidence *vt_frame_evidence_new(const struct vt_model *m);
void vt_frame_evidence_free(struct vt_frame_evidence *fe);

/* The hint of one stack of process proc (stack id as in vt_alloc.stack_id
 * or vt_alloc_copies.h2d_stack_id; 0: none). */
struct vt_frame_hint vt_frame_hint(struct vt_frame_evidence *fe, uint32_t proc, uint32_t stack_id);

/* Whether that stack's hint is a CONTEXT rule of category (enum
 * vt_category): what the caller wanted the bytes for, not how they came. */
int vt_frame_context_is(struct vt_frame_evidence *fe, uint32_t proc, uint32_t stack_id,
                        int category);

/* Whether that stack was made by a training loop: a Python frame of
 * one (`fit`, `train_step`, `training_step`, `train_function`,
 * `apply_gradients`), or an optimizer's or the backward pass's CONTEXT
 * rule. A job whose allocator hides its gradients and slots in regions
 * (TensorFlow's BFC allocator) still allocates under them. */
int vt_frame_trains(struct vt_frame_evidence *fe, uint32_t proc, uint32_t stack_id);
/* The same test on n_py Python function names, for tests. */
int vt_frame_names_train(const char *const *py_funcs, unsigned n_py);

/* The table's verdict on names alone (what vt_frame_hint applies to each
 * frame, innermost first): n_py Python frames (function, file) and n_native
 * native function names. For tests and for the table's documentation. */
struct vt_frame_hint vt_frame_hint_of_names(const char *const *py_funcs,
                                            const char *const *py_files, unsigned n_py,
                                            const char *const *native, unsigned n_native);

#endif
