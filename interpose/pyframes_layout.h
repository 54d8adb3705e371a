/* Per-version CPython struct offsets for reading a thread's frame chain
 * without the interpreter's headers (the shim builds without Python).
 *
 * Every number here was taken with offsetof() from the interpreter's own
 * (internal) headers; tests/python/check_layout.sh recompiles that probe
 * against every Python found on the build machine and fails on a mismatch.
 * Offsets are for release (non-debug, GIL) builds on 64-bit Linux; a debug
 * or free-threaded interpreter is detected at run time and left alone.
 */
#ifndef VT_PYFRAMES_LAYOUT_H
#define VT_PYFRAMES_LAYOUT_H

#include <stdint.h>

/* How the thread's innermost frame is reached and what a frame is. */
enum vt_py_walk {
	VT_PY_WALK_FRAMEOBJ = 0, /* 3.9, 3.10: tstate->frame, PyFrameObject */
	VT_PY_WALK_CFRAME = 1,   /* 3.11, 3.12: tstate->cframe->current_frame,
	                            _PyInterpreterFrame */
	VT_PY_WALK_DIRECT = 2,   /* 3.13: tstate->current_frame */
};

/* How a frame's instruction position becomes a line number. */
enum vt_py_lines {
	VT_PY_LINES_LASTI_BYTES = 0, /* 3.9: PyCode_Addr2Line(co, f_lasti) */
	VT_PY_LINES_LASTI_UNITS = 1, /* 3.10: PyCode_Addr2Line(co, f_lasti*2) */
	VT_PY_LINES_LOCATIONS = 2,   /* 3.11+: decode co_linetable ourselves
	                                (pyframes_linetable.c) */
};

/* Where one C-level invocation of the eval loop ends, walking outward. */
enum vt_py_entry {
	VT_PY_ENTRY_EVERY_FRAME = 0, /* <= 3.10: one invocation per frame */
	VT_PY_ENTRY_IS_ENTRY = 1,    /* 3.11: frame->is_entry marks the first
	                                frame of an invocation */
	VT_PY_ENTRY_CSTACK = 2,      /* 3.12+: a shim frame owned by the C stack
	                                sits below each invocation's frames */
};

struct vt_py_layout {
	uint16_t version;           /* 0x0309 ... 0x030d */
	uint8_t walk;               /* vt_py_walk */
	uint8_t lines;              /* vt_py_lines */
	uint8_t entry;              /* vt_py_entry */
	uint8_t owner_generator;    /* FRAME_OWNED_BY_GENERATOR (3.11+) */
	uint8_t owner_cstack;       /* FRAME_OWNED_BY_CSTACK (3.12+), else 0xff */
	uint16_t tstate_frame;      /* tstate->frame / ->cframe / ->current_frame */
	uint16_t cframe_current;    /* _PyCFrame.current_frame (CFRAME walk) */
	uint16_t frame_back;        /* f_back / previous */
	uint16_t frame_code;        /* f_code / f_executable */
	uint16_t frame_instr;       /* int f_lasti, or prev_instr / instr_ptr */
	uint16_t frame_owner;       /* uint8 owner (3.11+) */
	uint16_t frame_is_entry;    /* bool is_entry (3.11) */
	uint16_t code_filename;
	uint16_t code_name;
	uint16_t code_firstlineno;  /* int */
	uint16_t code_linetable;    /* PyBytesObject * (3.11+) */
	uint16_t code_adaptive;     /* co_code_adaptive: first code unit (3.11+) */
	uint16_t code_firsttraceable; /* int _co_firsttraceable (3.11+) */
	uint16_t str_ascii_size;    /* sizeof(PyASCIIObject): ASCII text follows */
	uint16_t str_compact_size;  /* sizeof(PyCompactUnicodeObject) */
	uint16_t str_utf8;          /* PyCompactUnicodeObject.utf8 (char *) */
	uint16_t str_utf8_length;   /* PyCompactUnicodeObject.utf8_length */
};

/* Offsets the versions share. */
#define VT_PY_OB_TYPE 8          /* PyObject.ob_type */
#define VT_PY_STR_LENGTH 16      /* PyASCIIObject.length (code points) */
#define VT_PY_STR_STATE 32       /* PyASCIIObject.state bit field */
#define VT_PY_STR_KIND(state) (((state) >> 2) & 7u)
#define VT_PY_STR_COMPACT(state) (((state) >> 5) & 1u)
#define VT_PY_STR_ASCII(state) (((state) >> 6) & 1u)
#define VT_PY_BYTES_SIZE 16      /* PyBytesObject.ob_size */
#define VT_PY_BYTES_DATA 32      /* PyBytesObject.ob_sval */

/* The head of 3.13's _Py_DebugOffsets (the first member of _PyRuntime), as
 * far as pyframes.c compares it with the table (layout_probe.c checks these
 * positions against the real header). */
struct vt_py_debug_offsets_313 {
	char cookie[8];   /* "xdebugpy" */
	uint64_t version; /* PY_VERSION_HEX */
	uint64_t free_threaded;
	uint64_t runtime_state[3];
	uint64_t interpreter_state[13];
	uint64_t thread_state[9];      /* size, prev, next, interp, current_frame, ... */
	uint64_t interpreter_frame[6]; /* size, previous, executable, instr_ptr, localsplus, owner */
	uint64_t code_object[10];      /* size, filename, name, qualname, linetable,
	                                  firstlineno, argcount, localsplusnames,
	                                  localspluskinds, co_code_adaptive */
	uint64_t pyobject[2];          /* size, ob_type */
};
_Static_assert(sizeof(struct vt_py_debug_offsets_313) == 8 * (1 + 1 + 1 + 3 + 13 + 9 + 6 + 10 + 2),
               "3.13 debug offsets head");

/* The layout for a major.minor version (0x030b = 3.11), or NULL. */
const struct vt_py_layout *vt_py_layout_for(unsigned version);

#endif
