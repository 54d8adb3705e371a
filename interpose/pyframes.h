/* Python frames of the calling thread, for stack records.
 *
 * When the traced process hosts CPython (3.9 to 3.13, found at run time with
 * dlsym: the shim never links libpython), every stack record also carries the
 * Python frames of the thread that made the CUDA call, whether or not that
 * thread holds the GIL (ctypes, PyTorch and TensorFlow release it around the
 * driver call). The thread state comes from PyGILState_GetThisThreadState()
 * (a TLS read, valid without the GIL); the frame chain is read with
 * per-version struct offsets (pyframes_layout.c). Reading our OWN thread's
 * chain is safe: the thread is blocked in the hook, so its frames cannot be
 * popped, and code objects and their strings are immutable.
 *
 * Words per Python frame (struct vt_stack_rec, after the native frames):
 *
 *   word 0:  63            32 31             0
 *           +----------------+----------------+
 *           | file_id        | func_id        |   ids of VT_REC_PYSTR records
 *           +----------------+----------------+   (co_filename, co_name)
 *   word 1:  63            32 31      16 15    0
 *           +----------------+----------+------+
 *           | line           | eval_ord | nidx |
 *           +----------------+----------+------+
 *
 *   line      1-based source line of the instruction the frame is executing
 *             (the call), exactly what traceback.extract_stack() shows; 0 when
 *             Python itself has no line for it.
 *   eval_ord  which C-level invocation of the interpreter's evaluation loop
 *             runs this frame, counted from the innermost (0). Up to 3.10 each
 *             Python frame has its own; from 3.11 one invocation runs several
 *             frames (Python-to-Python calls are inlined), delimited by the
 *             entry frame (3.11 is_entry, 3.12+ the C-stack shim frame).
 *   nidx      index into the record's native frames[] of that invocation's
 *             _PyEval_EvalFrameDefault frame (the frame the Python frames
 *             replace when the analyzer merges), or VT_PY_NIDX_UNKNOWN when it
 *             is not among the captured native frames (stack truncated by
 *             --stack-depth, or the call came from a cold-split part of the
 *             eval loop). The analyzer then falls back to eval_ord against the
 *             native frames it names _PyEval_EvalFrameDefault, and finally
 *             places the frame at the outermost end.
 *
 * Ids are process-wide (one lock-free intern table per process, memory from
 * mmap): each distinct string is written once, by the first thread that needs
 * it, as a VT_REC_PYSTR record committed BEFORE the id is published to other
 * threads, so any stack record that uses an id is written after the string
 * record. Two threads racing on the same new string may each write a record
 * (two ids, same text): a reader must key names by text, not id. Id 0 means
 * "no name" (unreadable string). After fork() the child starts a fresh table
 * (its log is a new file).
 *
 * Switch: VRAMTRACE_PYTHON=0 turns Python frames off.
 */
#ifndef VT_PYFRAMES_H
#define VT_PYFRAMES_H

#include <stdint.h>

#define VT_PY_NIDX_UNKNOWN 0xffffu
#define VT_PY_MAX_FRAMES 256u /* Python frames per stack: the innermost kept */
#define VT_PY_WORD0(file_id, func_id) (((uint64_t)(file_id) << 32) | (uint32_t)(func_id))
#define VT_PY_WORD1(line, ord, nidx) \
	(((uint64_t)(line) << 32) | ((uint64_t)((ord) & 0xffffu) << 16) | ((nidx) & 0xffffu))
#define VT_PY_FILE_ID(w0) ((uint32_t)((w0) >> 32))
#define VT_PY_FUNC_ID(w0) ((uint32_t)(w0))
#define VT_PY_LINE(w1) ((uint32_t)((w1) >> 32))
#define VT_PY_EVAL_ORD(w1) ((uint32_t)(((w1) >> 16) & 0xffffu))
#define VT_PY_NIDX(w1) ((uint32_t)((w1) & 0xffffu))

/* Fills 2 words per Python frame of the calling thread, innermost first, at
 * most max_frames frames; interns names (writing VT_REC_PYSTR records through
 * the log writer). Returns the number of frames (0: no CPython in the process,
 * switched off, unsupported version, thread without a Python thread state).
 * No malloc, no lock, no stdio. nidx is VT_PY_NIDX_UNKNOWN until bound. */
unsigned vt_py_capture(uint64_t *words, unsigned max_frames);

/* Sets nidx of each of the n frames in words from the captured native return
 * addresses ips[0..depth) (innermost first, already minus one, after the
 * shim's own frames were dropped): the k-th ip inside _PyEval_EvalFrameDefault
 * is the frame of eval_ord k. */
void vt_py_bind_native(uint64_t *words, unsigned n, const uint64_t *ips, unsigned depth);

/* Python frames are being captured in this process (initialises on first
 * call). 0 before the first capture found CPython. */
int vt_py_active(void);

/* Called after a dlopen: a process that had no CPython at first capture looks
 * again (an embedding application may load libpython late). */
void vt_py_rescan(void);

/* Human-readable state for diagnostics ("python 3.11 frames on", "no CPython
 * in this process", "off (VRAMTRACE_PYTHON=0)", ...). Static string. */
const char *vt_py_describe(void);

#endif
