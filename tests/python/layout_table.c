/* Prints the shim's layout table row for a version (argv[1], e.g. 3.11) in
 * the format of layout_probe.c, only the keys that version uses. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "pyframes_layout.h"

#define P(key, value) printf("%s %ld\n", key, (long)(value))

int main(int argc, char **argv)
{
	unsigned major = 0, minor = 0;
	if (argc != 2 || sscanf(argv[1], "%u.%u", &major, &minor) != 2) {
		fprintf(stderr, "usage: layout_table MAJOR.MINOR\n");
		return 2;
	}
	const struct vt_py_layout *L = vt_py_layout_for(major << 8 | minor);
	if (!L) {
		fprintf(stderr, "layout_table: no layout for %s\n", argv[1]);
		return 1;
	}
	P("version", L->version);
	P("tstate_frame", L->tstate_frame);
	if (L->walk == VT_PY_WALK_CFRAME)
		P("cframe_current", L->cframe_current);
	P("frame_code", L->frame_code);
	P("frame_instr", L->frame_instr);
	if (L->walk == VT_PY_WALK_FRAMEOBJ)
		P("sizeof_lasti", 4);
	P("frame_back", L->frame_back);
	if (L->walk != VT_PY_WALK_FRAMEOBJ) {
		P("frame_owner", L->frame_owner);
		P("owner_generator", L->owner_generator);
		P("code_adaptive", L->code_adaptive);
		P("code_firsttraceable", L->code_firsttraceable);
	}
	if (L->entry == VT_PY_ENTRY_IS_ENTRY)
		P("frame_is_entry", L->frame_is_entry);
	if (L->entry == VT_PY_ENTRY_CSTACK)
		P("owner_cstack", L->owner_cstack);
	if (L->version >= 0x030a)
		P("code_linetable", L->code_linetable);
	P("code_filename", L->code_filename);
	P("code_name", L->code_name);
	P("code_firstlineno", L->code_firstlineno);
	P("str_ascii_size", L->str_ascii_size);
	P("str_compact_size", L->str_compact_size);
	P("str_utf8", L->str_utf8);
	P("str_utf8_length", L->str_utf8_length);
	if (L->version == 0x030d) {
		P("debug_current_frame_at", offsetof(struct vt_py_debug_offsets_313, thread_state[4]));
		P("debug_frame_owner_at", offsetof(struct vt_py_debug_offsets_313, interpreter_frame[5]));
		P("debug_co_code_adaptive_at", offsetof(struct vt_py_debug_offsets_313, code_object[9]));
		P("debug_ob_type_at", offsetof(struct vt_py_debug_offsets_313, pyobject[1]));
	}
	P("ob_type", VT_PY_OB_TYPE);
	P("str_length", VT_PY_STR_LENGTH);
	P("str_state", VT_PY_STR_STATE);
	P("bytes_size", VT_PY_BYTES_SIZE);
	P("bytes_data", VT_PY_BYTES_DATA);
	return 0;
}
