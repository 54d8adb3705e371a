/* Python frames in the analyzer: names from VT_REC_PYSTR records,
 * Python frames merged into native stacks in place of the interpreter's
 * evaluation frames, and the Python site of an event.
 *
 * What the shim records is described in interpose/pyframes.h: after a stack
 * record's native frames come 2 words per Python frame, innermost first,
 * holding PYSTR ids (per process), the line, the eval-loop invocation
 * ordinal and the index of the native _PyEval_EvalFrameDefault frame.
 *
 * PYSTR ids are per log, and a record may sit in another thread's chunk than
 * the stack that uses it (the reader gives no order between threads' metadata),
 * so load every log's strings first (vt_pystrs_load_trace), then globalize
 * stack words: a global id names one text across the whole trace, which is
 * what folding stacks across threads and processes, and diffs, need.
 *
 *   struct vt_pystrs *ps = vt_pystrs_new();
 *   vt_pystrs_load_trace(ps, &trace);
 *   vt_pystack_globalize(ps, log_index, rec_words, py_depth, words);  // fold on these
 *   n = vt_pystack_decode(ps, words, py_depth, frames);
 *   site = vt_pystack_site(frames, n);       // innermost user frame
 */
#ifndef VT_PYSTACK_H
#define VT_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "log_reader.h"
#include "trace_dir.h"

#define VT_PYSTACK_NIDX_UNKNOWN 0xffffu

/* ---- interned strings ---------------------------------------------------- */

struct vt_pystrs;

struct vt_pystrs *vt_pystrs_new(void);
void vt_pystrs_free(struct vt_pystrs *ps);

/* Take one record of log number log_index; ignores everything but
 * VT_REC_PYSTR. Returns 0, or -1 for a malformed one (one line in err). */
int vt_pystrs_add(struct vt_pystrs *ps, uint32_t log_index, const struct vt_record_view *rec,
		  char *err, size_t errlen);

/* Every PYSTR record of every log (log_index = index in t->logs). Returns the
 * number of malformed records (each warned about once on stderr). */
unsigned vt_pystrs_load_trace(struct vt_pystrs *ps, const struct vt_trace *t);

/* Global id (>= 1) of PYSTR id `id` of that log; equal texts get equal global
 * ids whatever log or thread wrote them. 0 if the log wrote no such id. */
uint32_t vt_pystrs_global(const struct vt_pystrs *ps, uint32_t log_index, uint32_t id);

/* Text of a global id; "?" for 0 or an unknown id. */
const char *vt_pystrs_text(const struct vt_pystrs *ps, uint32_t global_id);

/* Distinct texts. */
size_t vt_pystrs_count(const struct vt_pystrs *ps);

/* ---- frames -------------------------------------------------------------- */

struct vt_pyframe {
	const char *file;      /* co_filename, never NULL ("?" unknown) */
	const char *func;      /* co_name */
	uint32_t file_gid, func_gid;
	uint32_t line;         /* 0: no line */
	uint16_t eval_ord;     /* eval-loop invocation, 0 = innermost */
	uint16_t native_index; /* native frame it replaces, or NIDX_UNKNOWN */
};

/* Rewrite 2*n recorded words of log log_index so that file and function ids
 * are global ids (line, eval_ord and native_index unchanged). in == out is
 * allowed. Unknown ids become 0. */
void vt_pystack_globalize(const struct vt_pystrs *ps, uint32_t log_index, const uint64_t *in,
			  unsigned n, uint64_t *out);

/* Decode n frames of globalized words. Returns n. */
unsigned vt_pystack_decode(const struct vt_pystrs *ps, const uint64_t *words, unsigned n,
			   struct vt_pyframe *out);

/* ---- merging with native frames ----------------------------------------- */

/* What a native frame is, from its symbol (vt_pystack_native_role). */
enum vt_native_role {
	VT_NATIVE_PLAIN = 0,       /* anything else */
	VT_NATIVE_EVAL = 1,        /* _PyEval_EvalFrameDefault (incl. .cold) */
	VT_NATIVE_INTERPRETER = 2, /* other frames of libpython / python3.X */
};

/* Role from the frame's function name and module path (either may be NULL). */
uint8_t vt_pystack_native_role(const char *module_path, const char *function);

struct vt_merged_frame {
	uint8_t python;  /* 1: index into the Python frames; 0: native */
	uint32_t index;
};

enum vt_merge_flags {
	VT_MERGE_FULL = 0,            /* every native frame but the replaced ones */
	VT_MERGE_HIDE_INTERPRETER = 1,/* also drop VT_NATIVE_INTERPRETER frames */
};

/* One stack, innermost first: each Python frame goes where its eval-loop
 * frame was (that native frame is then left out); a frame whose
 * native_index is unknown is placed by eval_ord against the native frames
 * whose role is VT_NATIVE_EVAL (roles may be NULL), else at the outer end
 * (stack truncated by --stack-depth). Python frames stay in their recorded
 * order. Returns the number written (at most max). */
unsigned vt_pystack_merge(const struct vt_pyframe *py, unsigned npy, unsigned ndepth,
			  const uint8_t *roles, unsigned flags, struct vt_merged_frame *out,
			  unsigned max);

/* ---- sites --------------------------------------------------------------- */

/* 1 when the file belongs to installed packages or the standard library
 * (site-packages, dist-packages, lib/pythonX.Y, <frozen ...>), 0 for user
 * code. VRAMTRACE_PY_LIBRARY_PATHS adds substrings (':'-separated) that
 * mean "library"; VRAMTRACE_PY_USER_PATHS adds substrings that mean user
 * code even inside those folders (checked first). */
int vt_pystack_is_library_file(const char *file);

/* Index of the event's Python site: the innermost frame in user code, else
 * the innermost Python frame; -1 when there are no Python frames. */
int vt_pystack_site(const struct vt_pyframe *py, unsigned n);

/* "function (file:line)" into buf (the site format of the reports). */
int vt_pystack_format(const struct vt_pyframe *f, char *buf, size_t len);

/* The Python site of globalized words (a canonical stack's py_words),
 * formatted into buf. Returns the Python frame chosen (its native_index
 * into *native_index when not NULL), or -1 (buf untouched) when n is 0. */
int vt_pystack_site_text(const struct vt_pystrs *ps, const uint64_t *words, unsigned n, char *buf,
			 size_t len, unsigned *native_index);

/* One call for the reports: the Python site of a stack record's Python
 * words as recorded in log log_index (2 * py_depth words, raw PYSTR ids),
 * formatted into buf. Returns the index of the Python frame chosen, or -1
 * (buf untouched) when the stack has no Python frames. */
int vt_pystack_site_of_record(const struct vt_pystrs *ps, uint32_t log_index,
			      const uint64_t *py_words, unsigned py_depth, char *buf, size_t len);

#endif
