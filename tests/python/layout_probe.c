/* Prints, from a Python's own headers, every offset the shim's layout table
 * (interpose/pyframes_layout.c) hard-codes, as "key value" lines that
 * layout_table prints from the table. Compiled by check_layout.sh against
 * each interpreter found, with its internal headers. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030b0000
#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#if PY_VERSION_HEX >= 0x030d0000
#include "internal/pycore_runtime.h"
#endif
#else
#include <frameobject.h>
#endif

#define P(key, value) printf("%s %ld\n", key, (long)(value))

int main(void)
{
	P("version", (PY_MAJOR_VERSION << 8) | PY_MINOR_VERSION);
#if PY_VERSION_HEX >= 0x030d0000
	P("tstate_frame", offsetof(PyThreadState, current_frame));
	P("frame_code", offsetof(_PyInterpreterFrame, f_executable));
	P("frame_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#elif PY_VERSION_HEX >= 0x030b0000
	P("tstate_frame", offsetof(PyThreadState, cframe));
	P("cframe_current", offsetof(_PyCFrame, current_frame));
	P("frame_code", offsetof(_PyInterpreterFrame, f_code));
	P("frame_instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
	P("tstate_frame", offsetof(PyThreadState, frame));
	P("frame_code", offsetof(PyFrameObject, f_code));
	P("frame_instr", offsetof(PyFrameObject, f_lasti));
	P("sizeof_lasti", sizeof(((PyFrameObject *)0)->f_lasti));
#endif
#if PY_VERSION_HEX >= 0x030b0000
	P("frame_back", offsetof(_PyInterpreterFrame, previous));
	P("frame_owner", offsetof(_PyInterpreterFrame, owner));
	P("owner_generator", FRAME_OWNED_BY_GENERATOR);
	P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
	P("code_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
#else
	P("frame_back", offsetof(PyFrameObject, f_back));
#endif
#if PY_VERSION_HEX >= 0x030b0000 && PY_VERSION_HEX < 0x030c0000
	P("frame_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#endif
#if PY_VERSION_HEX >= 0x030c0000
	P("owner_cstack", FRAME_OWNED_BY_CSTACK);
#endif
#if PY_VERSION_HEX >= 0x030a0000
	P("code_linetable", offsetof(PyCodeObject, co_linetable));
#endif
	P("code_filename", offsetof(PyCodeObject, co_filename));
	P("code_name", offsetof(PyCodeObject, co_name));
	P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
	P("str_ascii_size", sizeof(PyASCIIObject));
	P("str_compact_size", sizeof(PyCompactUnicodeObject));
	P("str_utf8", offsetof(PyCompactUnicodeObject, utf8));
	P("str_utf8_length", offsetof(PyCompactUnicodeObject, utf8_length));
#if PY_VERSION_HEX >= 0x030d0000 && PY_VERSION_HEX < 0x030e0000
	/* where pyframes.c reads 3.13's _Py_DebugOffsets */
	P("debug_current_frame_at", offsetof(_Py_DebugOffsets, thread_state.current_frame));
	P("debug_frame_owner_at", offsetof(_Py_DebugOffsets, interpreter_frame.owner));
	P("debug_co_code_adaptive_at", offsetof(_Py_DebugOffsets, code_object.co_code_adaptive));
	P("debug_ob_type_at", offsetof(_Py_DebugOffsets, pyobject.ob_type));
#endif
	/* shared by every version (pyframes_layout.h) */
	P("ob_type", offsetof(PyObject, ob_type));
	P("str_length", offsetof(PyASCIIObject, length));
	P("str_state", offsetof(PyASCIIObject, state));
	P("bytes_size", offsetof(PyVarObject, ob_size));
	P("bytes_data", offsetof(PyBytesObject, ob_sval));
	return 0;
}
