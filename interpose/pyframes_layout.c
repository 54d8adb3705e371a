/* CPython struct offsets, one row per minor version (see pyframes_layout.h;
 * tests/python/check_layout.sh re-derives each row from the headers). */
#include <stddef.h>

#include "pyframes_layout.h"

static const struct vt_py_layout layouts[] = {
	{
		.version = 0x0309, .walk = VT_PY_WALK_FRAMEOBJ,
		.lines = VT_PY_LINES_LASTI_BYTES, .entry = VT_PY_ENTRY_EVERY_FRAME,
		.owner_generator = 0xff, .owner_cstack = 0xff,
		.tstate_frame = 24, .frame_back = 24, .frame_code = 32, .frame_instr = 104,
		.code_filename = 104, .code_name = 112, .code_firstlineno = 40,
		.str_ascii_size = 48, .str_compact_size = 72, .str_utf8 = 56, .str_utf8_length = 48,
	},
	{
		.version = 0x030a, .walk = VT_PY_WALK_FRAMEOBJ,
		.lines = VT_PY_LINES_LASTI_UNITS, .entry = VT_PY_ENTRY_EVERY_FRAME,
		.owner_generator = 0xff, .owner_cstack = 0xff,
		.tstate_frame = 24, .frame_back = 24, .frame_code = 32, .frame_instr = 96,
		.code_filename = 104, .code_name = 112, .code_firstlineno = 40,
		.code_linetable = 120,
		.str_ascii_size = 48, .str_compact_size = 72, .str_utf8 = 56, .str_utf8_length = 48,
	},
	{
		.version = 0x030b, .walk = VT_PY_WALK_CFRAME,
		.lines = VT_PY_LINES_LOCATIONS, .entry = VT_PY_ENTRY_IS_ENTRY,
		.owner_generator = 1, .owner_cstack = 0xff,
		.tstate_frame = 56, .cframe_current = 8,
		.frame_back = 48, .frame_code = 32, .frame_instr = 56,
		.frame_owner = 69, .frame_is_entry = 68,
		.code_filename = 112, .code_name = 120, .code_firstlineno = 72,
		.code_linetable = 136, .code_adaptive = 184, .code_firsttraceable = 168,
		.str_ascii_size = 48, .str_compact_size = 72, .str_utf8 = 56, .str_utf8_length = 48,
	},
	{
		.version = 0x030c, .walk = VT_PY_WALK_CFRAME,
		.lines = VT_PY_LINES_LOCATIONS, .entry = VT_PY_ENTRY_CSTACK,
		.owner_generator = 1, .owner_cstack = 3,
		.tstate_frame = 56, .cframe_current = 0,
		.frame_back = 8, .frame_code = 0, .frame_instr = 56, .frame_owner = 70,
		.code_filename = 112, .code_name = 120, .code_firstlineno = 68,
		.code_linetable = 136, .code_adaptive = 192, .code_firsttraceable = 176,
		.str_ascii_size = 40, .str_compact_size = 56, .str_utf8 = 48, .str_utf8_length = 40,
	},
	{
		.version = 0x030d, .walk = VT_PY_WALK_DIRECT,
		.lines = VT_PY_LINES_LOCATIONS, .entry = VT_PY_ENTRY_CSTACK,
		.owner_generator = 1, .owner_cstack = 3,
		.tstate_frame = 72,
		.frame_back = 8, .frame_code = 0, .frame_instr = 56, .frame_owner = 70,
		.code_filename = 112, .code_name = 120, .code_firstlineno = 68,
		.code_linetable = 136, .code_adaptive = 200, .code_firsttraceable = 184,
		.str_ascii_size = 40, .str_compact_size = 56, .str_utf8 = 48, .str_utf8_length = 40,
	},
};

const struct vt_py_layout *vt_py_layout_for(unsigned version)
{
	for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
		if (layouts[i].version == version)
			return &layouts[i];
	return NULL;
}
